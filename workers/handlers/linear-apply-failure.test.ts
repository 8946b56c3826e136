import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { query } from "../../db/client.ts";
import type { Ctx, RetascEvent, Services } from "../../server/context.ts";
import { withPrincipal } from "../../server/with-principal.ts";
import { createLogger } from "../../server/log.ts";
import { humanPrincipal } from "../../server/orgs/access.ts";
import { markOutboxFailed } from "../../server/outbox/index.ts";
import { useTestServices } from "../../server/testing/database.ts";
import { servicesFor, testConfig } from "../../server/testing/db.ts";
import { generateWorkspace } from "../../test/fakes/linear-workspace.ts";
import { type FakeLinear, startFakeLinear } from "../../test/fakes/linear.ts";
import { seedOrg } from "../../server/testing/fixtures.ts";
import { waitFor } from "../../server/testing/wait.ts";
import { linearImportStatus, startLinearImport } from "../../server/transfer/linear/index.ts";
import { linearApply } from "./linear-apply.ts";

/**
 * A `linear.apply` job the runner gives up on, for a reason other than a taken number, ends
 * its run `failed` (APPLY_FAILED), staging dropped, progress published, and the org can import
 * again; whether the handler saw the last attempt or the outbox marked the job failed without it.
 * No runner here: the test delivers the job to the handler itself, as a runner would.
 */
const env = useTestServices();
let services: Services;
let linear: FakeLinear;
const events: RetascEvent[] = [];
const log = createLogger("silent");

beforeAll(async () => {
  linear = await startFakeLinear({ workspace: generateWorkspace({ issues: 30, seed: 7 }) });
  const base = servicesFor(env.tdb.database, { config: testConfig({ LINEAR_API_URL: linear.apiUrl, JOB_ATTEMPTS: "3" }) });
  services = { ...base, events: { publish: async (tx, event) => { events.push(event); await base.events.publish(tx, event); } } };
}, 60_000);
afterAll(() => linear?.close());

async function fetchedRun(prefix: string) {
  const org = await seedOrg(services, { prefix });
  const ctx = withPrincipal(services, humanPrincipal(org.orgId, org.agents.alice.userId, "cli"));
  const { runId } = await startLinearImport(ctx, { apiKey: linear.apiKey, teamId: linear.workspace.team.id, newProject: { name: "Engineering" } });
  await waitFor(async () => ((await linearImportStatus(ctx, { runId })).phase === "applying" ? true : null), 60_000, "the fetch to finish", 50);
  const [job] = await query<{ id: number }>(services.db, sql`select id from outbox where job = 'linear.apply' and payload->>'runId' = ${runId}`);
  const [run] = await query<{ project_id: string }>(services.db, sql`select project_id from linear_import_runs where id = ${runId}`);
  return { org, ctx, runId, outboxId: Number(job!.id), projectId: run!.project_id };
}
const stagedPages = async (runId: string) =>
  Number((await query<{ n: number }>(services.db, sql`select count(*)::int as n from linear_import_pages where run_id = ${runId}`))[0]!.n);
const startAgain = (ctx: Ctx, projectId: string) => startLinearImport(ctx, { apiKey: linear.apiKey, teamId: linear.workspace.team.id, projectId });

describe("a linear.apply job given up on", () => {
  it("retries while attempts remain, then ends the run failed with a code on the last, and frees the org", async () => {
    const { ctx, runId, outboxId, projectId } = await fetchedRun("LAST");
    // A staged page no key decrypts: an error no retry fixes, though nothing says it is permanent.
    await services.db.execute(sql`update linear_import_pages set payload_enc = 'not a ciphertext' where run_id = ${runId}`);
    const deliver = (attempt: number) => linearApply({ services, log, key: `outbox:${outboxId}`, outboxId, attempt }, { orgId: ctx.principal.orgId, runId });

    await expect(deliver(1)).rejects.toThrow();
    expect(await linearImportStatus(ctx, { runId })).toMatchObject({ phase: "applying", error: null });
    await expect(startAgain(ctx, projectId)).rejects.toMatchObject({ code: "CONFLICT" });

    await expect(deliver(3)).rejects.toThrow();
    expect(await linearImportStatus(ctx, { runId })).toMatchObject({ phase: "failed", error: "APPLY_FAILED", finishedAt: expect.any(String) });
    expect(await stagedPages(runId)).toBe(0);
    expect(events.filter((e) => e.kind === "import.progress" && e.runId === runId).at(-1)).toMatchObject({ phase: "failed", error: "APPLY_FAILED" });
    const next = await startAgain(ctx, projectId);
    expect(next.runId).not.toBe(runId);
  });

  it("a run whose job the outbox failed without the handler knowing (a worker that died every time) fails at the next start", async () => {
    const { ctx, runId, outboxId, projectId } = await fetchedRun("DIED");
    await markOutboxFailed(services.db, outboxId, "failed in queue");
    expect(await linearImportStatus(ctx, { runId })).toMatchObject({ phase: "applying" });
    const next = await startAgain(ctx, projectId);
    expect(next.runId).not.toBe(runId);
    expect(await linearImportStatus(ctx, { runId })).toMatchObject({ phase: "failed", error: "APPLY_FAILED" });
    expect(await stagedPages(runId)).toBe(0);
    expect(events.filter((e) => e.kind === "import.progress" && e.runId === runId).at(-1)).toMatchObject({ phase: "failed", error: "APPLY_FAILED" });
  });
});
