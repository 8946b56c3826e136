import { and, asc, eq, isNull, sql } from "drizzle-orm";
import { z } from "zod";
import { agentKeys, members, projects, user, type MemberRole } from "../../db/schema/index.ts";
import type { Ctx } from "../context.ts";
import { decodeCursor, encodeCursor, fitting, pageArgs } from "../paging.ts";
import { actorOf } from "./access.ts";
import { memberProjectIds } from "./scope.ts";
import { matching } from "./people-pickers.ts";

/**
 * The people and agents of an org. People are `members` rows and are suspended (and
 * reactivated); agents are agent keys and are retired, which is final. Suspending a
 * person retires every agent they run. Listing them is here; the changes are in
 * member-changes.ts, the pickers' searches in people-pickers.ts.
 */
export {
  memberIdInput,
  reactivateMember,
  retireMember,
  setMemberRole,
  setMemberRoleInput,
  setMemberScope,
  setMemberScopeInput,
  suspendMember,
} from "./member-changes.ts";
export { findPeople, findPeopleInput, peopleNamed, type PersonChoice } from "./people-pickers.ts";

export const listMembersInput = z.object({
  query: z.string().trim().max(200).optional(),
  includeRetired: z.boolean().optional(),
  cursor: pageArgs.cursor,
});

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
