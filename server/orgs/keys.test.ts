import { beforeEach, describe, expect, it } from "vitest";
import type { Ctx } from "../context.ts";
import { withPrincipal } from "../with-principal.ts";
import { seedOrg, type SeededOrg } from "../testing/fixtures.ts";
import { useTestServices } from "../testing/database.ts";
import { authenticateAgentKey } from "./key-auth.ts";
import { listKeys, mintKey, revokeKey, rotateKey } from "./keys.ts";
import { setMemberRole, suspendMember } from "./members.ts";
import { mintSessionKey } from "./session.ts";
import { peopleOf, refusal, type Person } from "./testing.ts";

const env = useTestServices();

let org: SeededOrg;
let as: Record<Person, Ctx>;
let memberIds: Record<Person, string>;
beforeEach(async () => {
  org = await seedOrg(env.services);
  ({ as, memberIds } = await peopleOf(env.services, org));
});

describe("mintKey", () => {
  it("mints a key for the caller that authenticates as them, in the chosen project", async () => {
    const minted = await mintKey(as.bob, { projectId: org.projectId, runtime: "codex" });
    expect(minted.key).toMatch(/^rtsc_/);
    const principal = await authenticateAgentKey(env.services.db, minted.key);
    expect(principal).toMatchObject({ userId: org.agents.bob.userId, projectId: org.projectId, runtime: "codex" });
  });

  it("lets owners and admins mint for others but not members", async () => {
    const carol = org.agents.carol.userId;
    expect((await refusal(mintKey(as.bob, { userId: carol, runtime: "x" }))).code).toBe("FORBIDDEN");
    const byOwner = await mintKey(as.alice, { userId: carol, runtime: "ci" });
    expect((await authenticateAgentKey(env.services.db, byOwner.key))?.userId).toBe(carol);
  });

  it("lets a member lower their own key's claim cap but not raise it above the default; an admin may", async () => {
    const cap = env.services.config.CLAIM_CAP_DEFAULT;
    const lower = await mintKey(as.bob, { runtime: "codex", claimCap: 1 });
    expect((await authenticateAgentKey(env.services.db, lower.key))?.claimCap).toBe(1);
    const error = await refusal(mintKey(as.bob, { runtime: "codex", claimCap: cap + 1 }));
    expect(error.code).toBe("FORBIDDEN");
    expect(error.message).toContain(`claim cap above ${cap}`);
    const byOwner = await mintKey(as.alice, { userId: org.agents.bob.userId, runtime: "ci", claimCap: 1000 });
    expect((await authenticateAgentKey(env.services.db, byOwner.key))?.claimCap).toBe(1000);
  });

  it("refuses a project of another org and a suspended holder", async () => {
    const other = await seedOrg(env.services);
    expect((await refusal(mintKey(as.bob, { projectId: other.projectId }))).code).toBe("NOT_FOUND");
    await suspendMember(as.alice, { memberId: memberIds.carol });
    expect((await refusal(mintKey(as.alice, { userId: org.agents.carol.userId }))).code).toBe("FORBIDDEN");
  });
});

describe("revokeKey", () => {
  it("refuses a member revoking another member's key", async () => {
    const carolKey = org.agents.carol.principal.keyId!;
    const error = await refusal(revokeKey(as.bob, { keyId: carolKey }));
    expect(error.code).toBe("FORBIDDEN");
    expect(error.message).toBe("revoking another person's key needs the owner or admin role; you are a member");
    expect(await authenticateAgentKey(env.services.db, org.agents.carol.key)).not.toBeNull();
  });

  it("lets a member revoke their own key and an admin revoke an ordinary member's", async () => {
    expect(await revokeKey(as.bob, { keyId: org.agents.bob.principal.keyId! })).toMatchObject({ changed: true });
    expect(await authenticateAgentKey(env.services.db, org.agents.bob.key)).toBeNull();
    await setMemberRole(as.alice, { memberId: memberIds.bob, role: "admin" });
    expect(await revokeKey(as.bob, { keyId: org.agents.carol.principal.keyId! })).toMatchObject({ changed: true });
    expect(await authenticateAgentKey(env.services.db, org.agents.carol.key)).toBeNull();
  });
});

describe("an admin cannot act as the owner or a peer admin through their keys", () => {
  beforeEach(async () => {
    await setMemberRole(as.alice, { memberId: memberIds.bob, role: "admin" });
  });

  it("refuses minting a key for the owner or another admin, rotating or revoking theirs", async () => {
    const alice = org.agents.alice;
    const mint = await refusal(mintKey(as.bob, { userId: alice.userId, runtime: "x" }));
    expect(mint).toMatchObject({ code: "FORBIDDEN", message: "An admin cannot mint a key for an owner" });
    const rotate = await refusal(rotateKey(as.bob, { keyId: alice.principal.keyId! }));
    expect(rotate).toMatchObject({ code: "FORBIDDEN", message: "An admin cannot rotate a key of an owner" });
    expect((await refusal(revokeKey(as.bob, { keyId: alice.principal.keyId! }))).code).toBe("FORBIDDEN");
    await setMemberRole(as.alice, { memberId: memberIds.carol, role: "admin" });
    expect((await refusal(mintKey(as.bob, { userId: org.agents.carol.userId }))).message).toBe("An admin cannot mint a key for an admin");
    // Nothing changed: the owner's key still works and is their only one.
    expect(await authenticateAgentKey(env.services.db, alice.key)).toMatchObject({ userId: alice.userId });
    expect((await listKeys(as.alice)).keys.filter((k) => k.userId === alice.userId)).toHaveLength(1);
  });

  it("lets owners act on other owners' keys and everyone on their own", async () => {
    await setMemberRole(as.alice, { memberId: memberIds.carol, role: "owner" });
    const carolKey = await mintKey(as.alice, { userId: org.agents.carol.userId, runtime: "ci" });
    expect(await rotateKey(as.alice, { keyId: carolKey.keyId })).toMatchObject({ replacedKeyId: carolKey.keyId });
    expect(await rotateKey(as.bob, { keyId: org.agents.bob.principal.keyId! })).toMatchObject({ runtime: "codex" });
  });
});

describe("session keys follow the key they were minted from", () => {
  /** A session key of bob's agent, and a session key minted with that session key. */
  async function sessionChain() {
    const first = await mintSessionKey(org.agents.bob.ctx, { label: "worktree" });
    const firstCtx = withPrincipal(env.services, (await authenticateAgentKey(env.services.db, first.key))!);
    const second = await mintSessionKey(firstCtx, { label: "subagent" });
    for (const key of [first.key, second.key]) expect(await authenticateAgentKey(env.services.db, key)).not.toBeNull();
    return [first.key, second.key];
  }

  it("revoking a key revokes its session keys, however deep", async () => {
    const sessions = await sessionChain();
    await revokeKey(as.bob, { keyId: org.agents.bob.principal.keyId! });
    for (const key of sessions) expect(await authenticateAgentKey(env.services.db, key)).toBeNull();
    // Keys of other agents are not touched.
    expect(await authenticateAgentKey(env.services.db, org.agents.carol.key)).not.toBeNull();
  });

  it("rotating a key ends its session keys too; the new key works", async () => {
    const sessions = await sessionChain();
    const rotated = await rotateKey(as.bob, { keyId: org.agents.bob.principal.keyId! });
    for (const key of sessions) expect(await authenticateAgentKey(env.services.db, key)).toBeNull();
    expect(await authenticateAgentKey(env.services.db, rotated.key)).not.toBeNull();
  });
});

describe("rotateKey", () => {
  it("replaces the key in one step: the old stops working, the new acts the same", async () => {
    const rotated = await rotateKey(as.bob, { keyId: org.agents.bob.principal.keyId! });
    expect(await authenticateAgentKey(env.services.db, org.agents.bob.key)).toBeNull();
    const principal = await authenticateAgentKey(env.services.db, rotated.key);
    expect(principal).toMatchObject({ userId: org.agents.bob.userId, runtime: "codex", projectId: org.projectId });
    expect((await refusal(rotateKey(as.bob, { keyId: org.agents.bob.principal.keyId! }))).code).toBe("CONFLICT");
  });

  it("lets one of several concurrent rotations of a key win", async () => {
    const keyId = org.agents.carol.principal.keyId!;
    const results = await Promise.allSettled([1, 2, 3, 4].map(() => rotateKey(as.carol, { keyId })));
    const won = results.filter((r) => r.status === "fulfilled");
    expect(won).toHaveLength(1);
    const { keys } = await listKeys(as.carol);
    expect(keys.filter((k) => k.status === "active")).toHaveLength(1);
  });

  it("refuses a member rotating someone else's key", async () => {
    expect((await refusal(rotateKey(as.carol, { keyId: org.agents.bob.principal.keyId! }))).code).toBe("FORBIDDEN");
  });
});

describe("listKeys", () => {
  it("shows members their own keys and owners every key, never a secret", async () => {
    const mine = await listKeys(as.bob);
    expect(mine.keys.map((k) => k.userId)).toEqual([org.agents.bob.userId]);
    const all = await listKeys(as.alice);
    expect(all.keys).toHaveLength(3);
    expect(JSON.stringify(all)).not.toContain(org.agents.bob.key);
    await revokeKey(as.bob, { keyId: org.agents.bob.principal.keyId! });
    expect((await listKeys(as.bob)).keys).toHaveLength(0);
    expect((await listKeys(as.bob, { includeRevoked: true })).keys[0]).toMatchObject({ status: "revoked" });
  });

  it("pages in SQL, newest first: every key once across the pages, keys minted in one transaction included", async () => {
    // One transaction: one now(), so every key's created_at is the same instant and the id decides.
    await env.services.db.transaction(async (tx) => {
      for (let i = 0; i < 5; i++) await mintKey({ ...as.alice, db: tx }, { projectId: org.projectId, runtime: `burst-${i}` });
    });
    for (let i = 0; i < 3; i++) await mintKey(as.alice, { projectId: org.projectId, runtime: `later-${i}` });
    const whole = (await listKeys(as.alice)).keys.map((k) => k.keyId);
    expect(whole).toHaveLength(11);
    const paged: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await listKeys(as.alice, { limit: 2, cursor });
      expect(page.keys.length).toBeLessThanOrEqual(2);
      paged.push(...page.keys.map((k) => k.keyId));
      cursor = page.nextCursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(6);
    expect(paged).toEqual(whole);
    expect((await refusal(listKeys(as.alice, { cursor: "not-a-cursor" }))).code).toBe("INVALID_INPUT");
  });
});
