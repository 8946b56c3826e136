#!/usr/bin/env node
// `npm test`: the suites against PostgreSQL when TEST_DATABASE_URL or DATABASE_URL is set,
// then the same suites against embedded PGlite; PGlite alone when no URL is set.
// Browser and CLI end-to-end tests (e2e/, vitest.e2e.config.ts) run last when Chromium is
// installed. Extra args go to the unit run only.
import { spawnSync } from "node:child_process";
import fs from "node:fs";

const args = process.argv.slice(2);
const url = process.env.TEST_DATABASE_URL || process.env.DATABASE_URL;
const runs = url ? ["postgres", "pglite"] : ["pglite"];

function run(label, command, commandArgs, env) {
  process.stderr.write(`\n=== ${label} ===\n`);
  const result = spawnSync(command, commandArgs, { stdio: "inherit", env: { ...process.env, ...env } });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

for (const driver of runs) {
  run(`unit and integration tests on ${driver}`, "npx", ["vitest", "run", ...args], {
    RETASC_TEST_DRIVER: driver,
    ...(url ? { TEST_DATABASE_URL: url } : {}),
  });
}
if (args.length === 0) {
  if (!fs.existsSync("/usr/bin/chromium")) {
    process.stderr.write("\n! /usr/bin/chromium not found: browser tests skipped (apt-get install -y chromium)\n");
  } else {
    for (const driver of runs) {
      run(`browser and CLI end-to-end tests on ${driver}`, "npx", ["vitest", "run", "--config", "vitest.e2e.config.ts"], {
        RETASC_TEST_DRIVER: driver,
        ...(url ? { TEST_DATABASE_URL: url } : {}),
      });
    }
  }
}
