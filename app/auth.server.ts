import { createCookie, redirect, type AppLoadContext } from "react-router";
import type { Ctx, Services } from "../server/context.ts";
import { createAuth, sessionUser, signedInRecently, type Auth, type SessionUser } from "../server/auth/index.ts";
import { humanCtx, type Membership } from "../server/orgs/access.ts";
import { publicOrigin } from "../server/http/origin.ts";
import { listOrgsOf } from "../server/orgs/account.ts";

/**
 * Sign-in state for loaders and actions. `requireUser` and `requireMember` are what every
 * Dash route calls first; they redirect to sign-in (or to creating an org) when needed.
 */
const instances = new WeakMap<Services, Auth>();

/** The better-auth instance of this process, built once from its services. */
export function authOf(context: AppLoadContext): Auth {
  let auth = instances.get(context.services);
  if (!auth) {
    auth = createAuth(context.services);
    instances.set(context.services, auth);
  }
  return auth;
}

/** The org the Dash shows; switching orgs sets it. Membership is re-checked on every request. */
export const currentOrgCookie = createCookie("retasc_org", {
  path: "/",
  httpOnly: true,
  sameSite: "lax",
  maxAge: 60 * 60 * 24 * 365,
});

/** Stands in for this deployment's origin when checking where a path leads (never reached). */
const HOME = "http://retasc.invalid";

/**
 * A same-origin path to come back to after signing in; anything else becomes `fallback`.
 * The value is parsed the way a browser parses a Location (which drops tabs and newlines and
 * reads a backslash as a slash, so `/<tab>/evil.example` leaves the site) and must stay on
 * this origin; the parsed form is returned, so what is checked is what is sent.
 */
export function safeNext(value: string | null | undefined, fallback = "/dash"): string {
  if (!value?.startsWith("/")) return fallback;
  let url: URL;
  try {
    url = new URL(value, HOME);
  } catch {
    return fallback;
  }
  const path = url.pathname + url.search + url.hash;
  // Dot segments can collapse to `//host`, which as a Location would name another host.
  if (url.origin !== HOME || path.startsWith("//")) return fallback;
  return path;
}

export function signInUrl(request: Request): string {
  const url = new URL(request.url);
  return `/auth/sign-in?next=${encodeURIComponent(url.pathname + url.search)}`;
}

/**
 * The signed-in person, only when their sign-in is recent (signedInRecently): approving a device
 * login or an OAuth client asks for that (decision 037). Otherwise a redirect to sign in again,
 * coming back here; a person not signed in at all goes to sign in.
 */
export async function requireRecentUser(request: Request, context: AppLoadContext): Promise<SessionUser> {
  const user = await requireUser(request, context);
  if (signedInRecently(user, context.services.config, context.services.clock.now())) return user;
  const url = new URL(request.url);
  throw redirect(`/auth/sign-in?again=1&next=${encodeURIComponent(url.pathname + url.search)}`);
}

export async function optionalUser(request: Request, context: AppLoadContext): Promise<SessionUser | null> {
  return sessionUser(authOf(context), request.headers);
}

/** The signed-in person, or a redirect to sign-in that comes back here. */
export async function requireUser(request: Request, context: AppLoadContext): Promise<SessionUser> {
  const user = await optionalUser(request, context);
  if (!user) throw redirect(signInUrl(request));
  return user;
}

export interface MemberContext {
  user: SessionUser;
  /** Acts as this person in the current org (principal kind "human", runtime "dash"). */
  ctx: Ctx;
  membership: Membership;
  org: { orgId: string; name: string };
  orgs: { orgId: string; name: string; role: string; status: string }[];
}

/**
 * The signed-in person in the Dash's current org (the `retasc_org` cookie, else their first
 * active org). Redirects to sign-in, or to creating an org when they have none.
 */
export async function requireMember(request: Request, context: AppLoadContext): Promise<MemberContext> {
  const user = await requireUser(request, context);
  const { orgs } = await listOrgsOf(context.services, user.id);
  const active = orgs.filter((o) => o.status === "active");
  if (active.length === 0) throw redirect("/dash/orgs/new");
  const wanted = (await currentOrgCookie.parse(request.headers.get("cookie"))) as string | null;
  const org = active.find((o) => o.orgId === wanted) ?? active[0]!;
  const { ctx, membership } = await humanCtx(context.services, { orgId: org.orgId, userId: user.id, runtime: "dash" });
  return { user, ctx, membership, org: { orgId: org.orgId, name: org.name }, orgs };
}

/** Copies the Set-Cookie headers of a better-auth response onto a redirect. */
export function redirectWithCookies(to: string, from: Response): Response {
  const headers = new Headers({ location: to });
  for (const cookie of from.headers.getSetCookie()) headers.append("set-cookie", cookie);
  return new Response(null, { status: 302, headers });
}

/**
 * Hands a request to better-auth's endpoints. With PUBLIC_URL, better-auth routes on that URL's
 * path (its baseURL), while the proxy in front strips the path before the request arrives here;
 * the request is addressed to the public URL again so the two agree.
 */
export function handleAuthRequest(request: Request, context: AppLoadContext): Promise<Response> {
  const auth = authOf(context);
  const { publicUrl } = publicOrigin(context.services.config);
  if (!publicUrl) return auth.handler(request);
  const url = new URL(request.url);
  return auth.handler(new Request(`${publicUrl}${url.pathname}${url.search}`, request));
}
