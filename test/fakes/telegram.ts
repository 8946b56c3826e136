import http from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A local stand-in for the Telegram Bot API, reached through TELEGRAM_API_URL: it answers
 * POST /bot<token>/<method> as Telegram does (JSON `{ ok, result }` or `{ ok: false,
 * error_code, description, parameters }`), refuses a wrong token (401) and records every call.
 * Tests script refusals (`refuseNext`), hold replies (`hold`) and build updates for the webhook.
 */
export interface TelegramCall {
  method: string;
  body: Record<string, any>;
  at: number;
}

export interface FakeTelegram {
  url: string;
  token: string;
  calls: TelegramCall[];
  /** sendMessage calls to `chatId`. */
  messagesTo(chatId: string | number): TelegramCall[];
  /** The next sendMessage calls get this reply instead (status, Telegram error body, Retry-After). */
  refuseNext(status: number, description: string, retryAfterSeconds?: number): void;
  /** Holds sendMessage replies (the message is recorded on arrival) until `release` is called. */
  hold(): { release(): void };
  /** What the app's webhook receives: an update with `text` from a private chat. */
  update(chatId: number, text: string, username?: string): Record<string, unknown>;
  close(): Promise<void>;
}

export async function startFakeTelegram(token = "123456:TEST-telegram-token"): Promise<FakeTelegram> {
  const calls: TelegramCall[] = [];
  const refusals: { status: number; description: string; retryAfter?: number }[] = [];
  let held: Promise<void> | null = null;
  let messageId = 1;
  let updateId = 1;
  const server = http.createServer((req, res) => {
    let raw = "";
    req.on("data", (d: Buffer) => (raw += d.toString()));
    req.on("end", async () => {
      const reply = (status: number, body: unknown, headers: Record<string, string> = {}) => {
        res.writeHead(status, { "content-type": "application/json", ...headers });
        res.end(JSON.stringify(body));
      };
      const match = req.url?.match(/^\/bot([^/]+)\/(\w+)$/);
      if (req.method !== "POST" || !match) return reply(404, { ok: false, error_code: 404, description: "Not Found" });
      if (match[1] !== token) return reply(401, { ok: false, error_code: 401, description: "Unauthorized" });
      let body: Record<string, any> = {};
      try {
        body = raw ? JSON.parse(raw) : {};
      } catch {
        return reply(400, { ok: false, error_code: 400, description: "Bad Request: can't parse JSON" });
      }
      const method = match[2]!;
      calls.push({ method, body, at: Date.now() });
      if (method !== "sendMessage") return reply(200, { ok: true, result: true });
      const refusal = refusals.shift();
      if (refusal) {
        const headers: Record<string, string> = refusal.retryAfter !== undefined ? { "retry-after": String(refusal.retryAfter) } : {};
        return reply(refusal.status, { ok: false, error_code: refusal.status, description: refusal.description, ...(refusal.retryAfter !== undefined ? { parameters: { retry_after: refusal.retryAfter } } : {}) }, headers);
      }
      if (held) await held;
      reply(200, { ok: true, result: { message_id: messageId++, date: Math.floor(Date.now() / 1000), chat: { id: Number(body.chat_id), type: "private" }, text: body.text } });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    token,
    calls,
    messagesTo: (chatId) => calls.filter((c) => c.method === "sendMessage" && String(c.body.chat_id) === String(chatId)),
    refuseNext(status, description, retryAfterSeconds) {
      refusals.push({ status, description, retryAfter: retryAfterSeconds });
    },
    hold() {
      let release!: () => void;
      held = new Promise<void>((resolve) => (release = resolve));
      return {
        release: () => {
          held = null;
          release();
        },
      };
    },
    update(chatId, text, username) {
      return {
        update_id: updateId++,
        message: { message_id: messageId++, date: Math.floor(Date.now() / 1000), chat: { id: chatId, type: "private" }, from: { id: chatId, is_bot: false, first_name: "T", ...(username ? { username } : {}) }, text },
      };
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
