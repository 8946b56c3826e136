import type { Transporter } from "nodemailer";
import type { Config } from "../config/index.ts";
import { clientPerConfig, onFirstUse } from "../on-first-use.ts";
import { SendFailure, shortReason } from "./failure.ts";

const nodemailer = onFirstUse(async () => (await import("nodemailer")).default);

export function emailConfigured(config: Config): boolean {
  return Boolean(config.SMTP_URL && config.SMTP_FROM);
}

const transportFor = clientPerConfig(async (config: Config): Promise<Transporter> => {
  if (!emailConfigured(config)) throw new SendFailure("permanent", "email is not configured on this server (SMTP_URL, SMTP_FROM)");
  return (await nodemailer.load()).createTransport(config.SMTP_URL!);
});

/**
 * Sends a plain-text email over SMTP_URL. `messageId` is stable per message (the delivery key),
 * so a receiving system that sees it twice can tell. A 5xx reply (no such mailbox) is permanent.
 */
export async function sendEmail(config: Config, to: string, mail: { subject: string; text: string; messageId: string }): Promise<string> {
  try {
    const info = await (await transportFor(config)).sendMail({ from: config.SMTP_FROM, to, subject: mail.subject, text: mail.text, messageId: mail.messageId });
    return String(info.messageId ?? mail.messageId);
  } catch (error) {
    if (error instanceof SendFailure) throw error;
    const e = error as { responseCode?: number; response?: string };
    if (typeof e.responseCode === "number" && e.responseCode >= 500) throw new SendFailure("permanent", shortReason(e.response ?? `SMTP ${e.responseCode}`));
    throw new SendFailure("retry", typeof e.responseCode === "number" ? `SMTP ${e.responseCode}` : "the SMTP server could not be reached");
  }
}
