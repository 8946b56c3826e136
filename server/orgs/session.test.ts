import fs from "node:fs";
import path from "node:path";
import { eq, inArray, sql } from "drizzle-orm";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Ctx, Services } from "../context.ts";
import { withPrincipal } from "../with-principal.ts";
import { seedOrg, type SeededOrg } from "../testing/fixtures.ts";
import { createTestDatabase, servicesFor, testConfig, type TestDatabase } from "../testing/db.ts";
import { migrationsFolder } from "../../db/client.ts";
import { agentKeys, oauthClient, oauthGrants } from "../../db/schema/index.ts";
import { authenticateAgentKey } from "./key-auth.ts";
import { mintAgentKey } from "./mint-key.ts";
import { listKeys, mintKey, revokeKey, rotateKey } from "./keys.ts";
import { reactivateMember, retireMember, suspendMember } from "./members.ts";
import { mintSessionKey, whoami } from "./session.ts";
import { peopleOf, refusal, type Person } from "./testing.ts";

/**
 * Session keys never outlive the key they were minted from. On PostgreSQL the mints and the
 * revocations really run at once (a pool of 20 connections); on PGlite they take turns.
 */
let testDb: TestDatabase;
let services: Services;
let org: SeededOrg;
let as: Record<Person, Ctx>;
let memberIds: Record<Person, string>;

beforeAll(async () => {
  testDb = await createTestDatabase({ max: 20 });
  // A cap above what the races mint: the cap has its own test.
  services = servicesFor(testDb.database, { config: testConfig({ SESSION_KEY_CAP: "1000" }) });
});
afterAll(() => testDb?.close());
beforeEach(async () => {
  org = await seedOrg(services);
  ({ as, memberIds } = await peopleOf(services, org));
});

const ctxOf = async (key: string, on: Services = services) => withPrincipal(on, (await authenticateAgentKey(on.db, key))!);
const live = async (keys: string[]) => (await Promise.all(keys.map((k) => authenticateAgentKey(services.db, k)))).filter(Boolean).length;

/**
 * Sixteen mints from `parent` (and, when given, eight from a session key of it) race `revoke`,
 * started in the middle of them. Returns the secrets of every session key that was minted.
 */
async function race(parent: Ctx, revoke: () => Promise<unknown>, nested?: Ctx): Promise<string[]> {
  const mints: Promise<{ key: string }>[] = [];
  for (let i = 0; i < 16; i++) {
    mints.push(mintSessionKey(parent, { label: `s${i}` }));
    if (nested && i % 2 === 0) mints.push(mintSessionKey(nested, { label: `n${i}` }));
  }
  const revoked = revoke();
  for (let i = 16; i < 24; i++) mints.push(mintSessionKey(parent, { label: `s${i}` }));
  const [settled] = await Promise.all([Promise.allSettled(mints), revoked]);
  for (const r of settled) {
    // A mint that lost the race is refused as revoked (or, before the retirement, never refused).
    if (r.status === "rejected") expect(r.reason).toMatchObject({ code: expect.stringMatching(/^(UNAUTHORIZED|FORBIDDEN)$/) });
  }
  return settled.flatMap((r) => (r.status === "fulfilled" ? [r.value.key] : []));
}

describe("session keys racing the revocation of their parent", () => {
  it("retire, revoke or rotate: no session key minted at the same time authenticates afterwards, however deep", async () => {
    const doors: [string, (keyId: string) => Promise<unknown>][] = [
      ["retire", (keyId) => retireMember(as.alice, { memberId: keyId })],
      ["revoke", (keyId) => revokeKey(as.bob, { keyId })],
      ["rotate", (keyId) => rotateKey(as.bob, { keyId })],
    ];
    let minted = 0;
    for (let round = 0; round < 3; round++) {
      for (const [door, revoke] of doors) {
        const parent = await mintKey(as.bob, { runtime: `race-${door}` });
        const parentCtx = await ctxOf(parent.key);
        const child = await mintSessionKey(parentCtx, { label: "nested" });
        const keys = await race(parentCtx, () => revoke(parent.keyId), await ctxOf(child.key));
        minted += keys.length;
        expect(await live([parent.key, child.key, ...keys]), `${door}, round ${round}: live after the revocation`).toBe(0);
      }
    }
    // The race was real: some mints got in before the revocation (on PostgreSQL, usually several each round).
    expect(minted).toBeGreaterThan(0);
  });

  it("suspending the holder: no session key minted at the same time comes back with the reactivation", async () => {
    for (let round = 0; round < 3; round++) {
      const parent = await mintKey(as.carol, { runtime: "race-suspend" });
      const keys = await race(await ctxOf(parent.key), () => suspendMember(as.alice, { memberId: memberIds.carol }));
      await reactivateMember(as.alice, { memberId: memberIds.carol });
      expect(await live([parent.key, ...keys]), `round ${round}`).toBe(0);
    }
  });

  it("a session key of a revoked key cannot mint", async () => {
    const child = await mintSessionKey(org.agents.bob.ctx, {});
    const childCtx = await ctxOf(child.key);
    await revokeKey(as.bob, { keyId: org.agents.bob.principal.keyId! });
    // The context was authenticated before the revocation, as a request in flight would be.
    expect((await refusal(mintSessionKey(childCtx, {}))).code).toBe("UNAUTHORIZED");
    expect((await refusal(mintSessionKey(org.agents.bob.ctx, {}))).code).toBe("UNAUTHORIZED");
  });
});

describe("the cap on live session keys", () => {
  it("counts every live session key of a tree, however deep, even when minted at once; retiring one frees a place", async () => {
    const capped: Services = { ...services, config: testConfig({ SESSION_KEY_CAP: "3" }) };
    const root = await ctxOf(org.agents.bob.key, capped);
    const first = await mintSessionKey(root, {});
    const nested = await ctxOf(first.key, capped);
    const results = await Promise.allSettled([...Array(6)].map((_, i) => mintSessionKey(i % 2 ? nested : root, {})));
    const won = results.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
    expect(won).toHaveLength(2);
    const refused = results.flatMap((r) => (r.status === "rejected" ? [r.reason] : []));
    for (const error of refused) expect(error).toMatchObject({ code: "SESSION_KEY_CAP", details: { live: 3, cap: 3 } });
    await retireMember(as.bob, { memberId: won[0]!.keyId });
    expect(await mintSessionKey(root, {})).toMatchObject({ parentKeyId: org.agents.bob.principal.keyId });
    // Another key of the same person has a tree of its own.
    const other = await ctxOf(org.agents.carol.key, capped);
    expect(await mintSessionKey(other, {})).toMatchObject({ runtime: "cursor" });
  });
});

describe("a session key lives no longer than its grant (decision 037)", () => {
  const seconds = (iso: string) => (new Date(iso).getTime() - Date.now()) / 1000;

  it("expires after SESSION_KEY_TTL_SECONDS (24 h by default), never after the key it came from", async () => {
    const day = await mintSessionKey(org.agents.bob.ctx, {});
    expect(seconds(day.expiresAt)).toBeGreaterThan(86_400 - 60);
    expect(seconds(day.expiresAt)).toBeLessThanOrEqual(86_400);
    // A key minted to last ten minutes: its children end with it, however long theirs would be.
    const brief: Services = { ...services, config: testConfig({ SESSION_KEY_CAP: "1000", SESSION_KEY_TTL_SECONDS: "600" }) };
    const short = await mintSessionKey(await ctxOf(org.agents.bob.key, brief), {});
    expect(seconds(short.expiresAt)).toBeLessThanOrEqual(600);
    const child = await mintSessionKey(await ctxOf(short.key), {});
    expect(child.expiresAt).toBe(short.expiresAt);
    const grandchild = await mintSessionKey(await ctxOf(child.key), {});
    expect(grandchild.expiresAt).toBe(short.expiresAt);
    // whoami says when.
    expect((await whoami(await ctxOf(child.key))).key).toMatchObject({ expiresAt: short.expiresAt, parentKeyId: short.keyId });
    expect((await whoami(org.agents.bob.ctx)).key).toMatchObject({ expiresAt: null });
  });

  it("an expired key authenticates nothing, mints nothing, and no longer counts against the cap", async () => {
    const capped: Services = { ...services, config: testConfig({ SESSION_KEY_CAP: "1", SESSION_KEY_TTL_SECONDS: "60" }) };
    const root = await ctxOf(org.agents.bob.key, capped);
    const minted = await mintSessionKey(root, {});
    expect(seconds(minted.expiresAt)).toBeLessThanOrEqual(60);
    const ctx = await ctxOf(minted.key, capped);
    expect((await refusal(mintSessionKey(root, {}))).code).toBe("SESSION_KEY_CAP");
    // Its minute passes (set on the row: the database's clock decides).
    await testDb.database.db.execute(sql`update agent_keys set expires_at = now() - interval '1 second' where id = ${minted.keyId}`);
    expect(await authenticateAgentKey(services.db, minted.key)).toBeNull();
    // A context authenticated before it expired (a request in flight) cannot mint from it either.
    expect(await refusal(mintSessionKey(ctx, {}))).toMatchObject({ code: "UNAUTHORIZED", message: "this key has expired" });
    // Its place under the cap is free again, and the keys list shows it expired.
    expect(await mintSessionKey(root, {})).toMatchObject({ parentKeyId: org.agents.bob.principal.keyId });
    const { keys } = await listKeys(as.bob, { includeRevoked: true });
    expect(keys.find((k) => k.keyId === minted.keyId)).toMatchObject({ status: "expired" });
    expect((await listKeys(as.bob)).keys.map((k) => k.keyId)).not.toContain(minted.keyId);
  });
});

describe("migration 0028 (decision 037)", () => {
  it("revoked every key minted below an OAuth grant's key, however deep, and gave the other live session keys 24 hours", async () => {
    const db = testDb.database.db;
    const bob = org.agents.bob;
    // An OAuth grant's key, as consent mints it, and a chain minted below it through its tokens before the rule.
    const clientId = `client-${org.orgId}`;
    await db.insert(oauthClient).values({ id: clientId, clientId, redirectUris: ["http://127.0.0.1:7777/callback"] });
    const grant = await mintAgentKey(db, { orgId: org.orgId, userId: bob.userId, runtime: "claude-code" });
    await db.insert(oauthGrants).values({ keyId: grant.keyId, clientId, clientName: "Some Agent" });
    const child = await mintAgentKey(db, { orgId: org.orgId, userId: bob.userId, runtime: "claude-code" });
    const grandchild = await mintAgentKey(db, { orgId: org.orgId, userId: bob.userId, runtime: "claude-code" });
    await db.update(agentKeys).set({ parentKeyId: grant.keyId }).where(eq(agentKeys.id, child.keyId));
    await db.update(agentKeys).set({ parentKeyId: child.keyId }).where(eq(agentKeys.id, grandchild.keyId));
    // A session key of a person's key, minted before session keys expired.
    const session = await mintSessionKey(bob.ctx, {});
    await db.update(agentKeys).set({ expiresAt: null }).where(inArray(agentKeys.id, [session.keyId, child.keyId, grandchild.keyId]));

    // The migration's statements after its ALTER (the column is there already), as committed.
    const file = fs.readdirSync(migrationsFolder).find((f) => f.startsWith("0028_"))!;
    const statements = fs.readFileSync(path.join(migrationsFolder, file), "utf8").split("--> statement-breakpoint");
    expect(statements[0]).toMatch(/ALTER TABLE "agent_keys" ADD COLUMN "expires_at"/);
    for (const statement of statements.slice(1)) await db.execute(sql.raw(statement));

    expect(await authenticateAgentKey(db, child.key)).toBeNull();
    expect(await authenticateAgentKey(db, grandchild.key)).toBeNull();
    // The grant's key itself stays (its tokens act through it), and so do keys a person minted.
    expect(await authenticateAgentKey(db, grant.key)).not.toBeNull();
    expect(await authenticateAgentKey(db, bob.key)).toMatchObject({ keyId: bob.principal.keyId });
    const rows = await db.select({ id: agentKeys.id, expiresAt: agentKeys.expiresAt }).from(agentKeys).where(inArray(agentKeys.id, [session.keyId, bob.principal.keyId!, grant.keyId]));
    const expiry = Object.fromEntries(rows.map((r) => [r.id, r.expiresAt]));
    const hours = (at: Date | null | undefined) => (at!.getTime() - Date.now()) / 3_600_000;
    expect(hours(expiry[session.keyId])).toBeGreaterThan(23.9);
    expect(hours(expiry[session.keyId])).toBeLessThanOrEqual(24);
    expect(expiry[bob.principal.keyId!]).toBeNull();
    expect(expiry[grant.keyId]).toBeNull();
    expect(await authenticateAgentKey(db, session.key)).not.toBeNull();
  });
});
