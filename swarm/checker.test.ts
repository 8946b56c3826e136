import crypto from "node:crypto";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { testDriver } from "../server/testing/db.ts";
import { boot, type Booted } from "../server/boot.ts";
import { loadConfig } from "../server/config/index.ts";
import { saveIssue } from "../server/issues/index.ts";
import { checkpoint, claimIssue, heartbeat, nextIssue, releaseIssue } from "../server/queue/index.ts";
import { seedOrg, type SeededOrg } from "../server/testing/fixtures.ts";
import { withPrincipal } from "../server/with-principal.ts";
import { checkInvariants } from "./checker.ts";
import { PrivatePostgres, privatePostgresAvailable } from "./private-postgres.ts";
import type { AgentRecord, ClaimRecord, ProbeRecord, WriteRecord } from "./records.ts";
import { query } from "../db/client.ts";
import { seedGraph } from "../bench/lib/seed.ts";
import { authenticateAgentKey, authenticateCiKey, createProject, mintAgentKey } from "../server/orgs/index.ts";
import { attestVerification } from "../server/verification/attest.ts";
import { setVerificationCommand } from "../server/verification/settings.ts";

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
      saveIssue(ctx, { title, work: true, changeType: "feat", priority, ...(blockedBy ? { blockedBy } : { noDependency: "alone" }) }) as Promise<{ identifier: string }>;
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

    // A run of two heartbeats is one row (decision 105): its last beat is the lease's renewal.
    await create("beaten", 2);
    const beaten = (await nextIssue(ctx, {})) as Claim;
    await heartbeat(ctx, { identifier: beaten.identifier, claimToken: beaten.claimToken });
    await new Promise((r) => setTimeout(r, 20));
    await heartbeat(ctx, { identifier: beaten.identifier, claimToken: beaten.claimToken });
    await finish(beaten.identifier, beaten.claimToken);
    expect(await kinds()).toEqual([]);
    // Its last beat accepted after the expiry its first one gave.
    const run = sql`(select id from activity where kind = 'heartbeat' and org_id = ${org.orgId}
      and issue_id = (select id from issues where identifier = ${beaten.identifier} and org_id = ${org.orgId}))`;
    const moveLastBeat = (by: string) =>
      db.execute(sql`with moved as (
          update activity set facts = facts || jsonb_build_object('lastAt', (facts->>'lastAt')::timestamptz + ${by}::interval)
           where id = ${run} returning issue_id
        ) update leases set expires_at = expires_at + ${by}::interval where issue_id = (select issue_id from moved)`);
    await moveLastBeat("61 seconds");
    expect(await kinds()).toEqual(["write-after-expiry"]);
    await moveLastBeat("-61 seconds");

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

  test("verified finishes and quarantine: a clean history passes; every planted violation is reported as its kind", async () => {
    const { services } = booted;
    const db = services.db;
    const vorg = await seedOrg(services, { prefix: "CHV" });
    // An org-wide key: dispatched from the verifying project and the poison project alike, as in the swarm.
    const userId = vorg.agents.alice.userId;
    const ctx = withPrincipal(services, (await authenticateAgentKey(db, (await mintAgentKey(db, { orgId: vorg.orgId, userId, runtime: "checker", projectId: null })).key))!);
    await setVerificationCommand(services, { project: vorg.projectId, mode: "ci", checks: "test" });
    const ci = withPrincipal(services, (await authenticateCiKey(db, (await mintAgentKey(db, { orgId: vorg.orgId, userId, runtime: "ci", projectId: vorg.projectId, ci: true })).key))!);
    const attest = (identifier: string, commit: string, status: "pass" | "fail") =>
      attestVerification(ci as Parameters<typeof attestVerification>[0], { identifier, commit, status, check: "test" });
    type Claim = { identifier: string; claimToken: string; fence: number; expiresAt: string; checkpoint?: Record<string, string | null> | null };
    const finish = (c: Claim, commit: string) => saveIssue(ctx, { identifier: c.identifier, claimToken: c.claimToken, status: "done", evidence: { commit } });
    const [c1, c2, c3] = ["a", "b", "c"].map((x) => x.repeat(40)) as [string, string, string];

    // The blocker's first finish is red: reopened, claimed again with the failing check as gotchas,
    // finished green; only then is its dependent dispatched.
    const blocker = (await saveIssue(ctx, { title: "blocker", work: true, changeType: "feat", priority: 4, noDependency: "alone" })) as { identifier: string };
    const dependent = (await saveIssue(ctx, { title: "dependent", work: true, changeType: "feat", priority: 3, blockedBy: [blocker.identifier] })) as { identifier: string };
    const b1 = (await nextIssue(ctx, {})) as Claim;
    expect(b1.identifier).toBe(blocker.identifier);
    await finish(b1, c1);
    expect(await nextIssue(ctx, {})).not.toHaveProperty("claimToken");
    await attest(blocker.identifier, c1, "fail");
    const b2 = (await nextIssue(ctx, {})) as Claim;
    expect(b2).toMatchObject({ identifier: blocker.identifier, fence: 2 });
    await finish(b2, c2);
    expect(await nextIssue(ctx, {})).not.toHaveProperty("claimToken");
    await attest(blocker.identifier, c2, "pass");
    const d = (await nextIssue(ctx, {})) as Claim;
    expect(d.identifier).toBe(dependent.identifier);
    await finish(d, c3);
    await attest(dependent.identifier, c3, "pass");

    // A poison issue in a project of its own (threshold 2): taken and abandoned twice, quarantined.
    const poisonProject = await createProject(db, { orgId: vorg.orgId, name: "Poison", prefix: "CHP" });
    await db.execute(sql`update projects set quarantine_after = 2 where id = ${poisonProject.id}`);
    const [poison] = await seedGraph(services, { orgId: vorg.orgId, projectId: poisonProject.id, prefix: "CHP", authorId: userId }, {
      issues: [{ title: "poison", priority: 1, dueAt: null, assigneeId: null, createdAt: new Date() }],
      edges: [],
    }, new Date());
    for (let take = 0; take < 2; take++) {
      const p = (await nextIssue(ctx, {})) as Claim;
      expect(p.identifier).toBe(poison!.identifier);
      await releaseIssue(ctx, { identifier: p.identifier, claimToken: p.claimToken });
    }
    expect(await nextIssue(ctx, {})).not.toHaveProperty("claimToken");

    const check = (records: AgentRecord[] = [], poisoned = [poison!.identifier]) =>
      checkInvariants({ db, keyring: services.keyring, orgId: vorg.orgId, ttlMs: TTL_MS, records, poison: poisoned, seededPriority: new Map([[blocker.identifier, 4], [dependent.identifier, 3], [poison!.identifier, 1]]) });
    const kinds = async (records: AgentRecord[] = [], poisoned?: string[]) => Object.keys((await check(records, poisoned)).violationCounts).sort();
    const reopened = (checkpoint: ClaimRecord["checkpoint"]): ClaimRecord => ({
      t: "claim", agent: "alice", session: null, userId, identifier: blocker.identifier, fence: 2, expiresAt: b2.expiresAt,
      allLanes: false, checkpoint, sentAt: Date.now() - 60_000, receivedAt: Date.now(),
    });
    const handed = { done: null, next: null, note: null, gotchas: b2.checkpoint?.gotchas ?? null };
    expect(handed.gotchas).toMatch(/^CI failed the last finish; fix these first:\n- test: failure at aaaaaaaaaaaa/);
    const clean = await check([reopened(handed)]);
    expect(clean.violations).toEqual([]);
    expect(clean.figures.verification).toEqual({ finishes: 3, failed: 1, passed: 2, redispatched: 1, reopenedWithGotchas: 1, gatedClaims: 1, claimsOnUnverifiedBlocker: 0 });
    expect(clean.figures.quarantine).toMatchObject({ poison: 1, quarantined: 1, claims: 2, claimedAfter: 0 });

    // The first claim after the failure handed no gotchas.
    expect(await kinds([reopened({ ...handed, gotchas: null })])).toEqual(["checkpoint", "gotchas"]);
    // Quarantined though it was not poison; poison that was never quarantined.
    expect(await kinds([], [])).toEqual(["quarantined"]);
    expect(await kinds([], [poison!.identifier, dependent.identifier])).toEqual(["quarantine"]);
    // Quarantined after another count than the project's threshold.
    await db.execute(sql`update projects set quarantine_after = 3 where id = ${poisonProject.id}`);
    expect(await kinds()).toEqual(["quarantine"]);
    await db.execute(sql`update projects set quarantine_after = 2 where id = ${poisonProject.id}`);
    // Done with its verification still pending.
    const setVerification = (identifier: string, value: string) => db.execute(sql`update issues set verification = ${value} where identifier = ${identifier} and org_id = ${vorg.orgId}`);
    await setVerification(dependent.identifier, "pending");
    expect(await kinds()).toEqual(["unverified"]);
    await setVerification(dependent.identifier, "passed");
    expect(await kinds()).toEqual([]);

    // The blocker's pass committed after its dependent's claim: claimed on a pending blocker.
    const issueId = (identifier: string) => sql`(select id from issues where identifier = ${identifier} and org_id = ${vorg.orgId})`;
    await db.execute(sql`update activity set created_at = created_at where kind = 'verified' and issue_id = ${issueId(blocker.identifier)}`);
    const pending = await check();
    expect(Object.keys(pending.violationCounts)).toEqual(["blocked-dispatch"]);
    expect(pending.violations[0]).toContain(`${dependent.identifier} fence 1 was claimed while its blocker ${blocker.identifier} was done, verification pending`);
    expect(pending.figures.verification.claimsOnUnverifiedBlocker).toBe(1);
    // A failure of the dependent's finish that nobody claimed again, and done on it.
    await db.execute(sql`insert into activity (org_id, issue_id, kind, created_at, facts)
      select org_id, ${issueId(dependent.identifier)}, kind, now(), facts from activity where kind = 'verification_failed' and issue_id = ${issueId(blocker.identifier)}`);
    expect(await kinds()).toEqual(["blocked-dispatch", "redispatch", "unverified"]);
    // The blocker's failure gone: its second finish is a second finish.
    await db.execute(sql`delete from activity where kind = 'verification_failed' and issue_id = ${issueId(blocker.identifier)}`);
    expect(await kinds()).toEqual(expect.arrayContaining(["blocked-dispatch", "finished-twice"]));
  });
});
