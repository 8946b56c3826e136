import { betterAuth } from "better-auth";
import { drizzleAdapter } from "better-auth/adapters/drizzle";
import { bearer, deviceAuthorization, genericOAuth } from "better-auth/plugins";
import {
  account,
  deviceCode,
  oauthAccessToken,
  oauthClient,
  oauthClientAssertion,
  oauthClientResource,
  oauthConsent,
  oauthRefreshToken,
  oauthResource,
  session,
  user,
  verification,
} from "../../db/schema/index.ts";
import type { Services } from "../context.ts";
import { publicOrigin } from "../http/origin.ts";
import { AUTH_BASE_PATH, clientRegistrationBounds, mcpOAuthProvider, mcpResourceRows, nativeClientRegistration } from "./oauth.ts";
import { unstorableTextGuard } from "./input-guard.ts";
import { DEVICE_DECISION_PATHS } from "./device.ts";
import { hashSessionTokens, SESSION_LISTING_PATHS } from "./session-tokens.ts";
import { socialProviders, type SocialProvider } from "./social.ts";

/** The OAuth client id the `retasc` CLI presents in the device flow. */
export const CLI_CLIENT_ID = "retasc-cli";
/** Where a person enters or confirms a device code (RFC 8628 verification_uri). */
export const DEVICE_PATH = "/device";

export type { SocialProvider } from "./social.ts";

/** Which ways to sign in this deployment offers, from its configuration. */
export function signInMethods(config: Services["config"]) {
  const social: SocialProvider[] = [];
  if (config.GITHUB_CLIENT_ID && config.GITHUB_CLIENT_SECRET) social.push("github");
  if (config.GOOGLE_CLIENT_ID && config.GOOGLE_CLIENT_SECRET) social.push("google");
  return { emailPassword: config.emailPassword, social };
}

/**
 * The better-auth instance for this deployment:
 * - GitHub and Google sign-in when their client credentials are configured, at the
 *   endpoints the configuration names (./social.ts). Account
 *   linking is off: a provider identity is found by (provider, provider account id) only,
 *   never joined to an existing person because the email matches.
 * - Email + password when `config.emailPassword` (on by default in the embedded mode).
 * - Device authorization (RFC 8628) for `retasc login`, verified at /device.
 * - Bearer sessions, so the CLI sends its device-flow token as `Authorization: Bearer`.
 * - Session tokens stored as digests (./session-tokens.ts).
 * - The OAuth authorization server MCP clients sign in with (./oauth.ts).
 * Session signing uses BETTER_AUTH_SECRET, or a secret derived from the master key.
 */
export function createAuth(services: Pick<Services, "db" | "config" | "keyring">) {
  const { config } = services;
  const methods = signInMethods(config);
  const { publicUrl, hosts, trustedOrigins } = publicOrigin(config);
  return betterAuth({
    appName: "Retasc",
    basePath: AUTH_BASE_PATH,
    // Trusted origins are explicit (server/http/origin.ts): they decide which Origin may change
    // state with a session cookie and where a callbackURL may lead. With PUBLIC_URL, the auth
    // endpoints' public URL, path included (better-auth routes on it: see handleAuthRequest in
    // app/auth.server.ts); without it, the loopback names on PORT.
    baseURL: publicUrl ? `${publicUrl}${AUTH_BASE_PATH}` : { allowedHosts: [...hosts], protocol: "http" },
    trustedOrigins: [...trustedOrigins],
    // Explicitly on: better-auth turns its Origin and callbackURL checks off when NODE_ENV is
    // "test" or any TEST variable is set (vitest sets one, and so could a deployment).
    advanced: { disableOriginCheck: false },
    secret: config.BETTER_AUTH_SECRET ?? services.keyring.deriveSecret("better-auth"),
    database: hashSessionTokens(
      drizzleAdapter(services.db, {
        provider: "pg",
        schema: {
          user,
          session,
          account,
          verification,
          deviceCode,
          oauthClient,
          oauthResource,
          oauthClientResource,
          oauthRefreshToken,
          oauthAccessToken,
          oauthConsent,
          oauthClientAssertion,
        },
      }),
    ),
    // The device flow's look-up and decisions are the /device page's own (./device.ts).
    disabledPaths: [...SESSION_LISTING_PATHS, ...DEVICE_DECISION_PATHS],
    // Sign-in state, reset and verification tokens: stored as digests too (better-auth's option).
    verification: { storeIdentifier: "hashed" },
    emailAndPassword: { enabled: methods.emailPassword, minPasswordLength: 8, autoSignIn: true },
    // GitHub and Google tokens encrypted with the auth secret: a database read yields none.
    account: { accountLinking: { enabled: false }, encryptOAuthTokens: true },
    // server/http/limits.ts already limits sign-in per client address (trusting only TRUST_PROXY_HOPS
    // proxies). better-auth's own limiter, on in production, trusts any X-Forwarded-For and without
    // one puts every client in one shared bucket: 3 sign-ins per 10 s for the whole deployment.
    rateLimit: { enabled: false },
    plugins: [
      unstorableTextGuard,
      deviceAuthorization({
        // Absolute with PUBLIC_URL: better-auth would resolve a path against the origin alone.
        verificationUri: publicUrl ? `${publicUrl}${DEVICE_PATH}` : DEVICE_PATH,
        expiresIn: "15m",
        interval: "3s",
        validateClient: (clientId) => clientId === CLI_CLIENT_ID,
      }),
      bearer(),
      genericOAuth({ config: socialProviders(config, methods.social) }),
      mcpResourceRows(services),
      mcpOAuthProvider(config),
      clientRegistrationBounds,
      nativeClientRegistration,
    ],
    telemetry: { enabled: false },
    logger: { disabled: config.LOG_LEVEL === "silent" },
  });
}

export type Auth = ReturnType<typeof createAuth>;

export interface SessionUser {
  id: string;
  email: string;
  name: string;
  /** When this session was signed in (a refresh of the session does not move it). */
  signedInAt: Date;
}

/** The signed-in person of a request (session cookie or `Authorization: Bearer`), or null. */
export async function sessionUser(auth: Auth, headers: Headers): Promise<SessionUser | null> {
  const result = await auth.api.getSession({ headers });
  if (!result) return null;
  return { id: result.user.id, email: result.user.email, name: result.user.name, signedInAt: new Date(result.session.createdAt) };
}

/**
 * Whether the person signed in recently enough to approve what signs something else in as them:
 * a device login (/device) or an OAuth client (/oauth/consent) (decision 037). An old browser
 * session left open is not enough; the person signs in again.
 */
export function signedInRecently(user: SessionUser, config: Services["config"], now: Date): boolean {
  return now.getTime() - user.signedInAt.getTime() <= config.SIGN_IN_RECENT_SECONDS * 1000;
}
