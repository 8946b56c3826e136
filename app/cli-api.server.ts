import type { AppLoadContext } from "react-router";
import { z } from "zod";
import { sessionUser, type SessionUser } from "../server/auth/index.ts";
import type { Ctx } from "../server/context.ts";
import { DomainError, unstorableText, unstorableTextIn } from "../server/errors.ts";
import { humanCtx } from "../server/orgs/access.ts";
import { authOf } from "./auth.server.ts";
import { toErrorBody } from "./errors.server.ts";

/**
 * The JSON endpoints `retasc` calls (/api/cli/*). The CLI authenticates with the session
 * token from the device flow as `Authorization: Bearer`; cookies are ignored here, so a
 * browser session can never be ridden into these endpoints. Replies are the server/
 * function's result, or `{ error: { code, message, hint } }` with the matching status.
 */
export async function cliJson(context: AppLoadContext, run: () => Promise<unknown>): Promise<Response> {
  try {
    return Response.json(await run(), { headers: { "cache-control": "no-store" } });
  } catch (error) {
    const { status, body } = toErrorBody(error, context.log);
    const retryAfter = body.details?.retryAfter;
    const headers: Record<string, string> = { "cache-control": "no-store", ...(typeof retryAfter === "number" ? { "retry-after": String(retryAfter) } : {}) };
    return Response.json({ error: body }, { status, headers });
  }
}

export async function requireCliUser(request: Request, context: AppLoadContext): Promise<SessionUser> {
  const authorization = request.headers.get("authorization");
  const headers = new Headers({ host: request.headers.get("host") ?? new URL(request.url).host });
  if (authorization) headers.set("authorization", authorization);
  const user = authorization ? await sessionUser(authOf(context), headers) : null;
  if (!user) {
    throw new DomainError("UNAUTHORIZED", "not signed in, or the session expired", "Run `retasc login`.");
  }
  return user;
}

const orgIdSchema = z.string().trim().min(1, "orgId is required (--org-id)");

/** Acts as the signed-in person in the org the request names (query `orgId` or body `orgId`). */
export async function cliCtx(context: AppLoadContext, user: SessionUser, orgId: unknown): Promise<Ctx> {
  const { ctx } = await humanCtx(context.services, { orgId: orgIdSchema.parse(orgId), userId: user.id, runtime: "cli" });
  return ctx;
}

/** Acts as the signed-in person in the org the query's `orgId` names; `params` is the whole query. */
export async function cliQueryCtx(request: Request, context: AppLoadContext): Promise<{ ctx: Ctx; params: URLSearchParams }> {
  const user = await requireCliUser(request, context);
  const params = new URL(request.url).searchParams;
  return { ctx: await cliCtx(context, user, params.get("orgId")), params };
}

export type CliOrgActions = Record<string, (ctx: Ctx, input: Record<string, unknown>) => Promise<unknown>>;

/** A POST `{ orgId, action, ...input }`: runs `actions[action]` as the signed-in person in that org. */
export function cliOrgAction(request: Request, context: AppLoadContext, actions: CliOrgActions): Promise<Response> {
  return cliJson(context, async () => {
    const user = await requireCliUser(request, context);
    const { orgId, action, ...input } = await readBody(request);
    const ctx = await cliCtx(context, user, orgId);
    // hasOwn: an action named like an Object.prototype member must not resolve to it.
    if (typeof action !== "string" || !Object.hasOwn(actions, action)) methodNotAllowed();
    return actions[action](ctx, input);
  });
}

/** The JSON object a CLI endpoint was sent; text no column can store is refused here for every endpoint, before any query. */
export async function readBody(request: Request): Promise<Record<string, unknown>> {
  const text = await request.text();
  if (!text) return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // refused below
  }
  if (!value || typeof value !== "object" || Array.isArray(value)) {
    throw new DomainError("INVALID_INPUT", "the request body is not a JSON object", "Send application/json.");
  }
  const where = unstorableTextIn(value);
  if (where !== null) throw unstorableText(where);
  return value as Record<string, unknown>;
}

function methodNotAllowed(): never {
  throw new DomainError("INVALID_INPUT", "method not allowed here", "Use GET to read and POST to change.");
}
