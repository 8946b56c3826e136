import crypto from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A local stand-in for Discord's REST API (DISCORD_API_URL = `<url>/api`, version 10): it
 * checks the bot token (`Authorization: Bot …`), opens DM channels (POST /users/@me/channels)
 * and records messages (POST /channels/:id/messages), keeping one message per enforced nonce as
 * Discord does. Refusals can be scripted (`refuseNext`: a 429 with Retry-After, or a JSON error).
 * It holds an Ed25519 key pair whose public key is the application's: `interaction` signs an
 * interaction the way Discord signs them (X-Signature-Ed25519 over timestamp + body).
 */
export interface DiscordMessage {
  channelId: string;
  content: string;
  nonce: string | null;
  at: number;
}

export interface FakeDiscord {
  url: string;
  apiUrl: string;
  botToken: string;
  /** Hex, as the developer portal shows it (DISCORD_PUBLIC_KEY). */
  publicKey: string;
  messages: DiscordMessage[];
  problems: string[];
  messagesTo(userId: string): DiscordMessage[];
  refuseNext(reply: { status: 429; retryAfter: number } | { status: number; code: number; message: string }): void;
  /** A `/connect <code>` application command by `userId`, signed (or signed by another key: a forgery). */
  interaction(body: Record<string, unknown>, options?: { timestamp?: number; forge?: boolean }): { body: string; headers: Record<string, string> };
  /** The signature headers for any raw body. */
  signatureHeaders(raw: string, options?: { timestamp?: number; forge?: boolean }): Record<string, string>;
  connectCommand(userId: string, code: string): Record<string, unknown>;
  close(): Promise<void>;
}

export const dmChannelOf = (userId: string) => `dm${userId}`;

export async function startFakeDiscord(): Promise<FakeDiscord> {
  const botToken = `bot.${crypto.randomBytes(12).toString("hex")}`;
  const keys = crypto.generateKeyPairSync("ed25519");
  const forger = crypto.generateKeyPairSync("ed25519");
  const publicKey = Buffer.from(keys.publicKey.export({ format: "jwk" }).x!, "base64url").toString("hex");
  const messages: DiscordMessage[] = [];
  const problems: string[] = [];
  const refusals: Parameters<FakeDiscord["refuseNext"]>[0][] = [];
  const byNonce = new Map<string, string>();
  let nextId = 1000;
  const server = http.createServer((req, res) => {
    let raw = "";
    req.on("data", (d: Buffer) => (raw += d.toString()));
    req.on("end", () => {
      const reply = (status: number, body: unknown, headers: Record<string, string> = {}) => {
        res.writeHead(status, { "content-type": "application/json", ...headers });
        res.end(JSON.stringify(body));
      };
      if (req.headers.authorization !== `Bot ${botToken}`) return reply(401, { message: "401: Unauthorized", code: 0 });
      let body: Record<string, any> = {};
      try {
        body = raw ? JSON.parse(raw) : {};
      } catch {
        return reply(400, { message: "Invalid JSON", code: 50109 });
      }
      if (req.method === "POST" && req.url === "/api/v10/users/@me/channels") {
        return reply(200, { id: dmChannelOf(String(body.recipient_id)), type: 1, recipients: [{ id: String(body.recipient_id) }] });
      }
      const post = req.method === "POST" ? req.url?.match(/^\/api\/v10\/channels\/([^/]+)\/messages$/) : null;
      if (post) {
        const message = { channelId: post[1]!, content: String(body.content), nonce: body.nonce ? String(body.nonce) : null, at: Date.now() };
        const refusal = refusals.shift();
        if (refusal?.status === 429) {
          messages.push(message);
          const after = (refusal as { retryAfter: number }).retryAfter;
          return reply(429, { message: "You are being rate limited.", retry_after: after, global: false }, { "retry-after": String(after), "x-ratelimit-scope": "user" });
        }
        if (refusal) return reply(refusal.status, { message: (refusal as { message: string }).message, code: (refusal as { code: number }).code });
        if (body.allowed_mentions?.parse?.length !== 0) problems.push("a message sent without allowed_mentions.parse = []");
        if (message.nonce && body.enforce_nonce && byNonce.has(message.nonce)) return reply(200, { id: byNonce.get(message.nonce), channel_id: message.channelId, content: message.content });
        const id = String(nextId++);
        if (message.nonce) byNonce.set(message.nonce, id);
        messages.push(message);
        return reply(200, { id, channel_id: message.channelId, content: message.content, nonce: message.nonce });
      }
      problems.push(`unexpected ${req.method} ${req.url}`);
      reply(404, { message: "404: Not Found", code: 0 });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const fake: FakeDiscord = {
    url,
    apiUrl: `${url}/api`,
    botToken,
    publicKey,
    messages,
    problems,
    messagesTo: (userId) => messages.filter((m) => m.channelId === dmChannelOf(userId)),
    refuseNext: (r) => void refusals.push(r),
    signatureHeaders(raw, options = {}) {
      const timestamp = String(options.timestamp ?? Math.floor(Date.now() / 1000));
      const signature = crypto.sign(null, Buffer.from(timestamp + raw), (options.forge ? forger : keys).privateKey).toString("hex");
      return { "content-type": "application/json", "x-signature-ed25519": signature, "x-signature-timestamp": timestamp };
    },
    interaction(body, options = {}) {
      const raw = JSON.stringify(body);
      return { body: raw, headers: fake.signatureHeaders(raw, options) };
    },
    connectCommand(userId, code) {
      return {
        id: String(nextId++),
        application_id: "app1",
        type: 2,
        token: "interaction-token",
        version: 1,
        data: { id: "cmd1", name: "connect", type: 1, options: [{ name: "code", type: 3, value: code }] },
        user: { id: userId, username: "person", discriminator: "0" },
        channel_id: dmChannelOf(userId),
      };
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return fake;
}
