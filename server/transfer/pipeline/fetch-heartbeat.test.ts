import { eq, sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { query } from "../../../db/client.ts";
import { linearImportRuns } from "../../../db/schema/index.ts";
import { useTestServices } from "../../testing/database.ts";
import { servicesFor, testConfig } from "../../testing/db.ts";
import { seedOrg } from "../../testing/fixtures.ts";
import { waitFor } from "../../testing/wait.ts";
import { withPrincipal } from "../../with-principal.ts";
import { humanPrincipal } from "../../orgs/access.ts";
import { applyImportRun } from "./apply-run.ts";
import { fetchStaleMs } from "./run-row.ts";
import { beginImport, type RunTarget } from "./start.ts";
import { importStatus } from "./status.ts";
import { pagedReader, type SourceReader } from "./stream.ts";
import { finishRun, sourceIssues } from "./testing.ts";

/**
 * The reading process's heartbeat: a live fetch keeps its run however slow a page is, and a run
 * whose reader died (its process gone, with the credential) is let go within six beats, so the
 * owner can start again at once rather than wait. Beats of 250 ms here: the window is 1.5 s.
 */
const BEAT_MS = 250;
const env = useTestServices({ config: testConfig({ IMPORT_FETCH_HEARTBEAT_MS: String(BEAT_MS) }) });

/** A memory source of 120 issues in pages of 50 whose second page waits for `release`. */
function slowSecondPage() {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const inner = pagedReader("memory", sourceIssues(120, "HBT"), 50);
  const reader: SourceReader = {
    source: "memory",
    async readPage(cursor) {
      if (cursor !== null) await gate;
      return inner.readPage(cursor);
    },
  };
  return { reader, release };
}
const target: RunTarget = { sourceId: "memory", prefix: "HBT", total: 120, newProject: { name: "Heartbeat" }, action: "import_linear" };
const runRow = async (runId: string) => (await env.services.db.select().from(linearImportRuns).where(eq(linearImportRuns.id, runId)))[0]!;

describe("a fetching run's heartbeat", () => {
  it("keeps a live fetch through a page slower than the window, and the run ends done", async () => {
    expect(fetchStaleMs(env.services.config)).toBe(6 * BEAT_MS);
    const org = await seedOrg(env.services, { prefix: "MAIN" });
    const ctx = withPrincipal(env.services, humanPrincipal(org.orgId, org.agents.alice.userId, "cli"));
    const { reader, release } = slowSecondPage();
    const { runId } = await beginImport(ctx, reader, target);
    try {
      await waitFor(async () => ((await runRow(runId)).pagesFetched === 1 ? true : null), 30_000, "the first page staged");
      // Twice the window with the second page still unread: every status read (which lets silent runs go) finds the run alive.
      const until = Date.now() + 2 * fetchStaleMs(env.services.config);
      while (Date.now() < until) {
        expect((await importStatus(ctx, { runId })).phase).toBe("fetching");
        await new Promise((r) => setTimeout(r, BEAT_MS));
      }
      expect(Date.now() - (await runRow(runId)).fetchHeartbeatAt!.getTime()).toBeLessThan(fetchStaleMs(env.services.config));
    } finally {
      release();
    }
    expect(await finishRun(env.services, ctx, runId)).toMatchObject({ phase: "done", error: null, counts: { created: 120 } });
  }, 60_000);

  it("lets a run whose reader stopped beating go within the window: FETCH_INTERRUPTED, and a new import starts at once and reconciles", async () => {
    const org = await seedOrg(env.services, { prefix: "MAIN" });
    const ctx = withPrincipal(env.services, humanPrincipal(org.orgId, org.agents.alice.userId, "cli"));
    // The reader's process, as it is when it has died: it stages the first page, then never beats again.
    const dead = servicesFor(env.tdb.database, { keyring: env.services.keyring, config: testConfig({ IMPORT_FETCH_HEARTBEAT_MS: "3600000" }) });
    const { reader, release } = slowSecondPage();
    const first = await beginImport(withPrincipal(dead, ctx.principal), reader, target);
    let gone: Awaited<ReturnType<typeof importStatus>>;
    try {
      await waitFor(async () => ((await runRow(first.runId)).pagesFetched === 1 ? true : null), 30_000, "the first page staged");
      // The apply takes the first page and waits for the next, as the `linear.apply` job does. Only
      // a status read (or a start) lets a silent run go, so none is made before the page is applied.
      const applying = applyImportRun(env.services, first.runId);
      await waitFor(async () => ((await runRow(first.runId)).pagesApplied === 1 ? true : null), 30_000, "the first page applied");
      gone = await waitFor(async () => {
        const s = await importStatus(ctx, { runId: first.runId });
        return s.phase === "failed" ? s : null;
      }, 30_000, "the silent run let go");
      await applying;
    } finally {
      // Its reader waking up later writes nothing into the failed run (checked below).
      release();
    }
    expect(gone).toMatchObject({ error: "FETCH_INTERRUPTED", counts: { created: 50 } });
    expect(Date.now() - (await runRow(first.runId)).fetchHeartbeatAt!.getTime()).toBeLessThan(fetchStaleMs(env.services.config) + 5_000);
    const [staged] = await query<{ n: number }>(env.services.db, sql`select count(*)::int as n from linear_import_pages where run_id = ${first.runId}`);
    expect(staged!.n).toBe(0);
    const again = await beginImport(ctx, pagedReader("memory", sourceIssues(120, "HBT"), 50), { ...target, newProject: undefined, projectId: first.projectId });
    expect(await finishRun(env.services, ctx, again.runId)).toMatchObject({ phase: "done", error: null, counts: { created: 70, unchanged: 50 } });
    expect((await runRow(first.runId)).pagesFetched).toBe(1);
  }, 60_000);
});
