import type { GenericOAuthConfig } from "better-auth/plugins";
import type { Config } from "../config/index.ts";

export type SocialProvider = "github" | "google";

/**
 * GitHub and Google sign-in as better-auth generic OAuth providers. better-auth's built-in
 * github/google providers hard-code github.com and googleapis.com token endpoints; these take
 * every endpoint from the configuration, so tests (and air-gapped proxies) can point them
 * elsewhere. They still answer on the ordinary /sign-in/social and /callback/:provider routes,
 * and the account is keyed by the provider's own account id (GitHub's numeric id, Google's sub).
 */
export function socialProviders(config: Config, enabled: SocialProvider[]): GenericOAuthConfig[] {
  const providers: GenericOAuthConfig[] = [];
  if (enabled.includes("github")) {
    providers.push({
      providerId: "github",
      name: "GitHub",
      clientId: config.GITHUB_CLIENT_ID!,
      clientSecret: config.GITHUB_CLIENT_SECRET!,
      authorizationUrl: under(config.GITHUB_OAUTH_URL, "/login/oauth/authorize"),
      tokenUrl: under(config.GITHUB_OAUTH_URL, "/login/oauth/access_token"),
      scopes: ["read:user", "user:email"],
      getUserInfo: (tokens) => githubUser(config.GITHUB_API_URL, tokens.accessToken),
    });
  }
  if (enabled.includes("google")) {
    providers.push({
      providerId: "google",
      name: "Google",
      clientId: config.GOOGLE_CLIENT_ID!,
      clientSecret: config.GOOGLE_CLIENT_SECRET!,
      authorizationUrl: under(config.GOOGLE_OAUTH_URL, "/o/oauth2/v2/auth"),
      tokenUrl: config.GOOGLE_TOKEN_URL,
      scopes: ["openid", "email", "profile"],
      getUserInfo: (tokens) => googleUser(config.GOOGLE_USERINFO_URL, tokens.accessToken),
    });
  }
  return providers;
}

async function getJson<T>(url: string, accessToken: string | undefined): Promise<T | null> {
  if (!accessToken) return null;
  const response = await fetch(url, {
    headers: { authorization: `Bearer ${accessToken}`, accept: "application/json", "user-agent": "Retasc" },
    redirect: "error",
  });
  return response.ok ? ((await response.json()) as T) : null;
}

/** Joins a path onto a base URL that may itself carry a path (GitHub Enterprise: /api/v3, a proxy prefix). */
function under(base: string, path: string): string {
  return `${base.replace(/\/+$/, "")}${path}`;
}

async function githubUser(apiUrl: string, accessToken: string | undefined) {
  const profile = await getJson<{ id: number; login: string; name: string | null; email: string | null; avatar_url?: string }>(
    under(apiUrl, "/user"),
    accessToken,
  );
  if (!profile) return null;
  // The profile email is only the public one; the primary address comes from /user/emails.
  const emails = (await getJson<{ email: string; primary: boolean; verified: boolean }[]>(under(apiUrl, "/user/emails"), accessToken)) ?? [];
  const email = profile.email ?? (emails.find((e) => e.primary) ?? emails[0])?.email;
  if (!email) return null;
  return {
    id: String(profile.id),
    name: profile.name || profile.login,
    email,
    emailVerified: emails.find((e) => e.email === email)?.verified ?? false,
    image: profile.avatar_url,
  };
}

async function googleUser(userinfoUrl: string, accessToken: string | undefined) {
  const profile = await getJson<{ sub: string; email?: string; email_verified?: boolean; name?: string; picture?: string }>(
    userinfoUrl,
    accessToken,
  );
  if (!profile?.sub || !profile.email) return null;
  return {
    id: profile.sub,
    name: profile.name ?? profile.email,
    email: profile.email,
    emailVerified: profile.email_verified === true,
    image: profile.picture,
  };
}
