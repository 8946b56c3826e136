import { z } from "zod";
import { base64Key, hostPortList, optionalPostgresUrl, optionalUrl, operatorTextFile, originList, positiveInt } from "./fields.ts";

/**
 * The one place that reads process.env (./node-env.ts only gives NODE_ENV its default before
 * anything loads). Everything else receives a Config.
 * Parsing fails with one line per bad variable, never a stack trace (see main.ts).
 */
export const configSchema = z.object({
  NODE_ENV: z.enum(["development", "production", "test"]).default("production"),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  /** Loopback unless asked: listening on every interface is an explicit HOST=0.0.0.0. */
  HOST: z.string().default("127.0.0.1"),
  DATABASE_URL: optionalPostgresUrl,
  /**
   * A direct connection to the same database when DATABASE_URL goes through a pooler in
   * transaction mode: LISTEN and migrations run here, and the pooled connections keep no session
   * state (db/client.ts). Unset: DATABASE_URL is direct and used for everything.
   */
  DATABASE_DIRECT_URL: optionalPostgresUrl,
  REDIS_URL: optionalUrl,
  RETASC_DATA_DIR: z.string().default(".retasc"),
  /** Where `react-router build` wrote the app (tests build into their own directory). */
  RETASC_BUILD_DIR: z.string().default("build"),
  RETASC_MASTER_KEY: base64Key.optional(),
  RETASC_WORKERS: z.enum(["inline", "off"]).optional(),
  PUBLIC_URL: optionalUrl,
  /**
   * The operator's terms of service and privacy notice, each a Markdown file served at /terms and
   * /privacy (absent when unset). Checked at boot, so a missing file fails the start, not a visitor.
   */
  RETASC_TERMS_FILE: operatorTextFile,
  RETASC_PRIVACY_FILE: operatorTextFile,
  /**
   * Browser-based MCP clients (the MCP Inspector in a web page) at these origins may call /mcp, the
   * OAuth discovery documents and the token, registration and revocation endpoints cross-origin
   * (server/http/cors.ts). Empty: none.
   */
  MCP_ALLOWED_ORIGINS: originList,
  BETTER_AUTH_SECRET: z.string().min(32, "must be at least 32 characters").optional(),
  /** Email + password sign-in; unset = on in the embedded mode, off in the server mode. */
  RETASC_EMAIL_PASSWORD: z
    .enum(["on", "off", "true", "false", "1", "0"], "must be on or off")
    .transform((v) => v === "on" || v === "true" || v === "1")
    .optional(),
  GITHUB_CLIENT_ID: z.string().optional(),
  GITHUB_CLIENT_SECRET: z.string().optional(),
  GOOGLE_CLIENT_ID: z.string().optional(),
  GOOGLE_CLIENT_SECRET: z.string().optional(),
  LEASE_TTL_SECONDS: positiveInt(1800),
  CLAIM_CAP_DEFAULT: positiveInt(7),
  /** Live session keys minted from one key, however deep (each carries its parent's claim cap). */
  SESSION_KEY_CAP: positiveInt(20),
  /** The longest a session key lives (mint_session_key's default and cap); never past its parent (decision 037). */
  SESSION_KEY_TTL_SECONDS: positiveInt(86_400),
  /** Exports the Dash imports at once in one process; a person imports one at a time (decision 037). */
  IMPORT_UPLOADS_AT_ONCE: positiveInt(2),
  /**
   * How often the process reading an import writes the run's heartbeat, whatever the tracker's
   * pace. A run whose heartbeat is six of these old lost its reader (the process died, taking the
   * credential): the next status read marks it FETCH_INTERRUPTED, freeing the org's import slot.
   */
  IMPORT_FETCH_HEARTBEAT_MS: positiveInt(10_000),
  /** Dash pages and large MCP list replies answered at once in one process, and waiting past those (decision 058). */
  HEAVY_READS_AT_ONCE: positiveInt(2),
  HEAVY_READS_QUEUED: positiveInt(64),
  /** Of those, what one caller may hold and wait for at once: a person, a key, a browser session (decision 061). */
  HEAVY_READS_PER_CALLER: positiveInt(8),
  // Background jobs (workers/). The intervals are configurable so tests can run in seconds.
  RECLAIM_SWEEP_MS: positiveInt(30_000),
  /**
   * Days the activity log keeps a row (by its created_at); older rows are deleted in batches, in
   * the order they were written, by sweep.activity-retention. 0 keeps every row. The default
   * covers analytics' longest period, 90 days (decision 077).
   */
  ACTIVITY_RETENTION_DAYS: z.coerce.number().int("must be a whole number").min(0, "must be at least 0 (0 keeps every row)").max(36_500, "must be at most 36500").default(90),
  SLA_SWEEP_MS: positiveInt(60_000),
  /** Fallback poll of the outbox; NOTIFY normally wakes the relay at once. */
  OUTBOX_POLL_MS: positiveInt(5_000),
  /** A relayed outbox row not completed after this long is handed to Redis again (lost Redis data). */
  OUTBOX_REDELIVER_MS: positiveInt(300_000),
  /** How long a worker holds a job before another may take it over (a crashed worker's jobs). */
  JOB_LOCK_MS: positiveInt(30_000),
  JOB_ATTEMPTS: positiveInt(10),
  /** First retry delay; each further retry doubles it. */
  JOB_BACKOFF_MS: positiveInt(1_000),
  JOB_CONCURRENCY: positiveInt(8),
  /** Redis key prefix of the BullMQ queues, so several deployments (or tests) can share a Redis. */
  BULLMQ_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,64}$/, "must be 1-64 letters, digits, _ . -")
    .default("retasc"),
  /** Largest /mcp request body: a 10 MiB file in base64 (save_attachment_file, 13,981,016 characters) and its JSON-RPC envelope fit. */
  MCP_MAX_BODY_BYTES: positiveInt(16_777_216),
  // Abuse limits (server/http/limits.ts, docs/decisions/005-rate-limits.md): per minute; far above what a fleet does.
  /** Requests per agent key on /mcp. */
  RATE_LIMIT_KEY_PER_MIN: positiveInt(60_000),
  /**
   * Each org's token bucket over /mcp, all its keys and tokens together, dispatch included
   * (server/http/org-limits.ts, decision 075): tokens a second (0 turns it off), and how many it saves up.
   */
  RATE_LIMIT_ORG_PER_SEC: z.coerce.number().int("must be a whole number").min(0, "must be 0 (off) or more").default(3_000),
  RATE_LIMIT_ORG_BURST: positiveInt(6_000),
  /** Requests per client address, every route. */
  RATE_LIMIT_IP_PER_MIN: positiveInt(300_000),
  /** Password sign-in and sign-up attempts per client address. */
  RATE_LIMIT_SIGNIN_PER_MIN: positiveInt(20),
  /** OAuth dynamic client registrations per client address per hour (MCP clients register once per install). */
  RATE_LIMIT_OAUTH_REGISTER_PER_HOUR: positiveInt(30),
  /** Mails a person's action sends (email confirmation codes, emailed invites) per recipient address per hour. */
  RATE_LIMIT_MAIL_PER_ADDRESS_PER_HOUR: positiveInt(5),
  /** The same mails per client address per hour, whoever they go to. */
  RATE_LIMIT_MAIL_PER_IP_PER_HOUR: positiveInt(30),
  /** Device-code look-ups and decisions on /device, per client address and per session each (decision 037). */
  RATE_LIMIT_DEVICE_PER_MIN: positiveInt(20),
  /** Approving a device login or an OAuth client needs a sign-in this recent (decision 037). */
  SIGN_IN_RECENT_SECONDS: positiveInt(900),
  /** Failed /mcp authentications per client address before it is refused outright. */
  RATE_LIMIT_AUTH_FAILURES_PER_MIN: positiveInt(60),
  /** Proxies in front of the app whose X-Forwarded-For is trusted for the client address (0: none). */
  TRUST_PROXY_HOPS: z.coerce.number().int().min(0).max(10).default(0),
  /** Largest request body outside /mcp. */
  REQUEST_MAX_BODY_BYTES: positiveInt(1_048_576),
  /** Time to receive a whole request, and its headers (slow clients are cut off). */
  HTTP_REQUEST_TIMEOUT_MS: positiveInt(30_000),
  HTTP_HEADERS_TIMEOUT_MS: positiveInt(10_000),
  /** Bearer token that opens /metrics and the readiness detail of /healthz; unset, /metrics answers 404 on PORT. */
  METRICS_TOKEN: z
    .string()
    .trim()
    .transform((v) => (v === "" ? undefined : v))
    .pipe(z.string().min(16, "must be at least 16 characters (try: openssl rand -hex 32)").optional())
    .optional(),
  /** A second listener on 127.0.0.1 serving /metrics and /healthz's detail without a token (loopback only). */
  METRICS_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  GITHUB_API_URL: z.url().default("https://api.github.com"),
  /** Linear's GraphQL endpoint, where a Linear import reads a team (tests point it at a local fake). */
  LINEAR_API_URL: z.url().default("https://api.linear.app/graphql"),
  /** Where Linear serves uploaded files: a Linear attachment there comes over as a file, fetched with the import's key (decision 060). */
  LINEAR_UPLOADS_URL: z.url().default("https://uploads.linear.app"),
  /** Asana's REST API, where an Asana import reads a project with a personal access token (tests point it at a local fake). */
  ASANA_API_URL: z.url().default("https://app.asana.com/api/1.0"),
  /** Shortcut's REST API v3, where a Shortcut import reads a team's stories with an API token (tests point it at a local fake). */
  SHORTCUT_API_URL: z.url().default("https://api.app.shortcut.com/api/v3"),
  /** ClickUp's REST API v2, where a ClickUp import reads a List's or a Space's tasks with a personal API token (tests point it at a local fake). */
  CLICKUP_API_URL: z.url().default("https://api.clickup.com/api/v2"),
  /**
   * Hosts (`host:port`, comma-separated) that URLs people and orgs enter may reach although they
   * are not public https addresses: a self-hosted GitLab on the office network, the tests' local
   * fakes (server/outbound/address.ts). RETASC_IMPORT_ALLOW_HOSTS is read too, as the same list.
   */
  RETASC_OUTBOUND_ALLOW_HOSTS: hostPortList,
  RETASC_IMPORT_ALLOW_HOSTS: hostPortList,
  /** GitLab (intake write-back) for connectors without a self-hosted base URL of their own. */
  GITLAB_URL: z.url().default("https://gitlab.com"),
  /** GitHub sign-in: /login/oauth/authorize and /login/oauth/access_token live here. */
  GITHUB_OAUTH_URL: z.url().default("https://github.com"),
  /** Google sign-in: the consent page (/o/oauth2/v2/auth) lives here. */
  GOOGLE_OAUTH_URL: z.url().default("https://accounts.google.com"),
  GOOGLE_TOKEN_URL: z.url().default("https://oauth2.googleapis.com/token"),
  GOOGLE_USERINFO_URL: z.url().default("https://openidconnect.googleapis.com/v1/userinfo"),
  /** Given credit a person's first org starts with, in micro-credits (1,000,000 = $1). */
  BILLING_SIGNUP_CREDIT: z.coerce.number().int("must be a whole number").min(0, "must be at least 0").default(10_000_000),
  /** Metered usage and credit (server/billing); off by default, so a self-hosted team runs free. */
  RETASC_BILLING: z.enum(["on", "off"], "must be on or off").default("off"),
  /** Stripe (server/billing/stripe): required when RETASC_BILLING=on. */
  STRIPE_SECRET_KEY: z.string().trim().optional(),
  STRIPE_WEBHOOK_SECRET: z.string().trim().optional(),
  /** Stripe's API (its protocol, host and port), where Checkout sessions are created; tests point it at a local fake. */
  STRIPE_API_URL: z.url().default("https://api.stripe.com"),
  /** Where Stripe's Checkout pages are served: the Dash's Buy form may post through to it (CSP form-action); tests point it at the fake. */
  STRIPE_CHECKOUT_URL: z.url().default("https://checkout.stripe.com"),
  // Notifications (server/notify): each channel is on when its credentials are set; the API base URLs point tests at local fakes.
  /** The Telegram bot's token (from @BotFather) and username (for the https://t.me/<bot>?start=<code> link). */
  TELEGRAM_BOT_TOKEN: z.string().trim().optional(),
  TELEGRAM_BOT_USERNAME: z.string().trim().optional(),
  /** Telegram sends it back in X-Telegram-Bot-Api-Secret-Token on every update to /webhooks/telegram (setWebhook's secret_token). */
  TELEGRAM_WEBHOOK_SECRET: z.string().trim().optional(),
  TELEGRAM_API_URL: z.url().default("https://api.telegram.org"),
  /** Email over SMTP (smtp://user:pass@host:port or smtps://…); SMTP_FROM is the sender address. */
  SMTP_URL: optionalUrl,
  SMTP_FROM: z.string().trim().optional(),
  /** The Slack app: OAuth v2 install (client id and secret) and the signing secret of its slash command. */
  SLACK_CLIENT_ID: z.string().trim().optional(),
  SLACK_CLIENT_SECRET: z.string().trim().optional(),
  SLACK_SIGNING_SECRET: z.string().trim().optional(),
  /** Slack's Web API (…/api/), where chat.postMessage and oauth.v2.access live. */
  SLACK_API_URL: z.url().default("https://slack.com/api/"),
  /** Slack's OAuth consent page. */
  SLACK_OAUTH_URL: z.url().default("https://slack.com/oauth/v2/authorize"),
  /** The Discord bot: its token (sending DMs) and the application's public key (hex, Ed25519: interaction signatures). */
  DISCORD_BOT_TOKEN: z.string().trim().optional(),
  DISCORD_PUBLIC_KEY: z.string().trim().regex(/^[0-9a-fA-F]{64}$/, "must be 64 hex digits").optional(),
  DISCORD_API_URL: z.url().default("https://discord.com/api"),
});

export type Config = z.infer<typeof configSchema> & {
  mode: "embedded" | "server";
  leaseTtlMs: number;
  emailPassword: boolean;
  /** RETASC_OUTBOUND_ALLOW_HOSTS and RETASC_IMPORT_ALLOW_HOSTS together, each `hostname:port`. */
  outboundAllowHosts: ReadonlySet<string>;
};

export class ConfigError extends Error {
  constructor(public readonly problems: string[]) {
    super(`invalid configuration: ${problems.join("; ")}`);
    this.name = "ConfigError";
  }
}

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const parsed = configSchema.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((issue) => `${issue.path.join(".")} ${issue.message}`),
    );
  }
  const c = parsed.data;
  if (c.RETASC_BILLING === "on") {
    const missing = (["STRIPE_SECRET_KEY", "STRIPE_WEBHOOK_SECRET"] as const).filter((name) => !c[name]);
    if (missing.length) throw new ConfigError([`RETASC_BILLING=on needs ${missing.join(" and ")} (from the Stripe dashboard: API keys, and the webhook endpoint for /webhooks/stripe)`]);
  }
  return {
    ...c,
    mode: c.DATABASE_URL ? "server" : "embedded",
    leaseTtlMs: c.LEASE_TTL_SECONDS * 1000,
    emailPassword: c.RETASC_EMAIL_PASSWORD ?? !c.DATABASE_URL,
    outboundAllowHosts: new Set([...c.RETASC_OUTBOUND_ALLOW_HOSTS, ...c.RETASC_IMPORT_ALLOW_HOSTS]),
  };
}
