import { z } from "zod";

/**
 * The one place that reads process.env. Everything else receives a Config.
 * Parsing fails with one line per bad variable, never a stack trace (see main.ts).
 */
const positiveInt = (fallback: number) =>
  z.coerce.number().int("must be a whole number").min(1, "must be at least 1").default(fallback);

const optionalUrl = z
  .string()
  .trim()
  .transform((v) => (v === "" ? undefined : v))
  .pipe(z.url("must be a URL").optional())
  .optional();

const base64Key = z
  .string()
  .trim()
  .refine((v) => /^[A-Za-z0-9+/]+={0,2}$/.test(v) && Buffer.from(v, "base64").length === 32, {
    message: "must be 32 bytes encoded as base64 (try: openssl rand -base64 32)",
  });

export const configSchema = z.object({
  NODE_ENV: z.enum(["development", "production", "test"]).default("production"),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().default("0.0.0.0"),
  DATABASE_URL: z
    .string()
    .trim()
    .transform((v) => (v === "" ? undefined : v))
    .pipe(
      z
        .string()
        .regex(/^postgres(ql)?:\/\//, "must start with postgres:// or postgresql://")
        .optional(),
    )
    .optional(),
  REDIS_URL: optionalUrl,
  RETASC_DATA_DIR: z.string().default(".retasc"),
  RETASC_MASTER_KEY: base64Key.optional(),
  RETASC_WORKERS: z.enum(["inline", "off"]).optional(),
  PUBLIC_URL: optionalUrl,
  BETTER_AUTH_SECRET: z.string().min(32, "must be at least 32 characters").optional(),
  GITHUB_CLIENT_ID: z.string().optional(),
  GITHUB_CLIENT_SECRET: z.string().optional(),
  GOOGLE_CLIENT_ID: z.string().optional(),
  GOOGLE_CLIENT_SECRET: z.string().optional(),
  STRIPE_SECRET_KEY: z.string().optional(),
  STRIPE_WEBHOOK_SECRET: z.string().optional(),
  LEASE_TTL_SECONDS: positiveInt(1800),
  CLAIM_CAP_DEFAULT: positiveInt(7),
  MCP_MAX_BODY_BYTES: positiveInt(1_048_576),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  GITHUB_API_URL: z.url().default("https://api.github.com"),
  GITLAB_URL: z.url().default("https://gitlab.com"),
  SLACK_API_URL: z.url().default("https://slack.com/api"),
  DISCORD_API_URL: z.url().default("https://discord.com/api"),
  TELEGRAM_API_URL: z.url().default("https://api.telegram.org"),
  LINEAR_API_URL: z.url().default("https://api.linear.app/graphql"),
  STRIPE_API_URL: z.url().default("https://api.stripe.com"),
});

export type Config = z.infer<typeof configSchema> & {
  mode: "embedded" | "server";
  leaseTtlMs: number;
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
  return {
    ...c,
    mode: c.DATABASE_URL ? "server" : "embedded",
    leaseTtlMs: c.LEASE_TTL_SECONDS * 1000,
  };
}
