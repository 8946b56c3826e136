import { beforeEach, describe, expect, it } from "vitest";
import { systemPrincipal, type Ctx } from "../context.ts";
import { withPrincipal } from "../with-principal.ts";
import { seedOrg, type SeededOrg } from "../testing/fixtures.ts";
import { useTestServices } from "../testing/database.ts";
import { membershipOf } from "./access.ts";
import { authenticateAgentKey } from "./key-auth.ts";
import { addPeople, peopleOf, refusal, type Person } from "./testing.ts";
import { findPeople, listMembers, peopleNamed, reactivateMember, retireMember, setMemberRole, suspendMember } from "./members.ts";
import { mintKey } from "./keys.ts";
import { mintSessionKey } from "./session.ts";

const env = useTestServices();

let org: SeededOrg;
let as: Record<Person, Ctx>;
let memberIds: Record<Person, string>;

beforeEach(async () => {
  org = await seedOrg(env.services);
  ({ as, memberIds } = await peopleOf(env.services, org));
});

describe("listMembers", () => {
  it("lists people with roles and agents with the human they act for, filtered by query", async () => {
    const { members } = await listMembers(org.agents.bob.ctx);
    const people = members.filter((m) => m.kind === "human");
    const agents = members.filter((m) => m.kind === "agent");
    expect(people.map((p) => p.kind === "human" && p.role).sort()).toEqual(["member", "member", "owner"]);
    expect(agents).toHaveLength(3);
    const codex = agents.find((a) => a.kind === "agent" && a.runtime === "codex");
    expect(codex).toMatchObject({ status: "active", userId: org.agents.bob.userId, projectPrefix: "RTSC" });
    const onlyBob = await listMembers(as.alice, { query: "bob" });
    expect(onlyBob.members.every((m) => (m.kind === "human" ? m.email : m.humanEmail).startsWith("bob"))).toBe(true);
    expect(onlyBob.members).toHaveLength(2);
  });

  it("pages in SQL, people then agents: every member once across the pages, the filter applied in the query", async () => {
    for (let i = 0; i < 4; i++) await mintKey(as.bob, { projectId: org.projectId, runtime: `bob-extra-${i}` });
    const whole = (await listMembers(as.alice)).members.map((m) => m.memberId);
    expect(whole).toHaveLength(10);
    const walk = async (input: { query?: string }, limit: number) => {
      const seen: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await listMembers(as.alice, { ...input, cursor }, limit);
        expect(page.members.length).toBeLessThanOrEqual(limit);
        seen.push(...page.members.map((m) => m.memberId));
        cursor = page.nextCursor;
      } while (cursor);
      return seen;
    };
    for (const limit of [1, 2, 3]) expect(await walk({}, limit)).toEqual(whole);
    // bob himself and his five agents; a needle with LIKE's wildcards in it is text.
    expect(await walk({ query: "BOB" }, 2)).toEqual((await listMembers(as.alice, { query: "bob" })).members.map((m) => m.memberId));
    expect(await walk({ query: "bob" }, 2)).toHaveLength(6);
    expect((await listMembers(as.alice, { query: "b%b" })).members).toEqual([]);
  });
});

describe("findPeople", () => {
  it("reaches every active person of an org past 200 by search and by page, and names the ones a picker holds", async () => {
    const added = await addPeople(env.services.db, org.orgId, 250, "crowd");
    const first = await findPeople(as.alice);
    expect(first.people).toHaveLength(50);
    expect(first.nextCursor).toBeDefined();
    // The 250th, far past any first page, is one search away, and a page walk meets everyone once, by email.
    const last = added[249]!;
    expect((await findPeople(as.alice, { q: "CROWD-249" })).people).toEqual([last]);
    expect((await findPeople(as.alice, { q: "crowd 249" })).people).toEqual([last]);
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await findPeople(as.bob, { q: "crowd-", cursor, limit: 200 });
      seen.push(...page.people.map((p) => p.email));
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).toEqual(added.map((p) => p.email));
    // Suspended people only when asked (a ledger filter); a needle with LIKE's wildcards in it is text.
    await suspendMember(as.alice, { memberId: memberIds.carol });
    const carol = org.agents.carol.userId;
    expect((await findPeople(as.alice, { q: "carol" })).people).toEqual([]);
    expect((await findPeople(as.alice, { q: "carol", includeSuspended: true })).people.map((p) => p.userId)).toEqual([carol]);
    expect((await findPeople(as.alice, { q: "crowd%" })).people).toEqual([]);
    expect(await peopleNamed(as.alice, [last.email.toUpperCase(), added[0]!.userId, "nobody@example.com", carol])).toEqual(
      expect.arrayContaining([last, added[0]]),
    );
    expect(await peopleNamed(as.alice, [carol])).toEqual([]);
    expect(await peopleNamed(as.alice, [carol], { includeSuspended: true })).toHaveLength(1);
  });
});

describe("suspendMember", () => {
  it("suspends a member and retires their agents at once", async () => {
    const result = await suspendMember(as.alice, { memberId: memberIds.bob });
    expect(result).toMatchObject({ status: "suspended", retiredAgents: 1, changed: true });
    expect(await authenticateAgentKey(env.services.db, org.agents.bob.key)).toBeNull();
    const { members } = await listMembers(as.alice, { includeRetired: true });
    expect(members.find((m) => m.memberId === memberIds.bob)).toMatchObject({ status: "suspended" });
    expect(members.find((m) => m.memberId === org.agents.bob.principal.keyId)).toMatchObject({ status: "retired" });
    // Reactivation restores the person, not the retired agents.
    expect(await reactivateMember(as.alice, { memberId: memberIds.bob })).toMatchObject({ status: "active", changed: true });
    expect(await authenticateAgentKey(env.services.db, org.agents.bob.key)).toBeNull();
  });

  it("refuses a member suspending anyone, naming the role needed", async () => {
    const error = await refusal(suspendMember(as.bob, { memberId: memberIds.carol }));
    expect(error.code).toBe("FORBIDDEN");
    expect(error.message).toContain("owner or admin");
    // Also through the member's agent key.
    expect((await refusal(suspendMember(org.agents.bob.ctx, { memberId: memberIds.carol }))).code).toBe("FORBIDDEN");
    expect((await membershipOf(env.services.db, org.orgId, org.agents.carol.userId))!.status).toBe("active");
  });

  it("refuses an admin suspending the owner or a peer admin, but lets them suspend a member", async () => {
    await setMemberRole(as.alice, { memberId: memberIds.bob, role: "admin" });
    await setMemberRole(as.alice, { memberId: memberIds.carol, role: "admin" });
    const onOwner = await refusal(suspendMember(as.bob, { memberId: memberIds.alice }));
    expect(onOwner.code).toBe("FORBIDDEN");
    expect(onOwner.message).toBe("An admin cannot suspend an owner");
    expect((await refusal(suspendMember(as.bob, { memberId: memberIds.carol }))).message).toBe("An admin cannot suspend an admin");
    await setMemberRole(as.alice, { memberId: memberIds.carol, role: "member" });
    expect(await suspendMember(as.bob, { memberId: memberIds.carol })).toMatchObject({ status: "suspended" });
  });

  it("refuses self-suspension and suspending the last active owner", async () => {
    expect((await refusal(suspendMember(as.alice, { memberId: memberIds.alice }))).message).toContain("yourself");
    const operator = withPrincipal(env.services, systemPrincipal(org.orgId));
    const last = await refusal(suspendMember(operator, { memberId: memberIds.alice }));
    expect(last.code).toBe("FORBIDDEN");
    expect(last.message).toContain("last active owner");
    expect((await refusal(setMemberRole(operator, { memberId: memberIds.alice, role: "member" }))).message).toContain("last active owner");
  });

  it("lets exactly one of two owners suspending each other at the same time succeed", async () => {
    await setMemberRole(as.alice, { memberId: memberIds.bob, role: "owner" });
    const results = await Promise.allSettled([
      suspendMember(as.alice, { memberId: memberIds.bob }),
      suspendMember(as.bob, { memberId: memberIds.alice }),
    ]);
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    const alice = await membershipOf(env.services.db, org.orgId, org.agents.alice.userId);
    const bob = await membershipOf(env.services.db, org.orgId, org.agents.bob.userId);
    expect([alice!.status, bob!.status].sort()).toEqual(["active", "suspended"]);
  });

  it("retires an agent together with the session keys minted from it, however deep", async () => {
    const session = await mintSessionKey(org.agents.carol.ctx, { label: "worktree-2" });
    expect(await authenticateAgentKey(env.services.db, session.key)).not.toBeNull();
    const sessionCtx = withPrincipal(env.services, (await authenticateAgentKey(env.services.db, session.key))!);
    const nested = await mintSessionKey(sessionCtx, { label: "subagent" });
    await retireMember(as.alice, { memberId: org.agents.carol.principal.keyId! });
    expect(await authenticateAgentKey(env.services.db, org.agents.carol.key)).toBeNull();
    expect(await authenticateAgentKey(env.services.db, session.key)).toBeNull();
    expect(await authenticateAgentKey(env.services.db, nested.key)).toBeNull();
  });

  it("tells people from agents apart", async () => {
    const agentId = org.agents.carol.principal.keyId!;
    expect((await refusal(suspendMember(as.alice, { memberId: agentId }))).code).toBe("INVALID_INPUT");
    expect((await refusal(retireMember(as.alice, { memberId: memberIds.carol }))).code).toBe("INVALID_INPUT");
    expect((await refusal(suspendMember(as.alice, { memberId: "no-such-member" }))).code).toBe("NOT_FOUND");
  });

  it("does not reach people of another org", async () => {
    const other = await seedOrg(env.services);
    const otherMember = (await membershipOf(env.services.db, other.orgId, other.agents.bob.userId))!.memberId;
    expect((await refusal(suspendMember(as.alice, { memberId: otherMember }))).code).toBe("NOT_FOUND");
  });
});

describe("retireMember", () => {
  it("lets a member retire their own agent but not another person's", async () => {
    const bobAgent = org.agents.bob.principal.keyId!;
    const carolAgent = org.agents.carol.principal.keyId!;
    expect((await refusal(retireMember(as.bob, { memberId: carolAgent }))).code).toBe("FORBIDDEN");
    expect(await authenticateAgentKey(env.services.db, org.agents.carol.key)).not.toBeNull();
    expect(await retireMember(as.bob, { memberId: bobAgent })).toMatchObject({ status: "retired", changed: true });
    expect(await authenticateAgentKey(env.services.db, org.agents.bob.key)).toBeNull();
    expect(await retireMember(as.alice, { memberId: carolAgent })).toMatchObject({ status: "retired", changed: true });
    expect(await retireMember(as.alice, { memberId: carolAgent })).toMatchObject({ changed: false });
  });

  it("lets an admin retire an ordinary member's agent, never the owner's or a peer admin's", async () => {
    await setMemberRole(as.alice, { memberId: memberIds.bob, role: "admin" });
    await setMemberRole(as.alice, { memberId: memberIds.carol, role: "admin" });
    for (const who of ["alice", "carol"] as const) {
      const error = await refusal(retireMember(as.bob, { memberId: org.agents[who].principal.keyId! }));
      expect(error.code).toBe("FORBIDDEN");
      expect(await authenticateAgentKey(env.services.db, org.agents[who].key)).not.toBeNull();
    }
    // Through the admin's own agent key too (the MCP door's principal).
    expect((await refusal(retireMember(org.agents.bob.ctx, { memberId: org.agents.alice.principal.keyId! }))).message).toBe(
      "An admin cannot retire an agent of an owner",
    );
    await setMemberRole(as.alice, { memberId: memberIds.carol, role: "member" });
    expect(await retireMember(as.bob, { memberId: org.agents.carol.principal.keyId! })).toMatchObject({ changed: true });
  });
});

describe("setMemberRole", () => {
  it("is for owners only", async () => {
    await setMemberRole(as.alice, { memberId: memberIds.bob, role: "admin" });
    expect((await refusal(setMemberRole(as.bob, { memberId: memberIds.carol, role: "admin" }))).message).toContain("owner");
  });
});
