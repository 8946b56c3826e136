import { sql } from "drizzle-orm";
import { openPostgres, query, type Database } from "../../db/client.ts";
import type { Ctx, Services } from "../context.ts";
import { DomainError } from "../errors.ts";
import { saveIssue } from "../issues/index.ts";
import { nextIssue } from "../queue/index.ts";
import { servicesFor, testConfig } from "./db.ts";
import { fileIssues, seedOrg } from "./fixtures.ts";
import { migratedDatabase, PgCluster, requireDebianPostgres, until } from "./pg-cluster.ts";
import { PrivatePgBouncer } from "./pgbouncer.ts";

/**
 * The failover swarm of issue 36 point 8 (decision 095): server/queue/failover.test.ts runs it
 * small in CI, bench/failover.ts larger. Debian PostgreSQL 15 clusters of its own on free ports
 * of 127.0.0.1 and a PgBouncer of its own, all removed however it ends.
 */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface FailoverOptions {
  agents: number;
  issues: number;
  /** Share of the issues finished (acknowledged) when the primary is stopped; null: no failover (the bench's baseline). */
  failAt: number | null;
  leaseTtlSeconds: number;
  log?: (line: string) => void;
}

export interface FailoverResult {
  violations: string[];
  /** Connection errors postgres.js let escape unhandled during the outage (porsager/postgres#1192), as main.ts would log them. */
  unhandledConnectionErrors: string[];
  claims: number;
  finishes: number;
  finishedBeforeFailover: number;
  transportErrors: number;
  refusals: Record<string, number>;
  /** From the primary's stop to the promoted replica taking writes (pg_ctl promote -w returned); 0 without a failover. */
  promotedMs: number;
  /** From the primary's stop to the first claim an agent was told of after the promotion (so answered by the promoted server). */
  firstClaimMs: number;
  seconds: number;
}

/**
 * The failover swarm (also bench/failover.ts at a larger size). Every call's start and answer are
 * written down; afterwards the promoted replica is read. Violations:
 * - a double claim: an issue claimed by a second agent while a first agent's acknowledged claim of
 *   it was live (before it was finished, and before the lease could have lapsed: the lease's
 *   expiry is computed from the app's clock at the call, so a claim answered before the first
 *   claim's start plus the TTL was taken from a live lease), or finished by two holders;
 * - a lost finish: a finish acknowledged to its agent that is not `done` on the promoted replica,
 *   or an issue claimed again after its finish was acknowledged;
 * - a refusal of a finish whose lease was certainly live (the promoted replica lost the claim).
 */
export async function runFailover(options: FailoverOptions): Promise<FailoverResult> {
  requireDebianPostgres();
  const log = options.log ?? (() => {});
  const local: (() => unknown)[] = [];
  const started = Date.now();
  // postgres.js 3.4.9 drops the promise of the type lookup it runs first on each new connection
  // (porsager/postgres#1192): a connection opened through PgBouncer while it cannot reach a
  // server rejects it unhandled. main.ts logs unhandled rejections and carries on; so does this
  // harness (instead of the test runner's failing on them), counting those and calling anything
  // else a violation.
  const unhandled: string[] = [];
  const connectionErrors: string[] = [];
  const runnerListeners = process.listeners("unhandledRejection");
  process.removeAllListeners("unhandledRejection");
  const onUnhandled = (reason: unknown) => {
    const error = reason as { code?: string; message?: string; query?: string };
    // Connection exceptions (08…), a server shutting down (57P…), postgres.js's own connection codes.
    if (typeof error?.code === "string" && /^(08|57P|CONNECTION_|ECONN)/.test(error.code)) {
      connectionErrors.push(`${error.code} ${error.message}${error.query ? ` (in: ${error.query.replace(/\s+/g, " ").slice(0, 80)})` : ""}`);
    }
    else unhandled.push(String((reason as Error)?.stack ?? reason).slice(0, 500));
  };
  process.on("unhandledRejection", onUnhandled);
  try {
    const primary = await PgCluster.init(["wal_level = replica", "max_wal_senders = 4", "synchronous_commit = on"]);
    local.push(() => primary.close());
    await primary.start();
    await migratedDatabase(primary);
    // The replica: a base backup of the primary streaming from it. Promoted, it has no standby of
    // its own, so it must not wait for one (an empty synchronous_standby_names).
    const replica = await PgCluster.baseBackup(primary, { standby: "replica", settings: ["synchronous_standby_names = ''"] });
    local.push(() => replica.close());
    await replica.start();
    await primary.with(async (s) => {
      await s`alter system set synchronous_standby_names = 'replica'`;
      await s`select pg_reload_conf()`;
    });
    await until("the replica to be the synchronous standby", async () => {
      const rows = await primary.with((s) => s`select sync_state from pg_stat_replication where application_name = 'replica'`);
      return rows[0]?.sync_state === "sync";
    }, 15_000);

    const bouncer = await PrivatePgBouncer.start(primary.port);
    // The clusters stop themselves at exit (pg-cluster.ts); so does the pooler.
    const stopBouncer = () => bouncer.close();
    process.once("exit", stopBouncer);
    local.push(() => process.off("exit", stopBouncer));
    // The app's pool through PgBouncer, as a deployment with DATABASE_DIRECT_URL opens it
    // (unnamed statements); nothing here LISTENs, so the direct URL is never opened.
    const pool: Database = await openPostgres(bouncer.url("retasc"), { max: options.agents + 2, directUrl: primary.url("retasc") });
    local.push(() => pool.close());
    // PgBouncer goes first: its clients' sockets close with it, so the pool's end does not wait them out.
    local.push(() => bouncer.close());
    const services: Services = servicesFor(pool, { config: testConfig({ LEASE_TTL_SECONDS: String(options.leaseTtlSeconds) }) });
    const org = await seedOrg(services);
    // A lease that lapses in the outage is reclaimed by chance, not because the issue kills agents.
    await query(services.db, sql`update projects set quarantine_after = 100000 where id = ${org.projectId}`);
    await fileIssues(org.agents.alice.ctx, "Failover work", options.issues);
    const agents: Ctx[] = [];
    for (let i = 0; i < options.agents; i++) {
      agents.push((await org.agentFor((["alice", "bob", "carol"] as const)[i % 3], `failover-${i}`)).ctx);
    }
    log(`failover: primary :${primary.port}, synchronous replica :${replica.port}, PgBouncer :${bouncer.port}; ${options.agents} agents, ${options.issues} issues`);

    type Claim = { agent: number; identifier: string; token: string; startedAt: number; ackedAt: number; finishedAt?: number; refused?: { code: string; endedAt: number } };
    const claims: Claim[] = [];
    const refusals: Record<string, number> = {};
    const violations: string[] = [];
    let transportErrors = 0;
    let finishes = 0;
    let stoppedAt = 0;
    let promotedAt = 0;
    let firstClaimAt = 0;
    let running = true;
    const ttlMs = options.leaseTtlSeconds * 1000;

    const agentLoop = async (index: number) => {
      const ctx = agents[index]!;
      while (running) {
        const startedAt = Date.now();
        let reply: Awaited<ReturnType<typeof nextIssue>>;
        try {
          reply = await nextIssue(ctx, {});
        } catch (error) {
          if (error instanceof DomainError) violations.push(`[refusal] next_issue refused ${error.code}: ${error.message}`);
          transportErrors++;
          await sleep(50);
          continue;
        }
        if (!("claimToken" in reply)) {
          await sleep(100); // nothing ready: the rest is held by others or done
          continue;
        }
        const claim: Claim = { agent: index, identifier: reply.identifier, token: reply.claimToken, startedAt, ackedAt: Date.now() };
        claims.push(claim);
        // The first claim the promoted replica answered (the old primary was gone by then).
        if (promotedAt && !firstClaimAt && claim.ackedAt > promotedAt) firstClaimAt = claim.ackedAt;
        await sleep(5 + (index % 4) * 5); // the work
        for (;;) {
          try {
            await saveIssue(ctx, { identifier: claim.identifier, claimToken: claim.token, status: "done" });
            claim.finishedAt = Date.now();
            finishes++;
            break;
          } catch (error) {
            if (error instanceof DomainError) {
              if ((error.details as { alreadyFinished?: boolean } | undefined)?.alreadyFinished) {
                // A retry of a finish that went through before its answer was lost.
                claim.finishedAt = Date.now();
                finishes++;
              } else {
                refusals[error.code] = (refusals[error.code] ?? 0) + 1;
                claim.refused = { code: error.code, endedAt: Date.now() };
              }
              break;
            }
            transportErrors++;
            await sleep(50);
          }
        }
      }
    };
    const loops = agents.map((_, i) => agentLoop(i));

    let finishedBeforeFailover: Claim[] = [];
    let promotedMs = 0;
    let firstClaimMs = 0;
    // After a failover the promoted replica serves; without one (the bench's baseline) the primary does.
    let serving = primary;
    if (options.failAt !== null) {
      const failAt = options.failAt;
      await until(`${Math.round(failAt * 100)}% of the issues finished`, () => finishes >= failAt * options.issues, 60_000);
      // The failure: the primary goes as in a crash; the replica is promoted; PgBouncer repointed.
      stoppedAt = Date.now();
      finishedBeforeFailover = claims.filter((c) => c.finishedAt !== undefined).map((c) => ({ ...c }));
      await primary.stop("immediate");
      await replica.promote();
      promotedAt = Date.now();
      promotedMs = promotedAt - stoppedAt;
      bouncer.repoint(replica.port);
      serving = replica;
      log(`failover: primary stopped (immediate) after ${finishedBeforeFailover.length} finishes; replica promoted in ${promotedMs} ms; PgBouncer repointed`);
      await until("a claim after the failover", () => firstClaimAt > 0, 30_000).catch((error: Error) => violations.push(`[first claim] ${error.message}`));
      firstClaimMs = firstClaimAt ? firstClaimAt - stoppedAt : Number.POSITIVE_INFINITY;
      log(`failover: first claim after the primary stopped: ${firstClaimMs} ms`);
    }
    // A claim whose answer was lost in the outage lapses after the TTL and is taken again.
    const doneOnPromoted = async () =>
      Number((await serving.with((s) => s`select count(*)::int as n from issues where status = 'done'`, "retasc"))[0]!.n);
    await until("every issue done on the promoted replica", async () => (await doneOnPromoted()) === options.issues, 2 * ttlMs + 30_000).catch((error: Error) =>
      violations.push(`[time] ${error.message}`),
    );
    running = false;
    await Promise.all(loops);

    // What the promoted replica holds.
    const rows = await serving.with((s) => s`select identifier, status from issues`, "retasc");
    const status = new Map(rows.map((r) => [r.identifier as string, r.status as string]));
    const finishedTwice = await serving.with(
      (s) => s`select i.identifier, count(*)::int as n from activity a join issues i on i.id = a.issue_id where a.kind = 'finished' group by 1 having count(*) > 1`,
      "retasc",
    );
    for (const row of finishedTwice) violations.push(`[double finish] ${row.identifier} finished ${row.n} times`);
    for (const c of claims.filter((c) => c.finishedAt !== undefined)) {
      if (status.get(c.identifier) !== "done") violations.push(`[lost finish] ${c.identifier}: finished by agent ${c.agent} at ${c.finishedAt}, ${status.get(c.identifier)} on the promoted replica`);
    }
    const byIssue = new Map<string, Claim[]>();
    for (const c of claims) byIssue.set(c.identifier, [...(byIssue.get(c.identifier) ?? []), c]);
    for (const [identifier, list] of byIssue) {
      const finishers = new Set(list.filter((c) => c.finishedAt !== undefined).map((c) => c.token));
      if (finishers.size > 1) violations.push(`[double claim] ${identifier} finished under ${finishers.size} claims`);
      for (const first of list) {
        for (const second of list) {
          if (second === first || second.ackedAt < first.ackedAt) continue;
          // No agent here releases: until its lease could have lapsed, the first claim holds the
          // issue (or has finished it), so a second claim answered in that time is a double claim.
          if (second.ackedAt < first.startedAt + ttlMs) {
            violations.push(`[double claim] ${identifier}: agent ${second.agent} was handed it while agent ${first.agent}'s lease was live`);
          } else if (first.finishedAt !== undefined && second.startedAt > first.finishedAt) {
            violations.push(`[lost finish] ${identifier}: claimed by agent ${second.agent} after agent ${first.agent}'s finish was acknowledged`);
          }
        }
      }
      for (const c of list) {
        if (c.refused && c.refused.endedAt < c.startedAt + ttlMs) violations.push(`[lost claim] ${identifier}: agent ${c.agent}'s finish refused ${c.refused.code} while its lease was live`);
      }
    }
    for (const c of finishedBeforeFailover) {
      if (status.get(c.identifier) !== "done") violations.push(`[lost finish] ${c.identifier} was finished before the failover`);
    }
    for (const u of unhandled) violations.push(`[unhandled rejection] ${u}`);
    return {
      violations,
      unhandledConnectionErrors: connectionErrors,
      claims: claims.length,
      finishes,
      finishedBeforeFailover: finishedBeforeFailover.length,
      transportErrors,
      refusals,
      promotedMs,
      firstClaimMs,
      seconds: (Date.now() - started) / 1000,
    };
  } finally {
    process.off("unhandledRejection", onUnhandled);
    for (const listener of runnerListeners) process.on("unhandledRejection", listener);
    for (const cleanup of local.reverse()) {
      try {
        await cleanup();
      } catch {
        // the next cleanup still runs
      }
    }
  }
}

