import { AsyncLocalStorage } from "node:async_hooks";
import { oauthProvider } from "@better-auth/oauth-provider";
import type { BetterAuthPlugin } from "better-auth";
import { APIError, createAuthMiddleware } from "better-auth/api";
import crypto from "node:crypto";
import { oauthResource } from "../../db/schema/index.ts";
import type { Config } from "../config/index.ts";
import type { Services } from "../context.ts";
import { sha256 } from "../crypto/index.ts";
import { publicOrigin } from "../http/origin.ts";

/** better-auth's endpoints; the authorization server's issuer is `<base>/api/auth`. */
export const AUTH_BASE_PATH = "/api/auth";

/**
 * MCP sign-in (the MCP authorization spec): this deployment is the OAuth 2.1 authorization
 * server for its own `/mcp`, through @better-auth/oauth-provider on top of the existing sign-in
 * (docs/decisions/020-mcp-oauth.md).
 *
 * - Dynamic client registration (RFC 7591), open: MCP clients register themselves. A client
 *   alone can do nothing; a person must approve it on the consent page.
 * - Authorization code with PKCE (S256 only), refresh tokens (`offline_access`), revocation
 *   (RFC 7009). No client credentials grant: every token acts for a person.
 * - Opaque access tokens (no JWT plugin), bound to this server's `/mcp` (RFC 8707 `resource`),
 *   stored as SHA-256 digests like agent keys, so /mcp checks one with one indexed lookup and a
 *   revocation holds from the next request.
 * - Every authorization goes through the consent page (`/oauth/consent`, which also sends a
 *   signed-out person to sign in), where the person picks the org and project. Approving mints
 *   an agent key for them (server/auth/oauth-grants.ts, through withApproval); its id is the grant's
 *   `referenceId`, carried by the consent, the code and every token. A token therefore acts as
 *   that key: org, person, project, runtime, claim cap, role, limits and metering unchanged.
 */
export const OAUTH_CONSENT_PATH = "/oauth/consent";
/** `mcp`: act as an agent of the approving person in the org chosen at consent. */
export const MCP_SCOPES = ["mcp", "offline_access"];
/** Token prefixes (not stored): tell an OAuth token from an `rtsc_` agent key at a glance. */
export const ACCESS_TOKEN_PREFIX = "rtat_";
export const REFRESH_TOKEN_PREFIX = "rtrt_";
const ACCESS_TOKEN_SECONDS = 60 * 60;
const REFRESH_TOKEN_SECONDS = 30 * 24 * 60 * 60;

/** The `/mcp` resource identifier for a base URL (PUBLIC_URL, or the loopback origin used). */
export const mcpResource = (base: string) => `${base}/mcp`;

/**
 * Every identifier this deployment's `/mcp` may be named by: PUBLIC_URL's and the trusted
 * origins' (loopback names on PORT). /mcp accepts a token only for the one it is reached at.
 */
export function mcpResources(config: Pick<Config, "PUBLIC_URL" | "PORT">): string[] {
  const { publicUrl, trustedOrigins } = publicOrigin(config);
  return [...new Set([...(publicUrl ? [publicUrl] : []), ...trustedOrigins])].map(mcpResource);
}

/**
 * The base URL a request that arrived with this Host was addressed to: PUBLIC_URL, or the
 * loopback origin used (the edge has refused any other Host), as publicBaseUrl reads it.
 */
export function baseUrlOf(config: Pick<Config, "PUBLIC_URL" | "PORT">, host: string | null): string {
  const { publicUrl, hosts } = publicOrigin(config);
  if (publicUrl) return publicUrl;
  const name = host?.toLowerCase();
  return name && hosts.has(name) ? `http://${name}` : `http://localhost:${config.PORT}`;
}

/** RFC 9728 protected resource metadata of `/mcp`, the document a 401 from /mcp points to. */
export const PROTECTED_RESOURCE_PATH = "/.well-known/oauth-protected-resource";

export function protectedResourceMetadata(base: string) {
  return {
    resource: mcpResource(base),
    authorization_servers: [`${base}${AUTH_BASE_PATH}`],
    scopes_supported: MCP_SCOPES,
    bearer_methods_supported: ["header"],
    resource_name: "Retasc",
    resource_documentation: `${base}/index.md`,
  };
}

/**
 * The approval the consent page is recording, for the one oauth2Consent call that records it:
 * the first time the provider asks for the grant's reference (after it has checked the signed
 * request and the person's "accept"), the agent key is minted, once. Outside that call (every
 * /oauth2/authorize request) there is no approval, and the reference then names no consent: a
 * client never gets a code without a person choosing the org on the page.
 */
interface Approval {
  mint: () => Promise<string>;
  keyId?: Promise<string>;
}
const approval = new AsyncLocalStorage<Approval>();
const NO_APPROVAL = "consent-required";

/** Runs `record` (the oauth2Consent call) with `mint` as the way to make the grant's key. */
export async function withApproval<T>(mint: () => Promise<string>, record: () => Promise<T>): Promise<{ result: T; keyId: string | null }> {
  const current: Approval = { mint };
  const result = await approval.run(current, record);
  return { result, keyId: current.keyId ? await current.keyId : null };
}

function grantReference(): Promise<string> | string {
  const current = approval.getStore();
  if (!current) return NO_APPROVAL;
  current.keyId ??= current.mint();
  return current.keyId;
}

/**
 * The provider's `oauthResource` rows for /mcp (mcpResources), inserted at boot if missing. Not
 * the provider's own `resources` seeding: it tells a concurrent insert (two instances booting)
 * by the words of the driver's error, which Drizzle wraps, so the second instance failed.
 */
export function mcpResourceRows(services: Pick<Services, "db" | "config">) {
  return {
    id: "retasc-mcp-resources",
    init: async () => {
      const now = new Date();
      const rows = mcpResources(services.config).map((identifier) => ({ id: crypto.randomUUID(), identifier, name: "Retasc MCP", createdAt: now, updatedAt: now }));
      await services.db.insert(oauthResource).values(rows).onConflictDoNothing({ target: oauthResource.identifier });
    },
  } satisfies BetterAuthPlugin;
}

export function mcpOAuthProvider(config: Pick<Config, "PUBLIC_URL" | "PORT">) {
  const { publicUrl } = publicOrigin(config);
  // Absolute with PUBLIC_URL: better-auth would resolve a path against the origin alone.
  const consentPage = publicUrl ? `${publicUrl}${OAUTH_CONSENT_PATH}` : OAUTH_CONSENT_PATH;
  return oauthProvider({
    loginPage: consentPage,
    consentPage,
    scopes: MCP_SCOPES,
    disableJwtPlugin: true,
    grantTypes: ["authorization_code", "refresh_token"],
    allowDynamicClientRegistration: true,
    allowUnauthenticatedClientRegistration: true,
    // Every registered client may ask for /mcp; what it gets is what a person approves.
    enforcePerClientResources: false,
    accessTokenExpiresIn: ACCESS_TOKEN_SECONDS,
    refreshTokenExpiresIn: REFRESH_TOKEN_SECONDS,
    storeTokens: { hash: (token) => sha256(token) },
    prefix: { opaqueAccessToken: ACCESS_TOKEN_PREFIX, refreshToken: REFRESH_TOKEN_PREFIX },
    postLogin: {
      page: consentPage,
      // The org is chosen on the consent page itself, not on a page of its own.
      shouldRedirect: () => false,
      consentReferenceId: grantReference,
    },
  });
}

/**
 * MCP clients on a person's machine (Claude Code, Cursor, the MCP Inspector) register loopback
 * `http://127.0.0.1:<port>/callback` redirect URIs without saying `application_type`, and the
 * provider takes an unnamed type as "web" (OIDC's default), which refuses them. A registration
 * whose every redirect URI is a native one (RFC 8252: http on a loopback name, or a private-use
 * scheme) is taken as "native" instead; https redirect URIs stay "web".
 */
export const nativeClientRegistration = {
  id: "retasc-native-client-registration",
  hooks: {
    before: [
      {
        matcher: (ctx) => ctx.path === "/oauth2/register",
        handler: createAuthMiddleware(async (ctx) => {
          const body = ctx.body as { application_type?: unknown; redirect_uris?: unknown } | undefined;
          const uris = body?.redirect_uris;
          if (!body || body.application_type !== undefined || !Array.isArray(uris) || uris.length === 0) return;
          if (!uris.every(isNativeRedirectUri)) return;
          return { context: { body: { ...body, application_type: "native" } } };
        }),
      },
    ],
  },
} satisfies BetterAuthPlugin;

/** What one registration may hold: a client is a name and a few callbacks, never a store for anything else. */
export const REGISTRATION_LIMITS = { nameChars: 200, redirectUris: 10, fieldChars: 2_000, listEntries: 10, bodyChars: 16_384 };

/**
 * Open registration stores what the client sends, so its size is bounded before the provider
 * reads it (RFC 7591's invalid_client_metadata / invalid_redirect_uri, 400): the name, the number
 * and length of redirect URIs, every other field and list, and the whole. How many an address may
 * register is limited at the edge (server/http/limits.ts).
 */
export const clientRegistrationBounds = {
  id: "retasc-client-registration-bounds",
  hooks: {
    before: [
      {
        matcher: (ctx) => ctx.path === "/oauth2/register",
        handler: createAuthMiddleware(async (ctx) => {
          const problem = registrationProblem(ctx.body);
          if (problem) throw new APIError("BAD_REQUEST", { error: problem.error, error_description: problem.description });
        }),
      },
    ],
  },
} satisfies BetterAuthPlugin;

function registrationProblem(body: unknown): { error: "invalid_client_metadata" | "invalid_redirect_uri"; description: string } | null {
  const L = REGISTRATION_LIMITS;
  const metadata = (description: string) => ({ error: "invalid_client_metadata" as const, description });
  if (!body || typeof body !== "object" || Array.isArray(body)) return metadata("the registration must be a JSON object");
  const { client_name: name, redirect_uris: uris, ...rest } = body as Record<string, unknown>;
  if (typeof name === "string" && name.length > L.nameChars) return metadata(`client_name is at most ${L.nameChars} characters`);
  if (Array.isArray(uris)) {
    if (uris.length > L.redirectUris) return { error: "invalid_redirect_uri", description: `at most ${L.redirectUris} redirect_uris` };
    if (uris.some((u) => typeof u !== "string" || u.length > L.fieldChars)) return { error: "invalid_redirect_uri", description: `each redirect URI is at most ${L.fieldChars} characters` };
  }
  for (const [field, value] of Object.entries(rest)) {
    if (typeof value === "string" && value.length > L.fieldChars) return metadata(`${field} is at most ${L.fieldChars} characters`);
    if (Array.isArray(value) && value.length > L.listEntries) return metadata(`${field} has at most ${L.listEntries} entries`);
  }
  if (JSON.stringify(body).length > L.bodyChars) return metadata(`a registration is at most ${L.bodyChars} characters of JSON`);
  return null;
}

function isNativeRedirectUri(uri: unknown): boolean {
  if (typeof uri !== "string") return false;
  try {
    const url = new URL(uri);
    if (url.protocol === "https:") return false;
    if (url.protocol === "http:") return ["localhost", "127.0.0.1", "[::1]"].includes(url.hostname);
    return true;
  } catch {
    return false;
  }
}
