#!/usr/bin/env node
// `npm test`: the type check and the schema/migrations check, then the suites against
// PostgreSQL when TEST_DATABASE_URL or DATABASE_URL is set and again against embedded PGlite
// (PGlite alone when no URL is set), then the browser and CLI end-to-end tests (e2e/,
// vitest.e2e.config.ts) in Debian's Chromium. With TEST_POOLER_URL (a PgBouncer in transaction
// mode in front of TEST_DATABASE_URL's server; .ci/run starts one), the PostgreSQL run of the
// concurrency suites and the swarm goes through it instead of straight to PostgreSQL
// (TEST_DATABASE_DIRECT_URL for LISTEN and migrations), so the pooler adds little time. A missing browser fails the run; only an explicit
// RETASC_SKIP_E2E=1 skips those, loudly. Extra args go to the unit run only (and skip the rest).
import { spawnSync } from "node:child_process";
import fs from "node:fs";

const args = process.argv.slice(2);
const url = process.env.TEST_DATABASE_URL || process.env.DATABASE_URL;
const runs = url ? ["postgres", "pglite"] : ["pglite"];
const chromium = "/usr/bin/chromium";

function run(label, command, commandArgs, env = {}) {
  process.stderr.write(`\n=== ${label} ===\n`);
  const result = spawnSync(command, commandArgs, { stdio: "inherit", env: { ...process.env, ...env } });
  if (result.status !== 0) {
    process.stderr.write(`\n✗ ${label} failed\n`);
    process.exit(result.status ?? 1);
  }
}

const e2e = args.length === 0 && process.env.RETASC_SKIP_E2E !== "1";
if (e2e && !fs.existsSync(chromium)) {
  process.stderr.write(
    `✗ ${chromium} not found: the browser tests need Debian's Chromium (apt-get install -y chromium).\n` +
      "  To run everything else without them, set RETASC_SKIP_E2E=1.\n",
  );
  process.exit(1);
}

if (args.length === 0) {
  run("type check", "npm", ["run", "--silent", "typecheck"]);
  run("schema and migrations agree", process.execPath, ["scripts/check-migrations.mjs"]);
}
const pooler = url && args.length === 0 ? process.env.TEST_POOLER_URL : undefined;
const pooledFiles = ["server/queue/concurrency.test.ts", "server/mcp/app-concurrency.test.ts", "swarm/swarm.test.ts"];
// After a PostgreSQL run, the PGlite run leaves out the suites that test the wire doors, not the
// data layer (the CLI's and the fuzzers'): they already ran against the same app (decision 033).
const wireOnly = ["cli/test/**", "fuzz/**"];
for (const driver of runs) {
  const pooled = driver === "postgres" && pooler;
  const repeated = driver === "pglite" && runs.length > 1 && args.length === 0;
  const excluded = [...(pooled ? pooledFiles : []), ...(repeated ? wireOnly : [])];
  run(`unit and integration tests on ${driver}`, "npx", ["vitest", "run", ...args, ...excluded.flatMap((f) => ["--exclude", f])], {
    RETASC_TEST_DRIVER: driver,
    ...(url ? { TEST_DATABASE_URL: url } : {}),
  });
  if (pooled) {
    run("the concurrency suites and the swarm on postgres through PgBouncer (transaction mode)", "npx", ["vitest", "run", ...pooledFiles], {
      RETASC_TEST_DRIVER: "postgres",
      TEST_DATABASE_URL: pooler,
      TEST_DATABASE_DIRECT_URL: url,
    });
  }
}
if (e2e) {
  for (const driver of runs) {
    run(`browser and CLI end-to-end tests on ${driver}`, "npx", ["vitest", "run", "--config", "vitest.e2e.config.ts"], {
      RETASC_TEST_DRIVER: driver,
      ...(url ? { TEST_DATABASE_URL: url } : {}),
    });
  }
} else if (args.length === 0) {
  process.stderr.write("\n! RETASC_SKIP_E2E=1: the browser and CLI end-to-end tests were NOT run\n");
}
