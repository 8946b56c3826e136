import crypto from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { openPostgres, type Database } from "../../db/client.ts";
import { orgFreeze, orgUnfreeze } from "../admin/org-freeze.ts";
import type { Services } from "../context.ts";
import { Keyring } from "../crypto/index.ts";
import { DomainError } from "../errors.ts";
import { saveIssue } from "../issues/index.ts";
import { nextIssue } from "../queue/index.ts";
import { servicesFor, testConfig } from "../testing/db.ts";
import { fileIssues, seedOrg } from "../testing/fixtures.ts";
import { copied, endPublication, finishOnTarget, NOT_BY_ORG_ID, orgChecksums, otherTables, publishOrg, reached, SERIAL_TABLES, subscribeTo } from "../testing/org-move.ts";
import { migratedDatabase, PgCluster, until } from "../testing/pg-cluster.ts";
import { withPrincipal } from "../with-principal.ts";
import { authenticateAgentKeyCached } from "./key-auth.ts";

/**
 * Issue 36 point 6 (decisions 099 and 107; docs/operations.md, "Moving one org to another stack").
 * Two Debian PostgreSQL 15 clusters of the test's own on 127.0.0.1: A (wal_level=logical) holds
 * two orgs; one moves to B by a row-filtered publication and a subscription while its agents
 * claim and finish through the service layer, each call authenticating its key as the /mcp door
 * does (so the freeze reaches it within the key cache's second).
 */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const cleanups: (() => unknown)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) {
    try {
      await cleanup();
    } catch {
      // the next cleanup still runs
    }
  }
});

const AGENTS = 6;
const ISSUES = 200;
const TTL_S = 15;

type Claim = { agent: number; identifier: string; token: string; startedAt: number; ackedAt: number; on: "A" | "B"; finishedOn?: "A" | "B"; finishedAt?: number };

describe("moving one org between two PostgreSQL 15 clusters mid-swarm (logical replication, row filters)", () => {
  it("0 double claims, 0 lost finishes; the org's rows on B equal A's at the freeze; the other org untouched", async () => {
    const started = Date.now();
    const a = await PgCluster.init(["wal_level = logical", "max_wal_senders = 8", "max_replication_slots = 8"]);
    cleanups.push(() => a.close());
    const b = await PgCluster.init(["wal_receiver_status_interval = 1", "max_logical_replication_workers = 6"]);
    cleanups.push(() => b.close());
    await Promise.all([a.start(), b.start()]);
    await Promise.all([migratedDatabase(a), migratedDatabase(b)]);
    const open = async (cluster: PgCluster): Promise<Database> => {
      const pool = await openPostgres(cluster.url("retasc"), { max: AGENTS + 2 });
      cleanups.push(() => pool.close());
      return pool;
    };
    // One master key for both stacks: the org's data key rows move wrapped under it.
    const keyring = new Keyring(crypto.randomBytes(32));
    const config = testConfig({ LEASE_TTL_SECONDS: String(TTL_S) });
    const stacks: Record<"A" | "B", Services> = { A: servicesFor(await open(a), { keyring, config }), B: servicesFor(await open(b), { keyring, config }) };

    const moving = await seedOrg(stacks.A, { prefix: "MOVE" });
    const staying = await seedOrg(stacks.A, { prefix: "STAY" });
    await fileIssues(moving.agents.alice.ctx, "Moving work", ISSUES);
    await fileIssues(staying.agents.alice.ctx, "Staying work", 8);
    const held = await nextIssue(staying.agents.bob.ctx, {});
    if ("claimToken" in held) await saveIssue(staying.agents.bob.ctx, { identifier: held.identifier, claimToken: held.claimToken, status: "done" });
    const userIds = Object.values((await a.with((s) => s`select user_id from members where org_id = ${moving.orgId}`, "retasc")).map((r) => r.user_id as string));
    const keys: string[] = [];
    for (let i = 0; i < AGENTS; i++) keys.push((await moving.agentFor((["alice", "bob", "carol"] as const)[i % 3], `mover-${i}`)).key);

    // A Stripe refund of each org's purchase: published by its org_id like every org-owned row (decision 110).
    for (const org of [moving, staying]) {
      await a.with(
        (s) => s`with p as (insert into billing_purchases (id, org_id, pack_usd, micro_credits, status, payment_intent_id, created_at, updated_at)
                            values (${`pur-${org.orgId}`}, ${org.orgId}, 10, 10000000, 'paid', ${`pi-${org.orgId}`}, now(), now()) returning payment_intent_id)
                 insert into billing_stripe_reversals (ref, org_id, kind, payment_intent_id, cents, received_at)
                 select ${`refund:ch-${org.orgId}:100`}, ${org.orgId}, 'refund', payment_intent_id, 100, now() from p`,
        "retasc",
      );
    }
    // Every table without org_id is one the move knows about: a new org-owned table must carry org_id.
    expect(await a.with(otherTables, "retasc")).toEqual(Object.keys(NOT_BY_ORG_ID).sort());
    const tables = await a.with((s) => publishOrg(s, moving.orgId, userIds), "retasc");
    const stayingBefore = await a.with((s) => orgChecksums(s, tables, staying.orgId, []), "retasc");

    // The swarm: each call authenticates its key on the stack it points at, as the /mcp door does.
    let target: "A" | "B" = "A";
    let running = true;
    let finishes = 0;
    let frozenRefusals = 0;
    const claims: Claim[] = [];
    const violations: string[] = [];
    const ctxOf = async (i: number) => {
      const principal = await authenticateAgentKeyCached(stacks[target].db, keys[i]!, Date.now());
      if (!principal) throw new Error(`agent ${i}'s key not found on ${target}`);
      return { ctx: withPrincipal(stacks[target], principal), on: target };
    };
    const frozen = (error: unknown) => {
      if (!(error instanceof DomainError) || error.code !== "ORG_FROZEN") return false;
      if (error.details?.retryAfter !== 2) violations.push(`[freeze] ORG_FROZEN without retryAfter: ${JSON.stringify(error.details)}`);
      frozenRefusals++;
      return true;
    };
    const agent = async (i: number) => {
      while (running) {
        const startedAt = Date.now();
        let claim: Claim;
        try {
          const { ctx, on } = await ctxOf(i);
          const reply = await nextIssue(ctx, {});
          if (!("claimToken" in reply)) {
            await sleep(100);
            continue;
          }
          claim = { agent: i, identifier: reply.identifier, token: reply.claimToken, startedAt, ackedAt: Date.now(), on };
          claims.push(claim);
        } catch (error) {
          if (!frozen(error)) violations.push(`[claim] agent ${i}: ${(error as Error).message}`);
          await sleep(100);
          continue;
        }
        await sleep(40 + (i % 3) * 40); // the work
        for (;;) {
          try {
            const { ctx, on } = await ctxOf(i);
            await saveIssue(ctx, { identifier: claim.identifier, claimToken: claim.token, status: "done" });
            Object.assign(claim, { finishedOn: on, finishedAt: Date.now() });
            finishes++;
            break;
          } catch (error) {
            if (frozen(error)) {
              await sleep(100); // the same finish again, on whichever stack the agent points at by then
              continue;
            }
            violations.push(`[finish] agent ${i} ${claim.identifier}: ${(error as Error).message}`);
            break;
          }
        }
      }
    };
    const loops = keys.map((_, i) => agent(i));

    // The copy runs while the swarm works on A.
    await b.with((s) => subscribeTo(s, a), "retasc");
    await until("B to have copied every table", () => b.with(copied, "retasc"), 30_000);
    const copiedMs = Date.now() - started;
    await until("a third of the issues finished", () => finishes >= ISSUES / 3, 30_000);

    // The freeze, through the admin command: it returns when no call can still start a write.
    const freeze = await orgFreeze(stacks.A, { org: moving.orgId });
    const frozenAt = Date.now();
    const finishedBeforeFreeze = claims.filter((c) => c.finishedAt !== undefined).length;
    await until(`B to reach A's LSN ${freeze.lsn}`, () => b.with((s) => reached(s, freeze.lsn), "retasc"), 15_000);
    const caughtUpMs = Date.now() - frozenAt;
    const onA = await a.with((s) => orgChecksums(s, tables, moving.orgId, userIds), "retasc");
    const onB = await b.with((s) => orgChecksums(s, tables, moving.orgId, userIds), "retasc");
    expect(onB).toEqual(onA);
    expect((await b.with((s) => s`select ref from billing_stripe_reversals`, "retasc")).map((r) => r.ref)).toEqual([`refund:ch-${moving.orgId}:100`]);
    const nextNumber = async (c: PgCluster) => (await c.with((s) => s`select next_number from projects where id = ${moving.projectId}`, "retasc"))[0]!.next_number;
    expect(await nextNumber(b)).toBe(await nextNumber(a));
    await b.with((s) => finishOnTarget(s, moving.orgId), "retasc");
    await a.with((s) => endPublication(s, tables), "retasc");

    // The flip: the agents point at B (the global directory's org → stack), then the unfreeze there.
    target = "B";
    await orgUnfreeze(stacks.B, { org: moving.orgId });
    const movedMs = Date.now() - frozenAt;
    await until("every issue done on B", async () => {
      const [row] = await b.with((s) => s`select count(*)::int as n from issues where org_id = ${moving.orgId} and status = 'done'`, "retasc");
      return row!.n === ISSUES;
    }, 30_000);
    running = false;
    await Promise.all(loops);

    // 0 double claims, 0 lost finishes (judged on B, where the org lives now).
    const status = new Map((await b.with((s) => s`select identifier, status from issues where org_id = ${moving.orgId}`, "retasc")).map((r) => [r.identifier as string, r.status as string]));
    for (const c of claims) if (c.finishedAt !== undefined && status.get(c.identifier) !== "done") violations.push(`[lost finish] ${c.identifier}`);
    const byIssue = new Map<string, Claim[]>();
    for (const c of claims) byIssue.set(c.identifier, [...(byIssue.get(c.identifier) ?? []), c]);
    for (const [identifier, list] of byIssue) {
      if (list.length > 1) violations.push(`[double claim] ${identifier} claimed ${list.length} times (no lease lapsed: TTL ${TTL_S} s)`);
    }
    const finishedTwice = await b.with((s) => s`select i.identifier from activity x join issues i on i.id = x.issue_id where x.kind = 'finished' and x.org_id = ${moving.orgId} group by 1 having count(*) > 1`, "retasc");
    for (const row of finishedTwice) violations.push(`[double finish] ${row.identifier}`);
    const heldAcross = claims.filter((c) => c.on === "A" && c.finishedOn === "B").length;
    const finishedOnB = claims.filter((c) => c.finishedOn === "B").length;
    process.stderr.write(
      `move: ${claims.length} claims, ${finishes} finishes (${finishedBeforeFreeze} before the freeze, ${heldAcross} claimed on A and finished on B), ` +
        `${frozenRefusals} ORG_FROZEN refusals; copied at ${copiedMs} ms; B reached A's LSN ${caughtUpMs} ms after the freeze settled, writable on B ${movedMs} ms after; ${((Date.now() - started) / 1000).toFixed(1)} s in all\n`,
    );
    expect(violations).toEqual([]);
    expect(finishes).toBe(ISSUES);
    expect(finishedBeforeFreeze).toBeGreaterThan(0);
    expect(finishedOnB).toBeGreaterThan(0);
    expect(frozenRefusals).toBeGreaterThan(0);

    // Nothing of the moved org was written on A after the freeze; the other org is as it was, and only on A.
    expect(await a.with((s) => orgChecksums(s, tables, moving.orgId, userIds), "retasc")).toEqual(onA);
    expect(await a.with((s) => orgChecksums(s, tables, staying.orgId, []), "retasc")).toEqual(stayingBefore);
    const stayingOnB = await b.with((s) => orgChecksums(s, tables, staying.orgId, []), "retasc");
    expect(Object.values(stayingOnB).filter((v) => !v.startsWith("0 "))).toEqual([]);

    // B's counters: the project's numbering went on from A's, the serial ids past the moved rows.
    const created = await saveIssue(withPrincipal(stacks.B, (await authenticateAgentKeyCached(stacks.B.db, keys[0]!, Date.now() + 5_000))!), {
      title: "After the move",
      work: true,
      changeType: "feat",
      priority: 2,
      noDependency: "independent",
    });
    expect(created.identifier).toBe(`MOVE-${ISSUES + 1}`);
    for (const table of SERIAL_TABLES) {
      const [row] = await b.with((s) => s.unsafe(`select (select last_value from ${table}_id_seq) >= coalesce((select max(id) from "${table}"), 0) as ok`), "retasc");
      expect(row!.ok, `${table}_id_seq past the moved rows`).toBe(true);
    }
    const [counts] = await b.with((s) => s`select coalesce(sum(n), 0)::int as n from issue_status_counts`, "retasc");
    // Changes not yet folded: an insert adds n issues, a delete takes n away, a status change neither.
    const [pending] = await b.with(
      (s) => s`select coalesce(sum(case when from_status is null then n when to_status is null then -n else 0 end), 0)::int as n from issue_count_changes`,
      "retasc",
    );
    expect(counts!.n + pending!.n).toBe(ISSUES + 1);
  }, 120_000);
});
