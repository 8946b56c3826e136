import { and, desc, eq, gt, isNotNull, isNull, or, sql } from "drizzle-orm";
import { z } from "zod";
import type { Db } from "../../db/client.ts";
import { invites, members, orgs, user } from "../../db/schema/index.ts";
import type { Ctx, Services } from "../context.ts";
import { withPrincipal } from "../with-principal.ts";
import { sha256 } from "../crypto/index.ts";
import { DomainError, forbidden, notFound } from "../errors.ts";
import { humanPrincipal, recordOrgActivity } from "./access.ts";
import { newId } from "./fields.ts";
import { transactionWithNotices } from "../events/index.ts";
import { inviteCodeSchema, inviteIdInput, stateOf, type InviteState } from "./invites.ts";
import { orgFrozenColumn } from "./freeze.ts";

/**
 * Redeems an invite for a signed-in person: they become a member of the org. The code is
 * consumed with one conditional UPDATE, so of any number of concurrent redemptions exactly
 * one succeeds. A used, revoked or expired code is refused with its reason.
 */
export async function redeemInvite(services: Services, input: { userId: string; code: string; via?: Via }) {
  const code = inviteCodeSchema.parse(input.code);
  const codeHash = sha256(code);
  return transactionWithNotices(services.db, async (tx) => {
    const found = await tx
      .select({ invite: invites, orgName: orgs.name, orgFrozen: orgFrozenColumn })
      .from(invites)
      .innerJoin(orgs, eq(orgs.id, invites.orgId))
      .where(eq(invites.codeHash, codeHash));
    const row = found[0];
    if (!row) throw notFound("invite code", "Check the code, or ask an owner or admin for a new invite.");
    return redeem(services, tx, row, input.userId, input.via ?? "cli");
  });
}

type Via = "dash" | "cli" | "mcp";

/** The one redemption, by code or by id: the invitee check, the conditional spend, the membership. */
async function redeem(services: Services, tx: Db, row: { invite: typeof invites.$inferSelect; orgName: string; orgFrozen: boolean }, userId: string, via: Via) {
  const now = services.clock.now();
  const { invite, orgName } = row;
  if (invite.email) await requireInvitee(tx, invite, userId);
  const existing = await tx
    .select({ id: members.id, status: members.status, role: members.role })
    .from(members)
    .where(and(eq(members.orgId, invite.orgId), eq(members.userId, userId)));
  if (existing[0]?.status === "suspended") {
    throw forbidden(`your membership of ${orgName} is suspended`, "Ask an owner or admin of the org to reactivate you.");
  }
  if (existing[0]) {
    throw new DomainError("CONFLICT", `you are already a member of ${orgName}`, "Nothing to redeem; bind a folder with `retasc bind`.", {
      orgId: invite.orgId,
    });
  }
  const taken = await tx
    .update(invites)
    .set({ acceptedAt: now, acceptedBy: userId })
    .where(and(eq(invites.id, invite.id), isNull(invites.acceptedAt), isNull(invites.revokedAt), gt(invites.expiresAt, now)))
    .returning({ id: invites.id });
  if (taken.length === 0) {
    // Re-read: a concurrent redemption may have spent it since the first read.
    const current = (await tx.select().from(invites).where(eq(invites.id, invite.id)))[0]!;
    throw refusal(stateOf(current, now), current);
  }
  const memberId = newId();
  await tx.insert(members).values({ id: memberId, orgId: invite.orgId, userId, role: invite.role, projectIds: invite.projectIds });
  const ctx = withPrincipal(services, humanPrincipal(invite.orgId, userId, via, invite.projectIds, row.orgFrozen));
  await recordOrgActivity(ctx, tx, "invite.accepted", { inviteId: invite.id, memberId });
  await services.events.publish(tx, { orgId: invite.orgId, kind: "member.joined", memberId });
  return { orgId: invite.orgId, orgName, memberId, role: invite.role, projectIds: invite.projectIds };
}

/**
 * The pending invites addressed to the caller's human that they may redeem: bound to their
 * address and proven theirs as requireInvitee asks (verified, or mailed the link), to orgs they
 * are not in yet. Names nothing of an invite whose address is not proven the person's.
 */
function pendingForUser(services: Pick<Services, "db" | "clock">, userId: string) {
  const now = services.clock.now();
  return services.db
    .select({ invite: invites, orgName: orgs.name })
    .from(invites)
    .innerJoin(orgs, eq(orgs.id, invites.orgId))
    .innerJoin(user, eq(user.id, userId))
    .where(
      and(
        sql`${invites.email} = lower(${user.email})`,
        or(eq(user.emailVerified, true), isNotNull(invites.emailedAt)),
        isNull(invites.acceptedAt),
        isNull(invites.revokedAt),
        gt(invites.expiresAt, now),
        sql`not exists (select 1 from ${members} m where m.org_id = ${invites.orgId} and m.user_id = ${userId})`,
      ),
    )
    .orderBy(desc(invites.createdAt), desc(invites.id))
    .limit(20);
}

/** What whoami lists: the caller's human's pending invites (for accept_invite). */
export async function pendingInvites(ctx: Ctx) {
  if (!ctx.principal.userId) return [];
  const rows = await pendingForUser(ctx, ctx.principal.userId);
  return rows.map(({ invite, orgName }) => ({ inviteId: invite.id, orgName, role: invite.role, expiresAt: invite.expiresAt.toISOString() }));
}

/**
 * Accepts one of the caller's human's own pending invites (whoami lists them) on their behalf:
 * they join that org, as if they had opened the link. An invite for anyone else, or open (no
 * address: its code is the credential, and an agent holds none), is NOT_FOUND.
 */
export async function acceptInvite(ctx: Ctx, raw: z.input<typeof inviteIdInput>) {
  const { inviteId } = inviteIdInput.parse(raw);
  const userId = ctx.principal.userId;
  const hint = "Your human's pending invites are listed by whoami (pendingInvites).";
  if (!userId) throw notFound(`invite ${inviteId}`, hint);
  return transactionWithNotices(ctx.db, async (tx) => {
    const [row] = await tx
      .select({ invite: invites, orgName: orgs.name, orgFrozen: orgFrozenColumn })
      .from(invites)
      .innerJoin(orgs, eq(orgs.id, invites.orgId))
      .innerJoin(user, eq(user.id, userId))
      .where(and(eq(invites.id, inviteId), sql`${invites.email} = lower(${user.email})`));
    if (!row) throw notFound(`invite ${inviteId}`, hint);
    return redeem(ctx, tx, row, userId, "mcp");
  });
}

/**
 * An email-bound invite is redeemed only by the person signed in with that address, proven:
 * verified (by GitHub or Google, or made by the operator), or reached by this server's mail of
 * the link, which is the proof a verification mail would be. An email + password account is
 * recorded unverified, so it redeems a bound invite only when the invite was mailed.
 */
async function requireInvitee(tx: Pick<Ctx["db"], "select">, invite: { email: string | null; emailedAt: Date | null }, userId: string) {
  const [person] = await tx.select({ email: user.email, verified: user.emailVerified }).from(user).where(eq(user.id, userId));
  const hint = "Sign in with the address the invite was sent to, or ask an owner or admin for an invite to yours.";
  if (!person || person.email.toLowerCase() !== invite.email) {
    throw new DomainError("FORBIDDEN", `this invite is for ${invite.email}, and you are signed in as ${person?.email ?? "someone else"}`, hint, { reason: "email_mismatch" });
  }
  if (!person.verified && !invite.emailedAt) {
    throw new DomainError(
      "FORBIDDEN",
      `nothing proves ${invite.email} is yours: the account's email is not verified and this server did not mail the invite`,
      "Sign in with GitHub or Google under that address, or ask for an open invite (one without an email).",
      { reason: "email_unverified" },
    );
  }
}

function refusal(state: InviteState, invite: { expiresAt: Date; acceptedAt: Date | null; revokedAt: Date | null }) {
  const hint = "Ask an owner or admin of the org for a new invite.";
  switch (state) {
    case "accepted":
      return new DomainError("CONFLICT", "this invite was already used; invite codes work once", hint, { reason: "used" });
    case "revoked":
      return new DomainError("FORBIDDEN", "this invite was revoked", hint, { reason: "revoked" });
    case "expired":
      return new DomainError("FORBIDDEN", `this invite expired on ${invite.expiresAt.toISOString().slice(0, 10)}`, hint, {
        reason: "expired",
      });
    default:
      return new DomainError("CONFLICT", "this invite could not be redeemed; try again", hint);
  }
}

/** What an invite code leads to, for the join page; never spends it. */
export async function describeInvite(services: Pick<Services, "db" | "clock">, rawCode: string) {
  const parsed = inviteCodeSchema.safeParse(rawCode);
  if (!parsed.success) return null;
  const rows = await services.db
    .select({ invite: invites, orgName: orgs.name })
    .from(invites)
    .innerJoin(orgs, eq(orgs.id, invites.orgId))
    .where(eq(invites.codeHash, sha256(parsed.data)));
  const row = rows[0];
  if (!row) return null;
  return { orgName: row.orgName, role: row.invite.role, email: row.invite.email, state: stateOf(row.invite, services.clock.now()), code: parsed.data };
}
