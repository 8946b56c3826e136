import { and, asc, eq, inArray, isNull, or, sql, type SQL } from "drizzle-orm";
import { z } from "zod";
import type { Db } from "../../db/client.ts";
import { agentKeys, memberRoles, members, projects, user, type MemberRole } from "../../db/schema/index.ts";
import type { Ctx } from "../context.ts";
import { forbidden, invalidInput, notFound } from "../errors.ts";
import { decodeCursor, encodeCursor, fitting, pageArgs } from "../paging.ts";
import { actorOf, lockActiveOwners, recordOrgActivity, requireActsOn, requireActsOnHolder, requireRole } from "./access.ts";
import { revokeKeyTree } from "./keys.ts";
import { checkScope, memberProjectIds, projectIdsSchema } from "./scope.ts";
import { chargeOrgAction } from "../usage/meter.ts";
import { transactionWithNotices } from "../events/index.ts";

/**
 * The people and agents of an org. People are `members` rows and are suspended (and
 * reactivated); agents are agent keys and are retired, which is final. Suspending a
 * person retires every agent they run.
 */
export const listMembersInput = z.object({
  query: z.string().trim().max(200).optional(),
  includeRetired: z.boolean().optional(),
  cursor: pageArgs.cursor,
});
export const memberIdInput = z.object({ memberId: z.string().trim().min(1, "memberId is required").max(100) });
export const setMemberRoleInput = memberIdInput.extend({ role: z.enum(memberRoles) });
export const setMemberScopeInput = memberIdInput.extend({ projectIds: projectIdsSchema });

export interface PersonView {
  kind: "human";
  memberId: string;
  userId: string;
  name: string;
  email: string;
  role: MemberRole;
  status: "active" | "suspended";
  /** The projects they (and their agents) reach, or null for all (./scope.ts). */
  projectIds: string[] | null;
  joinedAt: string;
}

export interface AgentView {
  kind: "agent";
  memberId: string;
  runtime: string;
  keyPrefix: string;
  /** The human principal this agent acts for. */
  userId: string;
  humanName: string;
  humanEmail: string;
  projectId: string | null;
  projectPrefix: string | null;
  status: "active" | "retired";
  createdAt: string;
  lastUsedAt: string | null;
}

/** Where a page of members ends: among the people (h) or the agents (a), at a creation time (as stored) and id. */
const memberPosition = z.object({ k: z.enum(["h", "a"]), t: z.string().max(40), i: z.string().max(100) });

/** `query` found in any of `fields`, case-insensitively (strpos: the needle is text, not a pattern). */
const matching = (needle: string | undefined, fields: SQL[]): SQL | undefined =>
  needle ? or(...fields.map((field) => sql`strpos(lower(coalesce(${field}, '')), ${needle}) > 0`)) : undefined;

/**
 * The org's people, then its agents, each oldest first, a page at a time: at most `limit` and
 * REPLY_BUDGET_BYTES, read as keyset ranges (people first, then agents), with `nextCursor` while
 * more follow.
 */
export async function listMembers(ctx: Ctx, raw: z.input<typeof listMembersInput> = {}, limit = 200) {
  const input = listMembersInput.parse(raw);
  const after = decodeCursor(input.cursor, memberPosition);
  await actorOf(ctx);
  const orgId = ctx.principal.orgId;
  const needle = input.query?.toLowerCase() || undefined;
  const people =
    after?.k === "a"
      ? []
      : await ctx.db
          .select({
            memberId: members.id,
            userId: members.userId,
            name: user.name,
            email: user.email,
            role: members.role,
            status: members.status,
            projectIds: memberProjectIds,
            joinedAt: members.createdAt,
            position: sql<string>`${members.createdAt}::text`,
          })
          .from(members)
          .innerJoin(user, eq(user.id, members.userId))
          .where(
            and(
              eq(members.orgId, orgId),
              matching(needle, [sql`${user.name}`, sql`${user.email}`, sql`${members.role}::text`]),
              after ? sql`(${members.createdAt}, ${members.id}) > (${after.t}::timestamptz, ${after.i})` : undefined,
            ),
          )
          .orderBy(asc(members.createdAt), asc(members.id))
          .limit(limit + 1);
  const agents =
    people.length > limit
      ? []
      : await ctx.db
          .select({
            memberId: agentKeys.id,
            runtime: agentKeys.runtime,
            keyPrefix: agentKeys.prefix,
            userId: agentKeys.userId,
            humanName: user.name,
            humanEmail: user.email,
            projectId: agentKeys.projectId,
            projectPrefix: projects.prefix,
            revokedAt: agentKeys.revokedAt,
            createdAt: agentKeys.createdAt,
            lastUsedAt: agentKeys.lastUsedAt,
            position: sql<string>`${agentKeys.createdAt}::text`,
          })
          .from(agentKeys)
          .innerJoin(user, eq(user.id, agentKeys.userId))
          .leftJoin(projects, eq(projects.id, agentKeys.projectId))
          .where(
            and(
              eq(agentKeys.orgId, orgId),
              input.includeRetired ? undefined : isNull(agentKeys.revokedAt),
              matching(needle, [sql`${agentKeys.runtime}`, sql`${agentKeys.prefix}`, sql`${user.name}`, sql`${user.email}`, sql`${projects.prefix}`]),
              after?.k === "a" ? sql`(${agentKeys.createdAt}, ${agentKeys.id}) > (${after.t}::timestamptz, ${after.i})` : undefined,
            ),
          )
          .orderBy(asc(agentKeys.createdAt), asc(agentKeys.id))
          .limit(limit + 1 - people.length);

  const listed = [
    ...people.map(({ position, ...p }) => ({
      at: { k: "h" as const, t: position, i: p.memberId },
      view: { kind: "human", ...p, joinedAt: p.joinedAt.toISOString() } satisfies PersonView as PersonView | AgentView,
    })),
    ...agents.map(({ position, revokedAt, ...a }) => ({
      at: { k: "a" as const, t: position, i: a.memberId },
      view: {
        kind: "agent",
        ...a,
        status: revokedAt ? "retired" : "active",
        createdAt: a.createdAt.toISOString(),
        lastUsedAt: a.lastUsedAt?.toISOString() ?? null,
      } satisfies AgentView as PersonView | AgentView,
    })),
  ];
  const window = listed.slice(0, limit);
  const page = window.slice(0, fitting(window.map((m) => JSON.stringify(m.view).length)));
  const last = page[page.length - 1];
  return { members: page.map((m) => m.view), ...(listed.length > page.length && last ? { nextCursor: encodeCursor(last.at) } : {}) };
}

export const findPeopleInput = z.object({
  /** Part of a name or email, case-insensitive; empty for everyone. */
  q: z.string().trim().max(200).optional(),
  /** Suspended people too (a ledger filter reaches those who were here); active ones only without it. */
  includeSuspended: z.boolean().optional(),
  ...pageArgs,
});

/** Where a page of people ends: the last person's email and member id. */
const personPosition = z.object({ e: z.string().max(400), i: z.string().max(100) });

export interface PersonChoice {
  userId: string;
  name: string;
  email: string;
}

/**
 * The org's active people (suspended too with `includeSuspended`) matching `q` (in name or email), by email, a page at a time (at most
 * `limit`, default 50): what a picker offers (a reviewer, a person to filter by), so a person in
 * an org of any size is found by searching, never cut off after the first page.
 */
export async function findPeople(ctx: Ctx, raw: z.input<typeof findPeopleInput> = {}): Promise<{ people: PersonChoice[]; nextCursor?: string }> {
  const input = findPeopleInput.parse(raw);
  const limit = input.limit ?? 50;
  const after = decodeCursor(input.cursor, personPosition);
  await actorOf(ctx);
  const rows = await peopleOfOrg(
    ctx,
    input.includeSuspended,
    matching(input.q?.toLowerCase() || undefined, [sql`${user.name}`, sql`${user.email}`]),
    after ? sql`(${user.email}, ${members.id}) > (${after.e}, ${after.i})` : undefined,
  )
    .orderBy(asc(user.email), asc(members.id))
    .limit(limit + 1);
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    people: page.map(({ userId, name, email }) => ({ userId, name, email })),
    ...(rows.length > limit && last ? { nextCursor: encodeCursor({ e: last.email, i: last.memberId }) } : {}),
  };
}

/** Which of `keys` (user ids or emails) name a person of the org (active, or any with `includeSuspended`): a picker's current choices, wherever they sort. */
export async function peopleNamed(ctx: Ctx, keys: string[], options: { includeSuspended?: boolean } = {}): Promise<PersonChoice[]> {
  const wanted = [...new Set(keys.map((k) => k.trim()).filter((k) => k !== ""))].slice(0, 200);
  if (wanted.length === 0) return [];
  await actorOf(ctx);
  const rows = await peopleOfOrg(ctx, options.includeSuspended, or(inArray(members.userId, wanted), inArray(user.email, wanted.map((k) => k.toLowerCase()))));
  return rows.map(({ userId, name, email }) => ({ userId, name, email }));
}

/** The org's people (active, or any with `includeSuspended`) meeting `conditions`: the one query behind the pickers. */
function peopleOfOrg(ctx: Ctx, includeSuspended: boolean | undefined, ...conditions: (SQL | undefined)[]) {
  return ctx.db
    .select({ memberId: members.id, userId: members.userId, name: user.name, email: user.email })
    .from(members)
    .innerJoin(user, eq(user.id, members.userId))
    .where(and(eq(members.orgId, ctx.principal.orgId), includeSuspended ? undefined : eq(members.status, "active"), ...conditions))
    .$dynamic();
}

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
    const actor = await actorOf(ctx, tx);
    requireRole(actor, ["owner", "admin"], "reactivating a member");
    const target = await personInOrg(tx, orgId, memberId);
    requireActsOn(actor, target, { doing: "reactivating a member", verb: "reactivate" });
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
    const actor = await actorOf(ctx, tx);
    requireRole(actor, ["owner", "admin"], "scoping a member to projects");
    const target = await personInOrg(tx, orgId, memberId);
    requireActsOn(actor, target, { doing: "scoping a member to projects", verb: "scope" });
    const scope = await checkScope(tx, orgId, target.role, projectIds);
    await tx.update(members).set({ projectIds: scope }).where(eq(members.id, target.memberId));
    await recordOrgActivity(ctx, tx, "member.scoped", { memberId, projectIds: scope });
    await chargeOrgAction(tx, ctx, "set_member_scope");
    return { memberId, projectIds: scope };
  });
}
