import fc from "fast-check";
import { afterAll, beforeAll, describe, it } from "vitest";
import { createTestDatabase, servicesFor, TestClock, testConfig, testDriver, type TestDatabase } from "../testing/db.ts";
import type { Services } from "../context.ts";
import { CAP, setup, TTL_MS, type ModelStats } from "./testing/model-harness.ts";
import { boundaryCmd, clockCmd, createCmd, dueCmd, priorityCmd, relateCmd, statusCmd, sweepCmd } from "./testing/model-issue-commands.ts";
import { batchCmd, checkpointCmd, claimCmd, finishCmd, heartbeatCmd, nextCmd, releaseCmd } from "./testing/model-lease-commands.ts";

/**
 * Model-based test: random sequences of issue writes, claims, lease operations, review and
 * clock moves run against the engine and the reference model side by side; every dispatch
 * result, every refusal code (with the holder or blockers it names) and, after each sweep,
 * every stored ranking column must agree. The harness and the commands are in testing/model-*.ts;
 * the mix of commands is here.
 */

const RUNS = testDriver === "pglite" ? 30 : 60;
/**
 * Fixed seeds, so every run (CI's too) replays the same command sequences and a failure is
 * reproducible; MODEL_SEED=<n> replays one seed, MODEL_SEED=random explores a new one (printed).
 */
const FIXED_SEEDS = [20261204, 38, 4070113];
const SEEDS = process.env.MODEL_SEED === "random" ? [Math.floor(Math.random() * 2 ** 31)] : process.env.MODEL_SEED ? [Number(process.env.MODEL_SEED)] : FIXED_SEEDS;
const MAX_COMMANDS = 50;

let tdb: TestDatabase;
let services: Services;
const clock = new TestClock();
const stats: ModelStats = { executed: 0, tally: new Map() };

beforeAll(async () => {
  tdb = await createTestDatabase();
  services = servicesFor(tdb.database, {
    clock,
    config: testConfig({ LEASE_TTL_SECONDS: String(TTL_MS / 1000), CLAIM_CAP_DEFAULT: String(CAP) }),
  });
});
afterAll(() => tdb.close());

const commands = [
  createCmd,
  createCmd,
  createCmd,
  createCmd,
  createCmd,
  relateCmd,
  priorityCmd,
  dueCmd,
  nextCmd,
  nextCmd,
  nextCmd,
  nextCmd,
  batchCmd,
  batchCmd,
  claimCmd,
  claimCmd,
  heartbeatCmd,
  checkpointCmd,
  checkpointCmd,
  releaseCmd,
  finishCmd,
  finishCmd,
  finishCmd,
  statusCmd,
  clockCmd,
  clockCmd,
  boundaryCmd,
  sweepCmd,
];

describe("dispatch against the reference model", () => {
  for (const seed of SEEDS) {
    const runs = Math.ceil(RUNS / SEEDS.length);
    it(`agrees on every dispatch and refusal over ${runs} random runs of up to ${MAX_COMMANDS} commands (seed ${seed}, MODEL_SEED=${seed} replays it)`, { timeout: 300_000 }, async () => {
      const started = Date.now();
      stats.executed = 0;
      stats.tally.clear();
      console.info(`model-based: seed ${seed} (MODEL_SEED=${seed} replays it), ${runs} runs on ${testDriver}`);
      await fc.assert(
        fc.asyncProperty(fc.commands(commands, { maxCommands: MAX_COMMANDS, size: "max" }), (cmds) => fc.asyncModelRun(() => setup(services, clock, stats), cmds)),
        { numRuns: runs, seed },
      );
      console.info(`model-based (seed ${seed}): ${runs} runs, ${stats.executed} commands in ${Date.now() - started} ms on ${testDriver}`);
      console.info([...stats.tally].sort().map(([outcome, n]) => `${outcome}: ${n}`).join(", "));
    });
  }
});
