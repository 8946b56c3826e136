import { and, asc, eq, isNull } from "drizzle-orm";
import { z } from "zod";
import type { Db } from "../../db/client.ts";
import { agentKeys, memberRoles, members, user } from "../../db/schema/index.ts";
import type { Ctx } from "../context.ts";
import { forbidden, invalidInput, notFound } from "../errors.ts";
import { actorOf, lockActiveOwners, recordOrgActivity, requireActsOn, requireActsOnHolder, requireRole } from "./access.ts";
import { revokeKeyTree } from "./keys.ts";
import { checkScope, projectIdsSchema } from "./scope.ts";
import { chargeOrgAction } from "../usage/meter.ts";
import { transactionWithNotices } from "../events/index.ts";

/**
 * Changes to an org's members: people are suspended and reactivated, their role and project
 * scope set; agents are retired, which is final. Suspending a person retires every agent they run.
 */
export const memberIdInput = z.object({ memberId: z.string().trim().min(1, "memberId is required").max(100) });
export const setMemberRoleInput = memberIdInput.extend({ role: z.enum(memberRoles) });
export const setMemberScopeInput = memberIdInput.extend({ projectIds: projectIdsSchema });

async function personInOrg(tx: Db, orgId: string, memberId: string) {
  const rows = await tx
    .select({ memberId: members.id, userId: members.userId, role: members.role, status: members.status, email: user.email })
    .from(members)
    .innerJoin(user, eq(user.id, members.userId))
    .where(and(eq(members.orgId, orgId), eq(members.id, memberId)));
  if (rows[0]) return rows[0];
  const agent = await tx
    .select({ id: agentKeys.id })
    .from(agentKeys)
    .where(and(eq(agentKeys.orgId, orgId), eq(agentKeys.id, memberId)));
  if (agent[0]) {
    throw invalidInput(`member ${memberId} is an agent, not a person`, "Agents are retired (retire_member), not suspended.");
  }
  throw notFound(`member ${memberId}`, "List the org's people with list_members.");
}

/** The person an owner or admin acts on, refused unless the actor may (requireRole, then requireActsOn). */
async function personActedOn(ctx: Ctx, tx: Db, memberId: string, action: { doing: string; verb: string }) {
  const actor = await actorOf(ctx, tx);
  requireRole(actor, ["owner", "admin"], action.doing);
  const target = await personInOrg(tx, ctx.principal.orgId, memberId);
  requireActsOn(actor, target, action);
  return target;
}

/**
 * Revokes every live key a person holds in the org; returns how many. Their key trees' locks
 * first, in id order, so a concurrent revocation in one of them (which takes its lock first
 * too) cannot deadlock with this.
 */
async function retireAgentsOf(tx: Db, orgId: string, userId: string, now: Date): Promise<number> {
  await tx
    .select({ id: agentKeys.id })
    .from(agentKeys)
    .where(and(eq(agentKeys.orgId, orgId), eq(agentKeys.userId, userId), isNull(agentKeys.parentKeyId)))
    .orderBy(asc(agentKeys.id))
    .for("no key update");
  const retired = await tx
    .update(agentKeys)
    .set({ revokedAt: now })
    .where(and(eq(agentKeys.orgId, orgId), eq(agentKeys.userId, userId), isNull(agentKeys.revokedAt)))
    .returning({ id: agentKeys.id });
  return retired.length;
}

/**
 * Suspends a person (owner or admin; an admin only acts on ordinary members). Their
 * agents are retired in the same transaction. Refuses self-suspension and the last
 * active owner.
 */
export async function suspendMember(ctx: Ctx, raw: z.input<typeof memberIdInput>) {
  const { memberId } = memberIdInput.parse(raw);
  const orgId = ctx.principal.orgId;
  return transactionWithNotices(ctx.db, async (tx) => {
    const activeOwners = await lockActiveOwners(tx, orgId);
    const actor = await actorOf(ctx, tx);
    requireRole(actor, ["owner", "admin"], "suspending a member");
    const target = await personInOrg(tx, orgId, memberId);
    if (target.memberId === actor.memberId) {
      throw forbidden("you cannot suspend yourself", "Ask another owner or admin.");
    }
    requireActsOn(actor, target, { doing: "suspending a member", verb: "suspend" });
    if (target.status === "suspended") return { memberId, status: "suspended" as const, retiredAgents: 0, changed: false };
    if (target.role === "owner" && !activeOwners.some((o) => o.memberId !== target.memberId)) {
      throw forbidden("the last active owner of an org cannot be suspended", "Make someone else an owner first.");
    }
    await tx.update(members).set({ status: "suspended" }).where(eq(members.id, target.memberId));
    const retiredAgents = await retireAgentsOf(tx, orgId, target.userId, ctx.clock.now());
    await recordOrgActivity(ctx, tx, "member.suspended", { memberId, email: target.email, retiredAgents });
    await chargeOrgAction(tx, ctx, "suspend_member");
    await ctx.events.publish(tx, { orgId, kind: "member.suspended", memberId });
    return { memberId, status: "suspended" as const, retiredAgents, changed: true };
  });
}

/** Reactivates a suspended person. Their retired agents stay retired: they mint new keys. */
export async function reactivateMember(ctx: Ctx, raw: z.input<typeof memberIdInput>) {
  const { memberId } = memberIdInput.parse(raw);
  const orgId = ctx.principal.orgId;
  return transactionWithNotices(ctx.db, async (tx) => {
    const target = await personActedOn(ctx, tx, memberId, { doing: "reactivating a member", verb: "reactivate" });
    if (target.status === "active") return { memberId, status: "active" as const, changed: false };
    await tx.update(members).set({ status: "active" }).where(eq(members.id, target.memberId));
    await recordOrgActivity(ctx, tx, "member.reactivated", { memberId, email: target.email });
    await chargeOrgAction(tx, ctx, "reactivate_member");
    await ctx.events.publish(tx, { orgId, kind: "member.reactivated", memberId });
    return { memberId, status: "active" as const, changed: true };
  });
}

/**
 * Retires an agent (revokes its key for good). Anyone retires their own; owners any agent,
 * admins those of ordinary members (requireActsOn).
 */
export async function retireMember(ctx: Ctx, raw: z.input<typeof memberIdInput>) {
  const { memberId } = memberIdInput.parse(raw);
  const orgId = ctx.principal.orgId;
  return transactionWithNotices(ctx.db, async (tx) => {
    const actor = await actorOf(ctx, tx);
    const rows = await tx
      .select({ id: agentKeys.id, userId: agentKeys.userId, revokedAt: agentKeys.revokedAt, prefix: agentKeys.prefix })
      .from(agentKeys)
      .where(and(eq(agentKeys.orgId, orgId), eq(agentKeys.id, memberId)));
    const agent = rows[0];
    if (!agent) {
      const person = await tx.select({ id: members.id }).from(members).where(and(eq(members.orgId, orgId), eq(members.id, memberId)));
      if (person[0]) throw invalidInput(`member ${memberId} is a person, not an agent`, "People are suspended (suspend_member), not retired.");
      throw notFound(`member ${memberId}`, "List the org's agents with list_members.");
    }
    await requireActsOnHolder(tx, actor, agent.userId, { doing: "retiring another person's agent", verb: "retire an agent of" });
    if (agent.revokedAt) return { memberId, status: "retired" as const, changed: false };
    await revokeKeyTree(tx, orgId, agent.id, ctx.clock.now());
    await recordOrgActivity(ctx, tx, "agent.retired", { memberId, keyPrefix: agent.prefix });
    await chargeOrgAction(tx, ctx, "retire_member");
    await ctx.events.publish(tx, { orgId, kind: "agent.retired", memberId });
    return { memberId, status: "retired" as const, changed: true };
  });
}

/** Changes a person's role. Owner only; the last active owner cannot be demoted. */
export async function setMemberRole(ctx: Ctx, raw: z.input<typeof setMemberRoleInput>) {
  const { memberId, role } = setMemberRoleInput.parse(raw);
  const orgId = ctx.principal.orgId;
  return transactionWithNotices(ctx.db, async (tx) => {
    const activeOwners = await lockActiveOwners(tx, orgId);
    const actor = await actorOf(ctx, tx);
    requireRole(actor, ["owner"], "changing a member's role");
    const target = await personInOrg(tx, orgId, memberId);
    if (target.role === role) return { memberId, role, changed: false };
    if (target.role === "owner" && !activeOwners.some((o) => o.memberId !== target.memberId)) {
      throw forbidden("the last active owner of an org cannot be demoted", "Make someone else an owner first.");
    }
    await tx.update(members).set({ role }).where(eq(members.id, target.memberId));
    await recordOrgActivity(ctx, tx, "member.role_changed", { memberId, from: target.role, to: role });
    await chargeOrgAction(tx, ctx, "set_member_role");
    return { memberId, role, changed: true };
  });
}

/**
 * Scopes a person to some projects, or (null) to all (owner or admin, acting on people they
 * outrank: requireActsOn). Only members are scoped (./scope.ts, checkScope). Their agents act
 * within it from their next request: every request reads the scope with the membership.
 */
export async function setMemberScope(ctx: Ctx, raw: z.input<typeof setMemberScopeInput>) {
  const { memberId, projectIds } = setMemberScopeInput.parse(raw);
  const orgId = ctx.principal.orgId;
  return transactionWithNotices(ctx.db, async (tx) => {
    const target = await personActedOn(ctx, tx, memberId, { doing: "scoping a member to projects", verb: "scope" });
    const scope = await checkScope(tx, orgId, target.role, projectIds);
    await tx.update(members).set({ projectIds: scope }).where(eq(members.id, target.memberId));
    await recordOrgActivity(ctx, tx, "member.scoped", { memberId, projectIds: scope });
    await chargeOrgAction(tx, ctx, "set_member_scope");
    return { memberId, projectIds: scope };
  });
}
