import crypto from "node:crypto";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { testDriver } from "../server/testing/db.ts";
import { boot, type Booted } from "../server/boot.ts";
import { loadConfig } from "../server/config/index.ts";
import { saveIssue } from "../server/issues/index.ts";
import { checkpoint, claimIssue, nextIssue, releaseIssue } from "../server/queue/index.ts";
import { seedOrg, type SeededOrg } from "../server/testing/fixtures.ts";
import { checkInvariants } from "./checker.ts";
import { PrivatePostgres, privatePostgresAvailable } from "./private-postgres.ts";
import type { AgentRecord, ClaimRecord } from "./records.ts";

/**
 * The invariant checker must be able to fail: a clean history passes, and each kind of
 * violation planted into it (by writing the database or the agents' records directly) is
 * reported as that kind. Runs on a private cluster (the checker needs commit timestamps).
 */
describe.skipIf(testDriver !== "postgres" || !privatePostgresAvailable)("the swarm's invariant checker", () => {
  let postgres: PrivatePostgres;
  let booted: Booted;
  let org: SeededOrg;
  const TTL_MS = 60_000;

  beforeAll(async () => {
    postgres = await PrivatePostgres.start({ maxConnections: 20 });
    const url = await postgres.createDatabase("checker");
    booted = await boot(loadConfig({ DATABASE_URL: url, RETASC_MASTER_KEY: crypto.randomBytes(32).toString("base64"), LEASE_TTL_SECONDS: "60" }), {
      warn: () => {},
      poolSize: 4,
    });
    org = await seedOrg(booted.services, { prefix: "CHK" });
  });
  afterAll(async () => {
    await booted?.close();
    postgres?.close();
  });

  const check = (records: AgentRecord[] = []) =>
    checkInvariants({ db: booted.services.db, keyring: booted.services.keyring, orgId: org.orgId, ttlMs: TTL_MS, records });
  const kinds = async (records: AgentRecord[] = []) => Object.keys((await check(records)).violationCounts).sort();

  test("a clean history passes; every planted violation is reported as its kind", async () => {
    const { ctx } = org.agents.alice;
    type Claim = { identifier: string; claimToken: string; fence: number; expiresAt: string };
    const create = (title: string, priority: number, blockedBy?: string[]) =>
      saveIssue(ctx, { title, work: true, priority, ...(blockedBy ? { blockedBy } : { noDependency: "alone" }) }) as Promise<{ identifier: string }>;
    const finish = (identifier: string, claimToken: string) => saveIssue(ctx, { identifier, status: "done", claimToken });
    const pause = () => new Promise((r) => setTimeout(r, 600)); // longer than the checker's in-flight window

    // A clean run: the urgent blocker is checkpointed, released and resumed, then what it blocked.
    const first = await create("first", 1);
    await create("second", 4, [first.identifier]);
    const a1 = (await nextIssue(ctx, {})) as Claim;
    expect(a1.identifier).toBe(first.identifier);
    await checkpoint(ctx, { identifier: a1.identifier, claimToken: a1.claimToken, done: "half", next: "rest" });
    await releaseIssue(ctx, { identifier: a1.identifier, claimToken: a1.claimToken });
    const a2 = (await nextIssue(ctx, {})) as Claim;
    expect(a2).toMatchObject({ identifier: first.identifier, fence: 2 });
    await finish(a2.identifier, a2.claimToken);
    const b = (await nextIssue(ctx, {})) as Claim;
    await finish(b.identifier, b.claimToken);
    const resumed = (done: string): ClaimRecord => ({
      t: "claim", agent: "alice", userId: ctx.principal.userId!, identifier: first.identifier, fence: 2, expiresAt: a2.expiresAt,
      allLanes: false, checkpoint: { done, next: "rest", note: null }, sentAt: Date.now() - 60_000, receivedAt: Date.now(),
    });
    expect((await check([resumed("half")])).violations).toEqual([]);

    // Handed another checkpoint than the last one written; a claim the database never granted.
    expect(await kinds([resumed("something else")])).toEqual(["checkpoint"]);
    expect(await kinds([{ ...resumed("half"), fence: 3 }])).toEqual(["phantom-claim"]);
    // A stale write the agent says went through.
    expect(await kinds([{ t: "write", agent: "alice", kind: "heartbeat", identifier: b.identifier, fence: 1, outcome: "ok", stale: true, retry: false, sentAt: 1, receivedAt: 2 }])).toEqual(["stale-accepted"]);

    // Dispatched out of order: a low-priority issue taken by name while an urgent one waits.
    const urgent = await create("urgent", 1);
    const low = await create("low", 4);
    await pause();
    const taken = (await claimIssue(ctx, { identifier: low.identifier })) as Claim;
    await pause();
    await finish(low.identifier, taken.claimToken);
    expect(await kinds()).toEqual(["order", "unfinished"]);
    const top = (await nextIssue(ctx, {})) as Claim;
    expect(top.identifier).toBe(urgent.identifier);
    await finish(top.identifier, top.claimToken);
    expect(await kinds()).toEqual(["order"]);

    // Finished twice, and a lease that was still live when the next one was granted.
    const db = booted.services.db;
    await db.execute(sql`insert into activity (org_id, issue_id, kind, created_at)
      select org_id, issue_id, kind, created_at from activity where kind = 'finished' and org_id = ${org.orgId} limit 1`);
    await db.execute(sql`update leases set end_reason = 'expired', expires_at = expires_at + interval '1 hour'
      where fence = 1 and issue_id = (select id from issues where identifier = ${first.identifier} and org_id = ${org.orgId})`);
    expect(await kinds()).toEqual(expect.arrayContaining(["finished-twice", "overlap", "order"]));
  });
});
