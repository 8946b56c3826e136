import type { AddressInfo } from "node:net";
import { SMTPServer } from "smtp-server";

/**
 * A local SMTP server (smtp-server) for SMTP_URL: it accepts mail as a mail server does,
 * records each message (envelope and raw text), and refuses recipients in `rejected` with 550.
 */
export interface ReceivedMail {
  from: string;
  to: string[];
  raw: string;
  /** Decoded (RFC 2047 words, quoted-printable or base64 body). */
  subject: string;
  text: string;
  messageId: string | null;
}

export interface FakeSmtp {
  url: string;
  mails: ReceivedMail[];
  mailsTo(address: string): ReceivedMail[];
  rejected: Set<string>;
  close(): Promise<void>;
}

export async function startFakeSmtp(): Promise<FakeSmtp> {
  const mails: ReceivedMail[] = [];
  const rejected = new Set<string>();
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS"],
    logger: false,
    onRcptTo(address, _session, callback) {
      if (rejected.has(address.address.toLowerCase())) {
        const error = new Error("5.1.1 No such user here") as Error & { responseCode: number };
        error.responseCode = 550;
        return callback(error);
      }
      callback();
    },
    onData(stream, session, callback) {
      let raw = "";
      stream.on("data", (d: Buffer) => (raw += d.toString()));
      stream.on("end", () => {
        const [head = "", ...rest] = raw.split(/\r?\n\r?\n/);
        const unfolded = head.replace(/\r?\n[ \t]+/g, " ");
        const header = (name: string) => unfolded.match(new RegExp(`^${name}: (.*)$`, "mi"))?.[1]?.trim() ?? null;
        const body = rest.join("\n\n");
        const encoding = header("Content-Transfer-Encoding")?.toLowerCase();
        mails.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
          to: session.envelope.rcptTo.map((r) => r.address.toLowerCase()),
          raw,
          subject: decodeWords(header("Subject") ?? ""),
          text: encoding === "quoted-printable" ? decodeQuotedPrintable(body) : encoding === "base64" ? Buffer.from(body, "base64").toString("utf8") : body,
          messageId: header("Message-ID"),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const port = ((server as unknown as { server: { address(): AddressInfo } }).server.address()).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    mails,
    mailsTo: (address) => mails.filter((m) => m.to.includes(address.toLowerCase())),
    rejected,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** RFC 2047 encoded words (=?UTF-8?Q?…?= and =?UTF-8?B?…?=), as nodemailer writes a non-ASCII subject. */
function decodeWords(value: string): string {
  return value
    .replace(/\?=\s+=\?/g, "?==?")
    .replace(/=\?([^?]+)\?([QqBb])\?([^?]*)\?=/g, (_m, _charset: string, kind: string, text: string) =>
      kind.toUpperCase() === "B"
        ? Buffer.from(text, "base64").toString("utf8")
        : Buffer.from(text.replace(/_/g, " ").replace(/=([0-9A-F]{2})/gi, (_x, hex: string) => String.fromCharCode(parseInt(hex, 16))), "latin1").toString("utf8"),
    );
}

function decodeQuotedPrintable(body: string): string {
  const bytes = body.replace(/=\r?\n/g, "").replace(/=([0-9A-F]{2})/gi, (_x, hex: string) => String.fromCharCode(parseInt(hex, 16)));
  return Buffer.from(bytes, "latin1").toString("utf8");
}
