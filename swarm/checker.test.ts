import crypto from "node:crypto";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { testDriver } from "../server/testing/db.ts";
import { boot, type Booted } from "../server/boot.ts";
import { loadConfig } from "../server/config/index.ts";
import { saveIssue } from "../server/issues/index.ts";
import { checkpoint, claimIssue, nextIssue, releaseIssue } from "../server/queue/index.ts";
import { seedOrg, type SeededOrg } from "../server/testing/fixtures.ts";
import { withPrincipal } from "../server/context.ts";
import { checkInvariants } from "./checker.ts";
import { PrivatePostgres, privatePostgresAvailable } from "./private-postgres.ts";
import type { AgentRecord, ClaimRecord, ProbeRecord, WriteRecord } from "./records.ts";
import { query } from "../db/client.ts";

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
      t: "claim", agent: "alice", session: null, userId: ctx.principal.userId!, identifier: first.identifier, fence: 2, expiresAt: a2.expiresAt,
      allLanes: false, checkpoint: { done, next: "rest", note: null }, sentAt: Date.now() - 60_000, receivedAt: Date.now(),
    });
    expect((await check([resumed("half")])).violations).toEqual([]);

    // Handed another checkpoint than the last one written; a claim the database never granted.
    expect(await kinds([resumed("something else")])).toEqual(["checkpoint"]);
    expect(await kinds([{ ...resumed("half"), fence: 3 }])).toEqual(["phantom-claim"]);
    // A stale write the agent says went through.
    const write = (w: Partial<WriteRecord>): WriteRecord => ({
      t: "write", agent: "alice", session: null, kind: "heartbeat", identifier: b.identifier, fence: 1, outcome: "ok", stale: false, retry: false, sentAt: 1, receivedAt: 2, ...w,
    });
    expect(await kinds([write({ stale: true })])).toEqual(["stale-accepted"]);
    // A stale write refused CLAIM_MISMATCH while no other session of its key held the issue.
    expect(await kinds([write({ stale: true, outcome: "CLAIM_MISMATCH" })])).toEqual(["stale-wrong-code"]);

    // Answers untrue to a lease: fence 1 of the first issue was released, fence 2 finished it.
    const now = Date.now();
    const late = { identifier: first.identifier, fence: 1, sentAt: now, receivedAt: now + 1 };
    // Its late finish told alreadyFinished; its late heartbeat accepted; its finish accepted beside fence 2's.
    expect(await kinds([write({ ...late, kind: "finish", outcome: "STALE_CLAIM", alreadyFinished: true })])).toEqual(["told-finished"]);
    expect(await kinds([write(late)])).toEqual(["superseded-accepted"]);
    const finishOf = (fence: number) => write({ ...late, fence, kind: "finish", sentAt: fence === 2 ? 1 : now });
    expect((await check([finishOf(2)])).figures.toldFinished).toBe(1);
    expect(await kinds([finishOf(2), finishOf(1)])).toEqual(["finished-twice", "superseded-accepted", "told-finished"]);

    // A sibling session's tokenless write to a lease another session of the key holds live.
    const holderCtx = withPrincipal(booted.services, { ...ctx.principal, sessionId: "holder-session" });
    await create("held by one session", 2);
    const held = (await nextIssue(holderCtx, {})) as Claim;
    // Date.now() is whole milliseconds and commit timestamps are not: a probe stamped within the
    // claim's own millisecond would read as sent before the claim committed.
    await new Promise((r) => setTimeout(r, 2));
    const at = Date.now();
    const probe = (outcome: string): ProbeRecord => ({
      t: "probe", agent: "sibling", session: "sibling-session", kind: "heartbeat", identifier: held.identifier, holder: "holder", outcome, sentAt: at, receivedAt: at + 1,
    });
    const holderSession: AgentRecord = { t: "session", agent: "holder", session: "holder-session", proc: "p", at: at - 1 };
    const probed = await check([holderSession, probe("CLAIM_MISMATCH")]);
    expect(probed.violations).toEqual(["[unfinished] " + `${held.identifier} is doing, not done`, `[unfinished] ${held.identifier} finished 0 times`]);
    expect(probed.figures).toMatchObject({ siblingProbes: 1, siblingMismatches: 1 });
    expect(await kinds([holderSession, probe("STALE_CLAIM")])).toEqual(["sibling-wrong-code", "unfinished"]);
    expect(await kinds([holderSession, probe("ok")])).toEqual(["sibling-accepted", "unfinished"]);
    await finish(held.identifier, held.claimToken);

    // Renewed by its session's calls: only while that session had a call under way.
    const db = booted.services.db;
    const [lease] = await query<{ claimed_ms: number }>(db, sql`update leases set session_id = 'renewing', renewed_by = 'calls',
        heartbeat_at = claimed_at + interval '10 milliseconds', expires_at = claimed_at + interval '10 milliseconds' + interval '60 seconds'
      where fence = 1 and issue_id = (select id from issues where identifier = ${b.identifier} and org_id = ${org.orgId})
      returning (extract(epoch from claimed_at) * 1000)::float8 as claimed_ms`);
    const renewing = write({ session: "renewing", sentAt: lease!.claimed_ms, receivedAt: lease!.claimed_ms + 20 });
    expect(await kinds([renewing])).toEqual([]);
    expect(await kinds([{ ...renewing, outcome: "STALE_CLAIM", sentAt: lease!.claimed_ms + 15 }])).toEqual(["lease-expiry"]);
    await db.execute(sql`update leases set session_id = null, renewed_by = null, heartbeat_at = claimed_at, expires_at = claimed_at + interval '60 seconds'
      where session_id = 'renewing'`);

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
    await db.execute(sql`insert into activity (org_id, issue_id, kind, created_at)
      select org_id, issue_id, kind, created_at from activity where kind = 'finished' and org_id = ${org.orgId} limit 1`);
    await db.execute(sql`update leases set end_reason = 'expired', expires_at = expires_at + interval '1 hour'
      where fence = 1 and issue_id = (select id from issues where identifier = ${first.identifier} and org_id = ${org.orgId})`);
    expect(await kinds()).toEqual(expect.arrayContaining(["finished-twice", "overlap", "order"]));
  });
});
