import { and, asc, eq } from "drizzle-orm";
import type { Db } from "../../db/client.ts";
import { members, orgs, type MemberRole } from "../../db/schema/index.ts";
import { recordActivity } from "../activity/index.ts";
import type { Ctx, Principal, Services } from "../context.ts";
import { withPrincipal } from "../with-principal.ts";
import { DomainError, forbidden, notFound } from "../errors.ts";
import { memberProjectIds } from "./scope.ts";
import { forgetCachedKeys } from "./key-cache.ts";
import { orgFrozenColumn, refuseWhileFrozen } from "./freeze.ts";

/**
 * Who may do what in an org. Roles: owner > admin > member. Every check reads the acting
 * human's membership from the database, so a suspension or role change applies at once,
 * whether the call came from the Dash, the CLI or an agent key.
 */
export interface Membership {
  memberId: string;
  orgId: string;
  userId: string;
  role: MemberRole;
  status: "active" | "suspended";
  /** The projects this person reaches, or null for all (always null for owners and admins; ./scope.ts). */
  projectIds: string[] | null;
  /** The org is frozen for a move (./freeze.ts): read with the membership, in its statement. */
  orgFrozen: boolean;
}

const rank: Record<MemberRole, number> = { owner: 3, admin: 2, member: 1 };

export async function membershipOf(db: Db, orgId: string, userId: string): Promise<Membership | null> {
  const rows = await db
    .select({
      memberId: members.id,
      orgId: members.orgId,
      userId: members.userId,
      role: members.role,
      status: members.status,
      projectIds: memberProjectIds,
      orgFrozen: orgFrozenColumn,
    })
    .from(members)
    .innerJoin(orgs, eq(orgs.id, members.orgId))
    .where(and(eq(members.orgId, orgId), eq(members.userId, userId)));
  return rows[0] ?? null;
}

/**
 * A person acting through the Dash or the CLI (no agent key; over MCP only to accept an invite of
 * theirs), within their project scope (null: all, as for an owner); `orgFrozen` as the caller read
 * it with the membership or the invite (./freeze.ts).
 */
export function humanPrincipal(orgId: string, userId: string, runtime: "dash" | "cli" | "mcp", projectIds: string[] | null = null, orgFrozen = false): Principal {
  return { kind: "human", orgId, userId, keyId: null, runtime, projectId: null, projectIds, claimCap: null, ...(orgFrozen ? { orgFrozen } : {}) };
}

/** A Ctx for a signed-in person in one of their orgs; refuses non-members and suspended members. */
export async function humanCtx(
  services: Services,
  input: { orgId: string; userId: string; runtime: "dash" | "cli" },
): Promise<{ ctx: Ctx; membership: Membership }> {
  const membership = await membershipOf(services.db, input.orgId, input.userId);
  if (!membership) throw notFound("org", "You are not a member of that org; `retasc whoami` lists yours.");
  if (membership.status !== "active") {
    throw forbidden("your membership of this org is suspended", "Ask an owner or admin of the org to reactivate you.");
  }
  return { ctx: withPrincipal(services, humanPrincipal(input.orgId, input.userId, input.runtime, membership.projectIds, membership.orgFrozen)), membership };
}

/**
 * The acting human's membership. Operator commands (the `system` principal) act as an
 * owner. An agent acts with its human's role.
 */
export async function actorOf(ctx: Ctx, db: Db = ctx.db): Promise<Membership> {
  const { principal } = ctx;
  if (principal.kind === "system") {
    return { memberId: "system", orgId: principal.orgId, userId: "system", role: "owner", status: "active", projectIds: null, orgFrozen: false };
  }
  const membership = principal.userId ? await membershipOf(db, principal.orgId, principal.userId) : null;
  if (!membership || membership.status !== "active") {
    throw new DomainError("UNAUTHORIZED", "this principal is not an active member of the org", "Sign in again, or ask an owner or admin to reactivate you.");
  }
  return membership;
}

export function requireRole(actor: Membership, roles: readonly MemberRole[], action: string): void {
  if (!roles.includes(actor.role)) {
    throw forbidden(`${action} needs the ${roles.join(" or ")} role; you are ${article(actor.role)} ${actor.role}`);
  }
}

/** What a refusal by requireActsOn says: "revoking another person's key" needs…, An admin cannot "revoke a key of" an owner. */
export interface ActOn {
  doing: string;
  verb: string;
}

/**
 * The one rule for acting on another person: on their membership, their keys or their agents
 * (suspend, reactivate, mint a key for them, rotate or revoke their key, retire their agent),
 * whichever door the call came through. Acting on oneself is allowed here (callers that refuse
 * it, like suspension, say so first). Otherwise the actor must outrank the target
 * (owner > admin > member), except that owners act on owners. An admin acting on an owner's
 * keys could act as the owner: mint a key for them, or rotate theirs and get its secret.
 */
export function requireActsOn(actor: Membership, target: { userId: string; role: MemberRole }, action: ActOn): void {
  if (target.userId === actor.userId) return;
  if (actor.role === "owner" || rank[actor.role] > rank[target.role]) return;
  requireRole(actor, ["owner", "admin"], action.doing);
  throw forbidden(
    `${article(actor.role, true)} ${actor.role} cannot ${action.verb} ${article(target.role)} ${target.role}`,
    "Only an owner can act on owners and admins.",
  );
}

/**
 * requireActsOn for whoever holds a key or runs an agent. A holder who is no longer a member
 * (never the case for keys minted through server/orgs) ranks as one.
 */
export async function requireActsOnHolder(db: Db, actor: Membership, holderUserId: string, action: ActOn): Promise<void> {
  const holder = await membershipOf(db, actor.orgId, holderUserId);
  requireActsOn(actor, holder ?? { userId: holderUserId, role: "member" }, action);
}

function article(role: MemberRole, capital = false): string {
  const a = role === "owner" || role === "admin" ? "an" : "a";
  return capital ? a[0]!.toUpperCase() + a.slice(1) : a;
}

/**
 * Locks the org's owner rows (in id order, so concurrent callers never deadlock) and
 * returns how many are active. Suspensions and demotions take this lock before checking
 * that an active owner remains, so two owners suspending each other cannot both succeed.
 */
export async function lockActiveOwners(tx: Db, orgId: string): Promise<{ memberId: string; status: string }[]> {
  const rows = await tx
    .select({ memberId: members.id, status: members.status })
    .from(members)
    .where(and(eq(members.orgId, orgId), eq(members.role, "owner")))
    .orderBy(asc(members.id))
    .for("update");
  return rows.filter((r) => r.status === "active");
}

/** Records an org-level write in the activity log, inside the caller's transaction. */
export async function recordOrgActivity(
  ctx: Ctx,
  tx: Db,
  kind: string,
  detail: Record<string, unknown>,
): Promise<void> {
  // Every change to a key or a membership records its activity here: the one place that tells this
  // process's key cache to read keys again (decision 078).
  // And every org-level write passes here inside its transaction: a frozen org's is refused, rolled back (./freeze.ts).
  refuseWhileFrozen(ctx.principal);
  if (/^(key|member|agent)\./.test(kind)) forgetCachedKeys();
  const cipher = await ctx.keyring.forOrg(tx, ctx.principal.orgId);
  await recordActivity({ tx, ctx, cipher, now: ctx.clock.now() }, { kind, detail });
}
