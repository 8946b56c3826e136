import crypto from "node:crypto";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { query } from "../../db/client.ts";
import type { Services } from "../../server/context.ts";
import { withPrincipal } from "../../server/with-principal.ts";
import { Keyring } from "../../server/crypto/index.ts";
import { humanPrincipal } from "../../server/orgs/access.ts";
import { createTestDatabase, servicesFor, testConfig, testDriver, type TestDatabase } from "../../server/testing/db.ts";
import { generateWorkspace } from "../../test/fakes/linear-workspace.ts";
import { type FakeLinear, startFakeLinear } from "../../test/fakes/linear.ts";
import { seedOrg } from "../../server/testing/fixtures.ts";
import { linearImportStatus, startLinearImport } from "../../server/transfer/linear/index.ts";
import { snapshotProject } from "../../server/transfer/linear/testing.ts";
import { spawnWorker, type WorkerProcess } from "../testing/spawn.ts";
import { waitFor } from "../../server/testing/wait.ts";

/**
 * A worker process SIGKILLed while it applies a Linear import: a second worker resumes the
 * outbox job at the first page not committed, and the org ends up exactly as an org whose
 * import ran uninterrupted. The worker is a real child process on a real PostgreSQL (PGlite
 * lives in one process, so this runs on the postgres driver only). The test process plays the
 * app: it holds the key and fetches; the key must not reach the worker's output.
 */
const masterKey = crypto.randomBytes(32);
let tdb: TestDatabase;
let services: Services;
let linear: FakeLinear;
const workers: WorkerProcess[] = [];

describe.runIf(testDriver === "postgres")("a Linear import under a worker crash", () => {
  beforeAll(async () => {
    [tdb, linear] = await Promise.all([createTestDatabase(), startFakeLinear({ workspace: generateWorkspace({ issues: 1000, seed: 99 }) })]);
    services = servicesFor(tdb.database, { config: testConfig({ LINEAR_API_URL: linear.apiUrl }), keyring: new Keyring(masterKey) });
  }, 60_000);
  afterAll(async () => {
    for (const w of workers) await w.kill();
    await Promise.all([linear?.close(), tdb?.close()]);
  });

  const worker = () => {
    const w = spawnWorker({ DATABASE_URL: tdb.url!, REDIS_URL: "", RETASC_MASTER_KEY: masterKey.toString("base64"), JOB_LOCK_MS: "1500", OUTBOX_POLL_MS: "200", JOB_BACKOFF_MS: "100", LOG_LEVEL: "info", LINEAR_API_URL: linear.apiUrl });
    workers.push(w);
    return w;
  };
  const importInto = async (prefix: string) => {
    const org = await seedOrg(services, { prefix });
    const ctx = withPrincipal(services, humanPrincipal(org.orgId, org.agents.alice.userId, "cli"));
    const { runId } = await startLinearImport(ctx, { apiKey: linear.apiKey, teamId: linear.workspace.team.id, newProject: { name: "Engineering" } });
    return { org, ctx, runId };
  };
  const runOf = async (runId: string) => (await query<{ phase: string; pages_applied: number; pages_fetched: number }>(services.db, sql`select phase, pages_applied, pages_fetched from linear_import_runs where id = ${runId}`))[0]!;

  it("resumes after SIGKILL to the same result as an uninterrupted run", async () => {
    const first = worker();
    const calm = await importInto("CALM");
    const calmStatus = await waitFor(async () => {
      const s = await linearImportStatus(calm.ctx, { runId: calm.runId });
      return s.phase === "done" || s.phase === "failed" ? s : null;
    }, 480_000, "the uninterrupted import", 200);
    expect(calmStatus, first.output()).toMatchObject({ phase: "done", done: 1000 });

    const hit = await importInto("HIT");
    const atKill = await waitFor(async () => {
      const run = await runOf(hit.runId);
      return run.phase === "applying" && run.pages_applied >= 5 ? run : null;
    }, 480_000, "the import to be applying", 10);
    await first.kill();
    const stopped = await runOf(hit.runId);
    expect(stopped.phase).toBe("applying");
    expect(stopped.pages_applied).toBeLessThan(stopped.pages_fetched);
    expect(stopped.pages_applied).toBeGreaterThanOrEqual(atKill.pages_applied);

    const second = worker();
    const status = await waitFor(async () => {
      const s = await linearImportStatus(hit.ctx, { runId: hit.runId });
      return s.phase === "done" || s.phase === "failed" ? s : null;
    }, 480_000, "the resumed import", 200);
    expect(status, second.output()).toMatchObject({ phase: "done", done: 1000, total: 1000, counts: { created: 1000, updated: 0, unchanged: 0 } });

    const [calmIssues, hitIssues] = await Promise.all([snapshotProject(services, calm.org.orgId, "ENG"), snapshotProject(services, hit.org.orgId, "ENG")]);
    expect(hitIssues.size).toBe(1000);
    expect(Object.fromEntries(hitIssues)).toEqual(Object.fromEntries(calmIssues));
    const counts = async (orgId: string) =>
      (await query(services.db, sql`select (select count(*)::int from comments where org_id = ${orgId}) as comments, (select count(*)::int from relations where org_id = ${orgId}) as relations,
        (select count(*)::int from attachments where org_id = ${orgId}) as attachments, (select count(*)::int from import_ghosts where org_id = ${orgId}) as ghosts,
        (select count(*)::int from activity where org_id = ${orgId}) as activity, (select count(*)::int from linear_import_pages) as staged`))[0];
    expect(await counts(hit.org.orgId)).toEqual(await counts(calm.org.orgId));

    const printed = first.output() + second.output();
    expect(printed).not.toContain(linear.apiKey);
    const [outbox] = await query<{ payloads: string }>(services.db, sql`select string_agg(payload::text, ' ') as payloads from outbox`);
    expect(outbox!.payloads).toContain(hit.runId);
    expect(outbox!.payloads).not.toContain(linear.apiKey);
  }, 1_200_000);
});
