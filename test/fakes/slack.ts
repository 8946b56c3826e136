import crypto from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A local stand-in for Slack's Web API (SLACK_API_URL = `<url>/api/`): oauth.v2.access trades
 * a code it issued for a bot token (checking the client id, secret and redirect_uri), and
 * chat.postMessage takes the bot token as a Bearer and records each message. Refusals can be
 * scripted (`refuseNext`: a 429 with Retry-After, or `{ ok: false, error }`). `slashCommand`
 * builds a slash-command delivery signed with the signing secret, as Slack signs it (v0 HMAC).
 * GET /oauth/v2/authorize is the consent page: it approves at once and redirects with a code.
 */
export interface SlackMessage {
  channel: string;
  text: string;
  token: string;
  at: number;
}

export interface FakeSlack {
  url: string;
  apiUrl: string;
  clientId: string;
  clientSecret: string;
  signingSecret: string;
  teamId: string;
  botToken: string;
  messages: SlackMessage[];
  problems: string[];
  messagesTo(userId: string): SlackMessage[];
  /** A code as Slack's consent page would hand the redirect_uri. */
  issueCode(redirectUri: string): string;
  refuseNext(reply: { status: 429; retryAfter: number } | { error: string }): void;
  /** The body and headers of a `/retasc <text>` command by `userId`; `timestamp` defaults to now. */
  slashCommand(userId: string, text: string, options?: { timestamp?: number; secret?: string; teamId?: string }): { body: string; headers: Record<string, string> };
  /** The signature headers for any raw body. */
  signatureHeaders(raw: string, options?: { timestamp?: number; secret?: string }): Record<string, string>;
  close(): Promise<void>;
}

export async function startFakeSlack(): Promise<FakeSlack> {
  const clientId = "1111.2222";
  const clientSecret = crypto.randomBytes(16).toString("hex");
  const signingSecret = crypto.randomBytes(16).toString("hex");
  const teamId = `T${crypto.randomBytes(4).toString("hex").toUpperCase()}`;
  const botToken = `xoxb-${crypto.randomBytes(12).toString("hex")}`;
  const codes = new Map<string, string>();
  const messages: SlackMessage[] = [];
  const problems: string[] = [];
  const refusals: ({ status: 429; retryAfter: number } | { error: string })[] = [];
  let url = "";
  const server = http.createServer((req, res) => {
    let raw = "";
    req.on("data", (d: Buffer) => (raw += d.toString()));
    req.on("end", () => {
      const reply = (body: unknown, status = 200, headers: Record<string, string> = {}) => {
        res.writeHead(status, { "content-type": "application/json", ...headers });
        res.end(JSON.stringify(body));
      };
      const form = Object.fromEntries(new URLSearchParams(raw));
      // The consent page: the admin approves at once, and is sent back with a code.
      if (req.method === "GET" && req.url?.startsWith("/oauth/v2/authorize?")) {
        const query = new URL(req.url, url).searchParams;
        const redirect = query.get("redirect_uri") ?? "";
        if (query.get("client_id") !== clientId || query.get("scope") !== "chat:write,commands" || !redirect) {
          problems.push(`a consent request with client_id ${query.get("client_id")}, scope ${query.get("scope")}`);
          return reply({ ok: false, error: "invalid_request" }, 400);
        }
        const code = fake.issueCode(redirect);
        res.writeHead(302, { location: `${redirect}?code=${code}&state=${encodeURIComponent(query.get("state") ?? "")}` });
        return res.end();
      }
      const bearer = req.headers.authorization?.replace(/^Bearer /, "") ?? form.token ?? "";
      if (req.method === "POST" && req.url === "/api/oauth.v2.access") {
        const basic = req.headers.authorization?.startsWith("Basic ") ? Buffer.from(req.headers.authorization.slice(6), "base64").toString() : `${form.client_id}:${form.client_secret}`;
        if (basic !== `${clientId}:${clientSecret}`) return reply({ ok: false, error: "invalid_client_id" });
        const redirect = codes.get(form.code ?? "");
        if (!redirect) return reply({ ok: false, error: "invalid_code" });
        if (form.redirect_uri !== redirect) return reply({ ok: false, error: "bad_redirect_uri" });
        codes.delete(form.code!);
        return reply({ ok: true, access_token: botToken, token_type: "bot", scope: "chat:write,commands", bot_user_id: "UBOT", app_id: "A1", team: { id: teamId, name: "Fake team" } });
      }
      if (req.method === "POST" && req.url === "/api/chat.postMessage") {
        if (bearer !== botToken) return reply({ ok: false, error: "invalid_auth" });
        const refusal = refusals.shift();
        const message = { channel: String(form.channel), text: String(form.text), token: bearer, at: Date.now() };
        messages.push(message);
        if (refusal && "status" in refusal) return reply({ ok: false, error: "ratelimited" }, 429, { "retry-after": String(refusal.retryAfter) });
        if (refusal) return reply({ ok: false, error: refusal.error });
        if (!message.channel.startsWith("U")) problems.push(`postMessage to ${message.channel}, not a user id`);
        return reply({ ok: true, channel: `D${message.channel.slice(1)}`, ts: `${Date.now() / 1000}`, message: { text: message.text } });
      }
      problems.push(`unexpected ${req.method} ${req.url}`);
      reply({ ok: false, error: "unknown_method" }, 404);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const fake: FakeSlack = {
    url,
    apiUrl: `${url}/api/`,
    clientId,
    clientSecret,
    signingSecret,
    teamId,
    botToken,
    messages,
    problems,
    messagesTo: (userId) => messages.filter((m) => m.channel === userId),
    issueCode(redirectUri) {
      const code = crypto.randomBytes(8).toString("hex");
      codes.set(code, redirectUri);
      return code;
    },
    refuseNext: (r) => void refusals.push(r),
    slashCommand(userId, text, options = {}) {
      const body = new URLSearchParams({ token: "deprecated", team_id: options.teamId ?? teamId, team_domain: "fake", channel_id: "C1", user_id: userId, user_name: "person", command: "/retasc", text, response_url: `${url}/respond`, trigger_id: "1.2.3" }).toString();
      return { body, headers: fake.signatureHeaders(body, options) };
    },
    signatureHeaders(raw, options = {}) {
      const timestamp = String(options.timestamp ?? Math.floor(Date.now() / 1000));
      const signature = `v0=${crypto.createHmac("sha256", options.secret ?? signingSecret).update(`v0:${timestamp}:${raw}`).digest("hex")}`;
      return { "content-type": "application/x-www-form-urlencoded", "x-slack-request-timestamp": timestamp, "x-slack-signature": signature };
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return fake;
}
