import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { migrateDatabase, openPglite } from "../db/client.ts";
import { transactionWithNotices } from "../server/events/index.ts";
import { testDriver } from "../server/testing/db.ts";
import { enqueueProbe, probeReport } from "./testing/probe.ts";
import { spawnWorker } from "./testing/spawn.ts";
import { waitFor } from "../server/testing/wait.ts";

/**
 * The embedded mode has one process per data directory, so the crash test works on a data
 * directory: queue a slow job, let a runner start it, SIGKILL the runner, start another on the
 * same directory, and read the outcome once it has stopped. (Runs in the PGlite pass only.)
 */
describe.runIf(testDriver === "pglite")("embedded mode: a runner killed mid-job", () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "retasc-embedded-"));
  afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  const openData = async () => {
    const database = await openPglite(path.join(dataDir, "pgdata"));
    await migrateDatabase(database);
    return database;
  };
  const env = { DATABASE_URL: "", REDIS_URL: "", RETASC_DATA_DIR: dataDir, LOG_LEVEL: "debug", JOB_LOCK_MS: "60000" };

  it("runs the job again on the next start and it takes effect once", async () => {
    let database = await openData();
    const id = await transactionWithNotices(database.db, (tx) => enqueueProbe(tx, "test.probe", { tag: "embedded", sleepMs: 4_000 }));
    await database.close();

    const first = spawnWorker(env);
    try {
      await waitFor(async () => first.output().includes(`"outboxId":${id},"attempt":1,"msg":"job started"`), 60_000, "the job to start");
    } finally {
      await first.kill();
    }
    // The lock it held (60 s) is not waited out: the data-directory lock proves it is dead.
    const second = spawnWorker(env);
    try {
      await waitFor(async () => second.output().includes(`"outboxId":${id},"attempt":2,"msg":"job started"`), 60_000, "the rerun");
      // SIGTERM mid-job: a graceful stop lets the rerun finish before the process exits.
      expect(await second.terminate()).toBe(0);
    } finally {
      await second.kill();
    }

    database = await openData();
    try {
      const report = await probeReport(database.db);
      expect(report.startsByOutboxId.get(id)).toBe(2);
      expect(report.effects).toEqual([{ key: `outbox:${id}`, runs: 1 }]);
      expect(report.outbox).toMatchObject([{ id, completed: true, failed: false, attempts: 2 }]);
    } finally {
      await database.close();
    }
  });
});
