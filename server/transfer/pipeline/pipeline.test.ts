import { sql } from "drizzle-orm";
import { afterAll, describe, expect, it } from "vitest";
import { query } from "../../../db/client.ts";
import { humanCtx } from "../../orgs/access.ts";
import { useTestServices } from "../../testing/database.ts";
import { seedOrg } from "../../testing/fixtures.ts";
import { removeTemps, tempDir } from "../../testing/temp-dirs.ts";
import { importExport } from "../import.ts";
import { writeExport } from "../testing.ts";
import { applyImportRun } from "./apply-run.ts";
import { FILES_AT_ONCE } from "./files.ts";
import { beginImport } from "./start.ts";
import { pagedReader, type SourceReader } from "./stream.ts";
import { importToEnd, person, sourceIssues } from "./testing.ts";
import { waitFor } from "../../testing/wait.ts";

/**
 * The shared pipeline with a source read from memory: what every adapter's run goes through
 * (staging, the batched apply, linking), checked on what it writes.
 */
const env = useTestServices();
afterAll(removeTemps);

const counted = async (orgId: string) =>
  (
    await query<{ issues: number; comments: number; attachments: number; relations: number; ghosts: number }>(
      env.services.db,
      sql`select (select count(*)::int from issues where org_id = ${orgId}) as issues,
                 (select count(*)::int from comments where org_id = ${orgId}) as comments,
                 (select count(*)::int from attachments where org_id = ${orgId}) as attachments,
                 (select count(*)::int from relations where org_id = ${orgId}) as relations,
                 (select count(*)::int from import_ghosts where org_id = ${orgId}) as ghosts`,
    )
  )[0]!;

describe("the import pipeline", () => {
  it("keeps the source's numbers when its prefix is the project's, and reconciles a second run in place", async () => {
    const org = await seedOrg(env.services, { prefix: "MAIN" });
    const ctx = org.agents.alice.ctx;
    const items = sourceIssues(120, "SRC");
    const first = await importToEnd(ctx, pagedReader("memory", items, 50), { sourceId: "memory", prefix: "SRC", total: 120, newProject: { name: "Source" }, action: "import_linear" });
    expect(first).toMatchObject({ phase: "done", error: null, counts: { created: 120, updated: 0, unchanged: 0, comments: 360, ghosts: 4 } });
    expect(await counted(org.orgId)).toMatchObject({ issues: 120, comments: 360, attachments: 120, relations: 118, ghosts: 4 });
    const [container] = await query<{ identifier: string; work: boolean }>(env.services.db, sql`select identifier, work from issues where org_id = ${org.orgId} and identifier = 'SRC-1'`);
    expect(container).toEqual({ identifier: "SRC-1", work: false });
    const [reply] = await query<{ n: number }>(env.services.db, sql`select count(*)::int as n from comments c join comments p on p.id = c.parent_id where c.org_id = ${org.orgId}`);
    expect(reply!.n).toBe(120);

    items[5]!.title = "Changed at the source";
    items[6]!.comments.push({ id: "src-7-c4", body: "New", createdAt: "2026-05-01T00:00:00.000Z", retractedAt: null, parentId: "src-7-c2", author: person(9) });
    const second = await importToEnd(ctx, pagedReader("memory", items, 50), { sourceId: "memory", prefix: "SRC", total: 120, projectId: first.projectId, action: "import_linear" });
    expect(second.counts).toMatchObject({ created: 0, updated: 1, unchanged: 119, ghosts: 1 });
    expect(await counted(org.orgId)).toMatchObject({ issues: 120, comments: 361, attachments: 120, relations: 118, ghosts: 5 });
  });

  it("gives a source without the project's prefix the project's next numbers", async () => {
    const org = await seedOrg(env.services, { prefix: "MAIN" });
    const ctx = org.agents.alice.ctx;
    const items = sourceIssues(7, "X").map((i) => ({ ...i, number: null }));
    const run = await importToEnd(ctx, pagedReader("csv", items, 3), { sourceId: "file", prefix: "", total: 7, projectId: org.projectId, action: "import_linear" });
    expect(run).toMatchObject({ phase: "done", counts: { created: 7 } });
    const rows = await query<{ identifier: string }>(env.services.db, sql`select identifier from issues where project_id = ${org.projectId} order by number`);
    expect(rows.map((r) => r.identifier)).toEqual(["MAIN-1", "MAIN-2", "MAIN-3", "MAIN-4", "MAIN-5", "MAIN-6", "MAIN-7"]);
  });

  it("re-imported into an org restored from an export, duplicates nothing: comments and attachments included", async () => {
    const org = await seedOrg(env.services, { prefix: "MAIN" });
    const items = sourceIssues(30, "RST");
    const target = { sourceId: "memory", prefix: "RST", total: 30, newProject: { name: "Restored source" }, action: "import_linear" as const };
    await importToEnd(org.agents.alice.ctx, pagedReader("memory", items, 50), target);
    const file = await writeExport(org.agents.alice.ctx, tempDir("retasc-pipeline-"));
    const restored = await importExport(env.services, { file, "org-name": "Restored" });
    const before = await counted(restored.orgId);
    expect(before).toMatchObject({ issues: 30 + 0, comments: 90, attachments: 30 });
    const ctx = (await humanCtx(env.services, { orgId: restored.orgId, userId: org.agents.alice.userId, runtime: "cli" })).ctx;
    const [project] = await query<{ id: string }>(env.services.db, sql`select id from projects where org_id = ${restored.orgId} and prefix = 'RST'`);
    items[0]!.comments[0]!.body = "Edited at the source";
    const again = await importToEnd(ctx, pagedReader("memory", items, 50), { ...target, newProject: undefined, projectId: project!.id });
    expect(again).toMatchObject({ phase: "done", counts: { created: 0 } });
    expect(await counted(restored.orgId)).toMatchObject({ issues: before.issues, comments: before.comments, attachments: before.attachments, relations: before.relations });
    const cipher = await env.services.keyring.forOrg(env.services.db, restored.orgId);
    const edited = await query<{ body_enc: string }>(env.services.db, sql`select body_enc from comments where org_id = ${restored.orgId} and created_at = ${items[0]!.comments[0]!.createdAt}`);
    expect(edited.map((c) => cipher.decrypt(c.body_enc))).toEqual(["Edited at the source"]);
  });

  it("applies the staged pages while later ones are still read, and downloads a page's files a few at a time", async () => {
    const org = await seedOrg(env.services, { prefix: "MAIN" });
    const ctx = org.agents.alice.ctx;
    const items = sourceIssues(6, "PIP").map((i) => ({ ...i, attachments: i.attachments.map((a) => ({ ...a, file: { size: 3 } })) }));
    const paged = pagedReader("memory", items, 3);
    let inFlight = 0;
    let most = 0;
    const reader: SourceReader = {
      source: "memory",
      async readPage(cursor, notice) {
        // The second page is read only once the first is applied: a run that applied after its last page never gets there.
        if (cursor !== null) await waitFor(async () => (await query(env.services.db, sql`select 1 from issues where org_id = ${org.orgId} and identifier = 'PIP-1'`)).length > 0 || null, 20_000, "the first page applied while fetching");
        return paged.readPage(cursor, notice);
      },
      async fetchFile() {
        most = Math.max(most, ++inFlight);
        await new Promise((resolve) => setTimeout(resolve, 50));
        inFlight--;
        return { bytes: Buffer.from("pdf") };
      },
    };
    const { runId } = await beginImport(ctx, reader, { sourceId: "memory", prefix: "PIP", total: 6, newProject: { name: "Pipelined" }, action: "import_linear" });
    // What the job enqueued with the first staged page does.
    await waitFor(async () => (await query(env.services.db, sql`select 1 from linear_import_pages where run_id = ${runId}`)).length > 0 || null, 20_000, "the first page staged");
    await applyImportRun(ctx, runId);
    const [run] = await query<{ phase: string; done: number; counts: string }>(env.services.db, sql`select phase, done, counts from linear_import_runs where id = ${runId}`);
    expect(run).toMatchObject({ phase: "done", done: 6 });
    expect(JSON.parse(run!.counts)).toMatchObject({ created: 6, filesCopied: 6 });
    expect(most).toBeGreaterThan(1);
    expect(most).toBeLessThanOrEqual(FILES_AT_ONCE);
    expect(await counted(org.orgId)).toMatchObject({ issues: 6, comments: 18, attachments: 6 });
  });
});
