import { and, desc, eq, isNull, sql } from "drizzle-orm";
import { z } from "zod";
import { invites, user } from "../../db/schema/index.ts";
import type { Ctx } from "../context.ts";
import { randomToken, sha256 } from "../crypto/index.ts";
import { DomainError, notFound } from "../errors.ts";
import { decodeCursor, encodeCursor, fitting, pageArgs } from "../paging.ts";
import { actorOf, recordOrgActivity, requireRole } from "./access.ts";
import { emailSchema, newId } from "./fields.ts";
import { checkScope, projectIdsSchema } from "./scope.ts";
import { transactionWithNotices } from "../events/index.ts";

/**
 * Invites: single-use `rtscinv_...` codes that add a person to an org as a member or admin.
 * Only the code's SHA-256 is stored; the code is shown once, to whoever minted it. An invite
 * either names an email, and then only the person signed in with that address redeems it,
 * or is open: whoever holds the code (decision 028).
 */
export const INVITE_PREFIX = "rtscinv_";
export const DEFAULT_INVITE_DAYS = 7;
const DAY_MS = 86_400_000;

export const createInviteInput = z.object({
  expiresDays: z.number().int().min(1, "an invite lasts 1 to 30 days").max(30, "an invite lasts 1 to 30 days").default(DEFAULT_INVITE_DAYS),
  /** What the person joins as; only an owner invites an admin (as only an owner makes one). */
  role: z.enum(["member", "admin"], { error: "an invite makes a member or an admin" }).default("member"),
  /** Who may redeem it; empty or absent for an open invite. */
  email: z.preprocess((v) => (typeof v === "string" ? v.trim().toLowerCase() || undefined : v), emailSchema.optional()),
  /** The projects the member it makes is scoped to; absent or null for every project (./scope.ts). */
  projectIds: projectIdsSchema.optional(),
});
export const inviteIdInput = z.object({ inviteId: z.string().trim().min(1, "inviteId is required").max(100) });
export const inviteCodeSchema = z
  .string()
  .trim()
  .transform((value) => extractInviteCode(value))
  .pipe(z.string().regex(/^rtscinv_[A-Za-z0-9_-]{16,100}$/, "an invite code looks like rtscinv_… (or a link ending in one)"));

/** Accepts the bare code or any link that carries it (…/join/rtscinv_…, ?code=rtscinv_…). */
export function extractInviteCode(value: string): string {
  const match = /rtscinv_[A-Za-z0-9_-]+/.exec(value);
  return match ? match[0] : value;
}

export type InviteState = "pending" | "accepted" | "revoked" | "expired";

export function stateOf(row: { acceptedAt: Date | null; revokedAt: Date | null; expiresAt: Date }, now: Date): InviteState {
  if (row.acceptedAt) return "accepted";
  if (row.revokedAt) return "revoked";
  if (row.expiresAt <= now) return "expired";
  return "pending";
}

/** Mints an invite (owner or admin). Returns the code once. Free, on every door: membership is never metered (decision 052). */
export async function createInvite(ctx: Ctx, raw: z.input<typeof createInviteInput> = {}) {
  const { expiresDays, role, email, projectIds } = createInviteInput.parse(raw);
  return transactionWithNotices(ctx.db, async (tx) => {
    const actor = await actorOf(ctx, tx);
    requireRole(actor, role === "admin" ? ["owner"] : ["owner", "admin"], role === "admin" ? "inviting an admin" : "inviting people");
    const scope = await checkScope(tx, ctx.principal.orgId, role, projectIds ?? null);
    const code = randomToken(INVITE_PREFIX, 24);
    const inviteId = newId();
    const expiresAt = new Date(ctx.clock.now().getTime() + expiresDays * DAY_MS);
    await tx.insert(invites).values({
      id: inviteId,
      orgId: ctx.principal.orgId,
      codeHash: sha256(code),
      role,
      email: email ?? null,
      projectIds: scope,
      createdBy: ctx.principal.userId,
      createdAt: ctx.clock.now(),
      expiresAt,
    });
    await recordOrgActivity(ctx, tx, "invite.created", { inviteId, role, bound: email !== undefined, projectIds: scope, expiresAt: expiresAt.toISOString() });
    return { inviteId, code, role, email: email ?? null, projectIds: scope, expiresAt: expiresAt.toISOString() };
  });
}

export const listInvitesInput = z.object(pageArgs);

/** Where a page of invites ends: the last invite's creation (to the microsecond, as stored) and id. */
const invitePosition = z.object({ t: z.string().max(40), i: z.string().max(100) });

/**
 * The org's invites with their state (owner or admin), newest first, a page at a time read as one
 * keyset range (at most `limit`, default 200, and REPLY_BUDGET_BYTES), with `nextCursor` while
 * more follow. A spent invite has no expiry to show.
 */
export async function listInvites(ctx: Ctx, raw: z.input<typeof listInvitesInput> = {}) {
  const input = listInvitesInput.parse(raw);
  const limit = input.limit ?? 200;
  const after = decodeCursor(input.cursor, invitePosition);
  const actor = await actorOf(ctx);
  requireRole(actor, ["owner", "admin"], "listing invites");
  const now = ctx.clock.now();
  const rows = await ctx.db
    .select({
      inviteId: invites.id,
      role: invites.role,
      email: invites.email,
      projectIds: invites.projectIds,
      emailedAt: invites.emailedAt,
      createdAt: invites.createdAt,
      expiresAt: invites.expiresAt,
      acceptedAt: invites.acceptedAt,
      revokedAt: invites.revokedAt,
      acceptedByEmail: user.email,
      position: sql<string>`${invites.createdAt}::text`,
    })
    .from(invites)
    .leftJoin(user, eq(user.id, invites.acceptedBy))
    .where(
      and(
        eq(invites.orgId, ctx.principal.orgId),
        after ? sql`(${invites.createdAt}, ${invites.id}) < (${after.t}::timestamptz, ${after.i})` : undefined,
      ),
    )
    .orderBy(desc(invites.createdAt), desc(invites.id))
    .limit(limit + 1);
  const views = rows.slice(0, limit).map((r) => {
    const state = stateOf(r, now);
    return {
      inviteId: r.inviteId,
      role: r.role,
      email: r.email,
      projectIds: r.projectIds,
      emailedAt: r.emailedAt?.toISOString() ?? null,
      state,
      createdAt: r.createdAt.toISOString(),
      expiresAt: state === "pending" || state === "expired" ? r.expiresAt.toISOString() : null,
      acceptedAt: r.acceptedAt?.toISOString() ?? null,
      acceptedBy: r.acceptedByEmail ?? null,
      revokedAt: r.revokedAt?.toISOString() ?? null,
    };
  });
  const page = views.slice(0, fitting(views.map((v) => JSON.stringify(v).length)));
  const last = rows[page.length - 1];
  return { invites: page, ...(rows.length > page.length && last ? { nextCursor: encodeCursor({ t: last.position, i: last.inviteId }) } : {}) };
}

/** Voids a pending invite (owner or admin). */
export async function revokeInvite(ctx: Ctx, raw: z.input<typeof inviteIdInput>) {
  const { inviteId } = inviteIdInput.parse(raw);
  return transactionWithNotices(ctx.db, async (tx) => {
    const actor = await actorOf(ctx, tx);
    requireRole(actor, ["owner", "admin"], "revoking invites");
    const now = ctx.clock.now();
    const rows = await tx.select().from(invites).where(and(eq(invites.orgId, ctx.principal.orgId), eq(invites.id, inviteId)));
    const invite = rows[0];
    if (!invite) throw notFound(`invite ${inviteId}`, "List invites with list_invites (or `retasc members list`).");
    const state = stateOf(invite, now);
    if (state === "revoked") return { inviteId, state, changed: false };
    if (state !== "pending") {
      throw new DomainError("CONFLICT", `invite ${inviteId} is ${state}; only a pending invite can be revoked`, "Nothing to do.");
    }
    await tx
      .update(invites)
      .set({ revokedAt: now, revokedBy: ctx.principal.userId })
      .where(and(eq(invites.id, inviteId), isNull(invites.acceptedAt), isNull(invites.revokedAt)));
    await recordOrgActivity(ctx, tx, "invite.revoked", { inviteId });
    return { inviteId, state: "revoked" as const, changed: true };
  });
}
