import { sql } from "drizzle-orm";
import { afterAll, describe, expect, it } from "vitest";
import { testDriver } from "../server/testing/db.ts";
import { startApp as startAppProcess, type AppProcess } from "../server/testing/app-process.ts";
import { redisTestsCanRun, uniquePrefix, useDatabaseAndRedis } from "./testing/redis-url.ts";
import { waitFor } from "../server/testing/wait.ts";

/** The web process with its job runner: what /healthz says about jobs, and a clean stop. */
const running: AppProcess[] = [];
afterAll(async () => {
  await Promise.all(running.map((app) => app.stop("SIGKILL")));
});

/** /healthz shows the jobs to the holder of the metrics token, which every app here is started with. */
const METRICS_TOKEN = "workers-test-metrics-token-0123456789";
const startApp = (env: Record<string, string | undefined>) => startAppProcess({ METRICS_TOKEN, ...env });
const jobsOf = async (app: AppProcess) =>
  ((await (await fetch(`${app.url}/healthz`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).json()) as {
    jobs: Record<string, unknown>;
  }).jobs;

describe("the web process runs jobs", () => {
  it("in the embedded mode, in-process by default, and stops cleanly", async () => {
    const app = await startApp({ LOG_LEVEL: "info" });
    running.push(app);
    expect(await jobsOf(app)).toEqual({ runner: "inline", pending: 0, failed: 0, failedSweeps24h: 0, oldestPendingSeconds: 0 });
    expect(await app.stop("SIGTERM")).toBe(0);
    expect(app.output()).toContain("in-process job runner stopped");
  });

  describe.runIf(testDriver === "postgres" && redisTestsCanRun)("in the server mode", () => {
    const stack = useDatabaseAndRedis();

    it("leaves jobs to `npm run workers` unless RETASC_WORKERS=inline", async () => {
      const app = await startApp({ DATABASE_URL: stack.tdb.url, REDIS_URL: stack.redis.url });
      running.push(app);
      expect(await jobsOf(app)).toMatchObject({ runner: "separate", pending: 0, failed: 0 });
      expect(await app.stop()).toBe(0);
    });

    it("with RETASC_WORKERS=inline runs BullMQ in-process and counts a failed job in /healthz", async () => {
      const app = await startApp({
        DATABASE_URL: stack.tdb.url,
        REDIS_URL: stack.redis.url,
        RETASC_WORKERS: "inline",
        BULLMQ_PREFIX: uniquePrefix(),
        LOG_LEVEL: "info",
      });
      running.push(app);
      expect(await jobsOf(app)).toMatchObject({ runner: "bullmq", failed: 0 });
      // A row no handler knows (say, written by a newer version): a permanent failure, kept.
      await stack.tdb.database.db.execute(
        sql`insert into outbox (job, payload) values ('from.the.future', '{}'::jsonb); select pg_notify('retasc_outbox', '')`,
      );
      await waitFor(async () => (await jobsOf(app)).failed === 1, 20_000, "the failed job in /healthz");
      expect(await jobsOf(app)).toMatchObject({ pending: 0, failed: 1 });
      expect(await app.stop()).toBe(0);
      expect(app.output()).toContain("BullMQ job runner stopped");
    });
  });
});
