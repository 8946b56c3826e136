/**
 * `npm run bench:wal -- [--issues N] [--loops N] [--beats N] [--verbose]`: WAL written per claim +
 * finish and per heartbeat (issue 36 point 4, decision 097), read with `pg_walinspect` between the
 * LSNs around each run, on a scratch database.
 *
 * An org with `--issues` todo issues (ranked as the app ranks them); then, through the service
 * layer:
 * - claim + finish: one agent's nextIssue then saveIssue {status: "done", claimToken}, `--loops` times;
 * - heartbeat: the agent holds 7 claims (its key's cap) and heartbeats each by its token until
 *   `--beats` heartbeats are done;
 * - the baseline, in the same run: a pgbench-like single-row UPDATE (`abalance + 1` of a 100-byte
 *   row keyed by its primary key, one transaction each), as many times.
 *
 * WAL is cluster-wide, and other databases write beside the run (a temporary replication slot keeps
 * the segments from being removed before they are read): a record counts when it touches
 * this database's relations, or when its transaction id is one that did (its commit). Each figure is
 * bytes per operation, total and by resource manager, with the share in full-page images (those
 * depend on when the last checkpoint was, so the goals are held on the WAL without them, and the
 * total is printed beside them), and how many of the issue updates were HOT. `--verbose` lists the
 * relations written most. Exits 1 above the goals: 3 KB per claim + finish, 1 KB per heartbeat.
 * Not in CI.
 */
import { sql } from "drizzle-orm";
import postgres from "postgres";
import { useBenchPostgres } from "./lib/postgres-env.ts";
import { log, round } from "./lib/stats.ts";
import { wholeNumberOption } from "./lib/args.ts";

const option = (name: string, fallback: number) => wholeNumberOption(name, fallback);
const ISSUES = option("issues", 5_000);
const LOOPS = option("loops", 500);
const BEATS = option("beats", 700);
const VERBOSE = process.argv.includes("--verbose");
const GOAL_CLAIM_FINISH = 3 * 1024;
const GOAL_HEARTBEAT = 1024;

useBenchPostgres();
// Imported once the database is chosen: server/testing/db.ts reads it at import.
const { createTestDatabase, servicesFor } = await import("../server/testing/db.ts");
const { seedOrg } = await import("../server/testing/fixtures.ts");
const { nextIssue, heartbeat } = await import("../server/queue/index.ts");
const { saveIssue } = await import("../server/issues/index.ts");
const { fillQueue } = await import("../server/testing/held-work.ts");
const { query } = await import("../db/client.ts");

const tdb = await createTestDatabase({ max: 4 });
// Other databases' drops force checkpoints, which remove WAL segments before the run reads them:
// a temporary replication slot on a connection of its own keeps them until the run ends.
const holder = postgres(tdb.url!, { max: 1, onnotice: () => {} });
const services = servicesFor(tdb.database);
const { db } = services;
let failed = false;

interface Wal {
  /** Bytes of WAL, full-page images included. */
  total: number;
  fpi: number;
  records: number;
  byManager: Map<string, { bytes: number; fpi: number; records: number }>;
  byRelation: Map<string, number>;
  /** Heap updates of `issues`: all, and those that were HOT. */
  issueUpdates: number;
  issueHot: number;
}

const lsn = async () => (await query<{ lsn: string }>(db, sql`select pg_current_wal_insert_lsn()::text as lsn`))[0]!.lsn;

/** The WAL this database's work wrote between two LSNs (see the header). */
async function walBetween(start: string): Promise<Wal> {
  // pg_walinspect reads only flushed WAL: a commit of ours flushes everything before it.
  await db.execute(sql`select txid_current()`);
  const end = (await query<{ lsn: string }>(db, sql`select pg_current_wal_flush_lsn()::text as lsn`))[0]!.lsn;
  const rows = await query<{ rm: string; type: string; len: number; fpi: number; rel: string | null; mine: boolean }>(
    db,
    sql`with r as (select * from pg_get_wal_records_info(${start}::pg_lsn, ${end}::pg_lsn)),
             me as (select oid from pg_database where datname = current_database()),
             touched as (select distinct r.xid from r, me where r.block_ref like '%rel %/' || me.oid || '/%' and r.xid <> 0)
        select r.resource_manager as rm, r.record_type as type, r.record_length::int as len, r.fpi_length::int as fpi,
               substring(r.block_ref from 'rel [0-9]+/' || me.oid || '/([0-9]+)') as rel,
               (r.block_ref like '%rel %/' || me.oid || '/%' or r.xid in (select xid from touched)) as mine
          from r, me`,
  );
  const names = new Map(
    (await query<{ node: string; name: string }>(db, sql`select pg_relation_filenode(oid)::text as node, relname as name from pg_class where pg_relation_filenode(oid) is not null`)).map(
      (r) => [r.node, r.name],
    ),
  );
  const issuesNode = [...names].find(([, name]) => name === "issues")![0];
  const wal: Wal = { total: 0, fpi: 0, records: 0, byManager: new Map(), byRelation: new Map(), issueUpdates: 0, issueHot: 0 };
  for (const r of rows) {
    if (!r.mine) continue;
    wal.total += r.len;
    wal.fpi += r.fpi;
    wal.records += 1;
    const m = wal.byManager.get(r.rm) ?? { bytes: 0, fpi: 0, records: 0 };
    m.bytes += r.len;
    m.fpi += r.fpi;
    m.records += 1;
    wal.byManager.set(r.rm, m);
    const rel = r.rel ? (names.get(r.rel) ?? `filenode ${r.rel}`) : "(no relation)";
    wal.byRelation.set(rel, (wal.byRelation.get(rel) ?? 0) + r.len - r.fpi);
    if (r.rel === issuesNode && r.rm === "Heap") {
      if (r.type.startsWith("HOT_UPDATE")) wal.issueHot += 1;
      if (r.type.startsWith("HOT_UPDATE") || r.type.startsWith("UPDATE")) wal.issueUpdates += 1;
    }
  }
  return wal;
}

async function measure(label: string, ops: number, run: () => Promise<void>): Promise<Wal & { label: string; ops: number }> {
  const start = await lsn();
  await run();
  return { label, ops, ...(await walBetween(start)) };
}

const perOp = (bytes: number, ops: number) => Math.round(bytes / ops);
function report(w: Wal & { label: string; ops: number }, base?: Wal & { ops: number }) {
  const noFpi = perOp(w.total - w.fpi, w.ops);
  const baseNoFpi = base ? perOp(base.total - base.fpi, base.ops) : 0;
  log(
    `${w.label}: ${noFpi} B of WAL per op without full-page images${base ? ` (${round(noFpi / baseNoFpi)}x the plain UPDATE's ${baseNoFpi} B)` : ""}; ` +
      `${perOp(w.total, w.ops)} B with them (${round((100 * w.fpi) / Math.max(1, w.total), 1)}% images); ${round(w.records / w.ops, 1)} records per op` +
      (w.issueUpdates ? `; issue updates HOT: ${w.issueHot} of ${w.issueUpdates}` : ""),
  );
  const managers = [...w.byManager].sort((a, b) => b[1].bytes - a[1].bytes);
  for (const [rm, m] of managers) {
    log(`  ${rm.padEnd(12)} ${String(perOp(m.bytes - m.fpi, w.ops)).padStart(6)} B/op  (${round((100 * (m.bytes - m.fpi)) / Math.max(1, w.total - w.fpi), 1)}%), ${round(m.records / w.ops, 1)} records/op, +${perOp(m.fpi, w.ops)} B/op images`);
  }
  if (VERBOSE) {
    for (const [rel, bytes] of [...w.byRelation].sort((a, b) => b[1] - a[1]).slice(0, 25)) log(`    ${rel.padEnd(40)} ${perOp(bytes, w.ops)} B/op`);
  }
  return noFpi;
}

const check = (label: string, ok: boolean) => {
  if (!ok) failed = true;
  return `${label}: ${ok ? "PASS" : "FAIL"}`;
};

try {
  await db.execute(sql`create extension if not exists pg_walinspect`);
  await holder`select pg_create_physical_replication_slot(${`retasc_wal_bench_${process.pid}`}, true, true)`;
  const org = await seedOrg(services, { prefix: "WAL" });
  const alice = org.agents.alice.ctx;
  await fillQueue(services, org.orgId, org.projectId, "WAL", ISSUES);
  // pgbench's accounts table, as the baseline's row.
  await db.execute(sql`create table bench_accounts (aid int primary key, bid int, abalance int, filler char(84)) with (fillfactor = 100)`);
  await db.execute(sql`insert into bench_accounts select n, 1, 0, '' from generate_series(1, ${ISSUES}::int) n`);
  await db.execute(sql`vacuum analyze`);
  await db.execute(sql`checkpoint`);

  // Warm-up: plans cached, the first pages touched after the checkpoint.
  for (let n = 0; n < 20; n++) {
    const reply = await nextIssue(alice, {});
    if (!("claimToken" in reply)) throw new Error("ran out of work");
    await saveIssue(alice, { identifier: reply.identifier, status: "done", claimToken: reply.claimToken });
  }

  const plain = await measure("plain UPDATE of one row", LOOPS, async () => {
    for (let n = 0; n < LOOPS; n++) await db.execute(sql`update bench_accounts set abalance = abalance + 1 where aid = ${1 + ((n * 7919) % ISSUES)}`);
  });
  const claimFinish = await measure("claim + finish", LOOPS, async () => {
    for (let n = 0; n < LOOPS; n++) {
      const reply = await nextIssue(alice, {});
      if (!("claimToken" in reply)) throw new Error("ran out of work");
      await saveIssue(alice, { identifier: reply.identifier, status: "done", claimToken: reply.claimToken });
    }
  });
  const claims: { identifier: string; claimToken: string }[] = [];
  for (let n = 0; n < 7; n++) {
    const reply = await nextIssue(alice, {});
    if (!("claimToken" in reply)) throw new Error("ran out of work");
    claims.push({ identifier: reply.identifier, claimToken: reply.claimToken });
  }
  const beats = await measure("heartbeat", BEATS, async () => {
    for (let n = 0; n < BEATS; n++) await heartbeat(alice, claims[n % claims.length]!);
  });

  log(`WAL per operation, ${ISSUES} issues, ${LOOPS} claim + finish, ${BEATS} heartbeats over ${claims.length} claims:`);
  report(plain);
  const cf = report(claimFinish, plain);
  const hb = report(beats, plain);
  log(check(`claim + finish <= ${GOAL_CLAIM_FINISH} B of WAL (without images)`, cf <= GOAL_CLAIM_FINISH));
  log(check(`heartbeat <= ${GOAL_HEARTBEAT} B of WAL (without images)`, hb <= GOAL_HEARTBEAT));
} finally {
  await holder.end();
  if (process.env.WAL_KEEP) log(`kept ${tdb.url}`);
  else await tdb.close();
}
process.exit(failed ? 1 : 0);
