import fs from "node:fs";
import { sql } from "drizzle-orm";
import { afterAll, describe, expect, it } from "vitest";
import { openPostgres, query } from "../../db/client.ts";
import { servicesFor } from "../testing/db.ts";
import { runFailover } from "../testing/failover.ts";
import { fileIssues, seedOrg } from "../testing/fixtures.ts";
import { migratedDatabase, PgCluster, postgresOwnedDir, requireDebianPostgres, until } from "../testing/pg-cluster.ts";

/**
 * Issue 36 point 8 (decision 095; docs/operations.md, "Failover" and "Backups and restore").
 * Each test starts Debian PostgreSQL 15 clusters of its own on free ports of 127.0.0.1 (never the
 * shared server) and removes them, and its PgBouncer, however it ends. With the Debian binaries
 * missing it fails: .ci/run installs them. The larger swarm is `npm run bench:failover`.
 *
 * 1. Failover: a primary and a streaming replica under synchronous replication, behind PgBouncer
 *    in transaction mode; agents claim and finish through the service layer; mid-run the primary
 *    is stopped as in a crash (-m immediate), the replica promoted and PgBouncer repointed.
 * 2. Point-in-time restore: a base backup plus the WAL archive, to a time between two writes.
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

describe("failover and restore on Debian's PostgreSQL 15 (clusters of the test's own, on 127.0.0.1)", () => {
  it("a synchronous streaming replica promoted mid-swarm behind PgBouncer: 0 double claims, 0 lost finishes, a claim within 30 s", async () => {
    const result = await runFailover({ agents: 8, issues: 160, failAt: 0.4, leaseTtlSeconds: 4, log: (line) => process.stderr.write(`${line}\n`) });
    process.stderr.write(
      `failover: ${result.claims} claims, ${result.finishes} finishes (${result.finishedBeforeFailover} before the failover), ` +
        `${result.transportErrors} transport errors (${result.unhandledConnectionErrors.length} left unhandled by postgres.js), refusals ${JSON.stringify(result.refusals)}; promoted ${result.promotedMs} ms, ` +
        `first claim after the primary stopped ${result.firstClaimMs} ms; ${result.seconds.toFixed(1)} s in all\n`,
    );
    expect(result.violations).toEqual([]);
    expect(result.finishedBeforeFailover).toBeGreaterThan(0);
    expect(result.finishes).toBeGreaterThanOrEqual(160);
    expect(result.firstClaimMs).toBeLessThan(30_000);
  });

  it("a base backup plus the WAL archive restores to a point in time: exactly the issues written before it", async () => {
    requireDebianPostgres();
    const archive = postgresOwnedDir("retasc-wal-archive-");
    cleanups.push(() => fs.rmSync(archive, { recursive: true, force: true }));
    const source = await PgCluster.init(["wal_level = replica", "archive_mode = on", `archive_command = 'test ! -f ${archive}/%f && cp %p ${archive}/%f'`]);
    cleanups.push(() => source.close());
    await source.start();
    await migratedDatabase(source);
    const pool = await openPostgres(source.url("retasc"), { max: 4 });
    cleanups.push(() => pool.close());
    const services = servicesFor(pool);
    const org = await seedOrg(services);
    const author = org.agents.alice.ctx;

    const beforeBackup = await fileIssues(author, "Before the backup", 6);
    const backup = await PgCluster.baseBackup(source);
    cleanups.push(() => backup.close());
    const afterBackup = await fileIssues(author, "After the backup", 6);
    const [{ target }] = (await query<{ target: string }>(services.db, sql`select clock_timestamp()::text as target`)) as [{ target: string }];
    await sleep(20);
    const afterTarget = await fileIssues(author, "After the target", 6);
    // The segment holding the last writes goes to the archive now rather than when it fills.
    const [{ segment }] = (await query<{ segment: string }>(services.db, sql`select pg_walfile_name(pg_switch_wal()) as segment`)) as [{ segment: string }];
    await until(`WAL segment ${segment} in the archive`, () => fs.existsSync(`${archive}/${segment}`), 15_000);
    await pool.close();
    await source.stop("fast"); // the restore needs nothing of the source but its archive

    // The restore, as docs/operations.md gives it: the backup, restore_command, a target time, recovery.signal.
    backup.configure([`restore_command = 'cp ${archive}/%f %p'`, `recovery_target_time = '${target}'`, "recovery_target_action = 'promote'", "archive_mode = off"]);
    backup.signal("recovery.signal");
    await backup.start();
    await until("the restored cluster to finish recovery", async () => (await backup.with((s) => s`select pg_is_in_recovery() as r`))[0]!.r === false, 30_000);
    const restored = await backup.with((s) => s`select identifier from issues where org_id = ${org.orgId}`, "retasc");
    expect(restored.map((r) => r.identifier as string).sort()).toEqual([...beforeBackup, ...afterBackup].sort());
    expect(afterTarget.every((id) => !restored.some((r) => r.identifier === id))).toBe(true);
    const log = fs.readFileSync(backup.logFile, "utf8");
    expect(log).toMatch(/recovery stopping before commit of transaction/);
  });
});
