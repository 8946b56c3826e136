import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { query } from "../../../db/client.ts";
import { renderHtml } from "../../markdown/render.ts";
import { useTestServices } from "../../testing/database.ts";
import { seedOrg } from "../../testing/fixtures.ts";
import { snapshotProject } from "../linear/testing.ts";
import { importToEnd, finishRun } from "../pipeline/testing.ts";
import { pagedReader } from "../pipeline/stream.ts";
import { exportText, furnishOrg } from "../testing.ts";
import { dryRunCsvImport, previewCsvImport, startCsvImport } from "./index.ts";
import { csvIssues } from "./read.ts";
import type { Ctx } from "../../context.ts";

/** CSV through the pipeline: a mapping guessed from the header and adjusted, rows reconciled by their id column. */
const env = useTestServices();

const trello = [
  "Card ID,Card Name,Card Description,List Name,Labels,Members,Due Date,Created,Priority,Blocked By,Parent",
  `a1,Write the spec,"Two lines:\nsee **here**",To Do,"docs, q3",ada@example.com,2026-03-01,2026-01-01T09:00:00Z,High,,`,
  `a2,Build it,"<script>alert(1)</script> [x](javascript:alert(2))",In Progress,backend,Bob,,2026-01-02T09:00:00Z,P0,a1,a4`,
  `a3,=HYPERLINK("http://evil.example"),,Shipped,,,,2026-01-03T09:00:00Z,,a2,a4`,
  `a4,Q3 launch,,Backlog,,,,2026-01-04T09:00:00Z,Low,,`,
].join("\n");

const finish = (ctx: Ctx, runId: string) => finishRun(ctx, ctx, runId, 60_000);

describe("the CSV import", () => {
  it("previews the header, the first rows and a mapping guessed from it, for owners and admins", async () => {
    const org = await seedOrg(env.services);
    const preview = await previewCsvImport(org.agents.alice.ctx, { csv: trello });
    expect(preview.mapping.columns).toEqual({ id: "Card ID", title: "Card Name", body: "Card Description", status: "List Name", labels: "Labels", assignee: "Members", dueDate: "Due Date", createdAt: "Created", priority: "Priority", blockedBy: "Blocked By", parent: "Parent" });
    expect(preview.rowCount).toBe(4);
    expect(preview.statuses).toEqual({ "To Do": "todo", "In Progress": "doing", Shipped: "done", Backlog: "todo" });
    expect(preview.priorities).toEqual({ High: 2, P0: 1, Low: 4 });
    await expect(previewCsvImport(org.agents.bob.ctx, { csv: trello })).rejects.toMatchObject({ code: "FORBIDDEN" });
    await expect(previewCsvImport(org.agents.alice.ctx, { csv: 'a,"b\n' })).rejects.toMatchObject({ code: "INVALID_INPUT" });
  });

  it("imports rows with the mapping picked, into the project's next numbers; the same file again reconciles", async () => {
    const org = await seedOrg(env.services, { prefix: "MAIN" });
    const ctx = org.agents.alice.ctx;
    const { mapping } = await previewCsvImport(ctx, { csv: trello });
    await expect(startCsvImport(ctx, { csv: trello, name: "board.csv", mapping: { columns: { ...mapping.columns, body: "Nope" } }, projectId: org.projectId })).rejects.toMatchObject({ code: "INVALID_INPUT", message: expect.stringContaining('"Nope"') });
    const chosen = { ...mapping, statuses: { Backlog: "canceled" as const } };
    const dry = await dryRunCsvImport(ctx, { csv: trello, name: "board.csv", mapping: { columns: { ...mapping.columns, priority: undefined } } });
    expect(dry).toMatchObject({ dryRun: true, source: "csv", counts: { issues: 4, containers: 1, relations: 2, labels: 3 }, known: { issues: 0 } });
    expect(dry.statuses).toContainEqual({ from: "Shipped", to: "done", issues: 1 });
    expect(dry.ghosts.map((g) => g.name).sort()).toEqual(["Bob", "ada"]);
    expect(dry.leftBehind).toEqual(["columns not mapped: Priority"]);
    const run = await startCsvImport(ctx, { csv: trello, name: "board.csv", mapping: chosen, projectId: org.projectId });
    expect(await finish(ctx, run.runId)).toMatchObject({ phase: "done", source: "csv", counts: { created: 4 } });
    const got = await snapshotProject(env.services, org.orgId, "MAIN");
    expect([...got.keys()].sort()).toEqual(["MAIN-1", "MAIN-2", "MAIN-3", "MAIN-4"]);
    expect(got.get("MAIN-1")).toMatchObject({ title: "Write the spec", body: "Two lines:\nsee **here**", status: "todo", priority: 2, labels: ["docs:#6b778c", "q3:#6b778c"], assignee: "ada", createdAt: "2026-01-01T09:00:00.000Z" });
    expect(got.get("MAIN-2")).toMatchObject({ status: "doing", priority: 1, parent: "MAIN-4" });
    expect(got.get("MAIN-1")!.relations).toEqual(["blocks:MAIN-2"]);
    expect(got.get("MAIN-2")!.relations).toEqual(["blocks:MAIN-3"]);
    expect(got.get("MAIN-3")).toMatchObject({ title: '=HYPERLINK("http://evil.example")', status: "done" });
    expect(got.get("MAIN-4")).toMatchObject({ status: "canceled", work: false });
    expect(renderHtml(got.get("MAIN-2")!.body!)).not.toMatch(/<script|href="javascript:/i);

    const again = await startCsvImport(ctx, { csv: trello, name: "board.csv", mapping: chosen, projectId: org.projectId });
    expect(await finish(ctx, again.runId)).toMatchObject({ phase: "done", counts: { created: 0, updated: 0, unchanged: 4 } });
    const edited = `${trello.replace("Write the spec", "Write the spec v2")}\na5,One more,,To Do,,,,2026-01-05T09:00:00Z,,,`;
    const third = await startCsvImport(ctx, { csv: edited, name: "board.csv", mapping: chosen, projectId: org.projectId });
    expect(await finish(ctx, third.runId)).toMatchObject({ phase: "done", counts: { created: 1, updated: 1, unchanged: 3 } });
    const after = await snapshotProject(env.services, org.orgId, "MAIN");
    expect(after.size).toBe(5);
    expect(after.get("MAIN-1")!.title).toBe("Write the spec v2");
    expect(after.get("MAIN-5")!.title).toBe("One more");
  });

  it("an imported review gets its review clock at the import (the floor: high); a later run keeps it while it stays in review and starts it again on a new entry", async () => {
    const org = await seedOrg(env.services, { prefix: "RVW" });
    const ctx = org.agents.alice.ctx;
    const board = (status: string, title = "Check the request") => ["Card ID,Card Name,List Name,Created", `r1,${title},${status},2026-01-01T09:00:00Z`].join("\n");
    const { mapping } = await previewCsvImport(ctx, { csv: board("In Review") });
    const chosen = { ...mapping, statuses: { "In Review": "review" as const, "To Do": "todo" as const } };
    const run = async (csv: string) => {
      const started = await startCsvImport(ctx, { csv, name: "board.csv", mapping: chosen, projectId: org.projectId });
      expect(await finish(ctx, started.runId)).toMatchObject({ phase: "done" });
      const [row] = await query<{ status: string; review_since: string | null; own_level: number; effective_level: number }>(
        env.services.db,
        sql`select status, review_since, own_level, effective_level from issues where org_id = ${org.orgId} and identifier = 'RVW-1'`,
      );
      return { status: row!.status, since: row!.review_since === null ? null : new Date(row!.review_since).getTime(), level: row!.own_level, effective: row!.effective_level };
    };
    const before = Date.now();
    const first = await run(board("In Review"));
    expect(first).toMatchObject({ status: "review", level: 3, effective: 3 });
    expect(first.since).toBeGreaterThanOrEqual(before - 1_000);
    // Changed at the source, still in review: the clock runs on.
    expect(await run(board("In Review", "Check the request again"))).toEqual(first);
    // Out of review: the floor goes; back in review, the clock starts again.
    expect(await run(board("To Do", "Check the request again"))).toMatchObject({ status: "todo", level: 0, effective: 0, since: first.since });
    await new Promise((resolve) => setTimeout(resolve, 10));
    const again = await run(board("In Review", "Check the request once more"));
    expect(again).toMatchObject({ status: "review", level: 3 });
    expect(again.since).toBeGreaterThan(first.since!);
  });

  it("reads Retasc's own issues CSV: its header guessed whole, blockers and parents by identifier", async () => {
    const source = await seedOrg(env.services, { prefix: "ENG" });
    await furnishOrg(source);
    const csv = await exportText(source.agents.alice.ctx, { format: "csv" });
    const org = await seedOrg(env.services, { prefix: "MAIN" });
    const preview = await previewCsvImport(org.agents.alice.ctx, { csv });
    expect(preview.mapping.columns).toMatchObject({ id: "identifier", title: "title", status: "status", priority: "priority", parent: "parent", labels: "labels", blockedBy: "blocked_by", dueDate: "due_at", createdAt: "created_at", updatedAt: "updated_at", body: "body" });
    const issues = csvIssues(csv, preview.mapping, "retasc.csv", "2026-01-01T00:00:00.000Z");
    const run = await importToEnd(org.agents.alice.ctx, pagedReader("csv", issues, 2), { sourceId: "retasc.csv", prefix: "", total: issues.length, newProject: { name: "From CSV", prefix: "CSV" }, action: "import_csv" });
    expect(run).toMatchObject({ phase: "done", counts: { created: issues.length } });
    const [edges] = await query<{ n: number }>(env.services.db, sql`select count(*)::int as n from relations where org_id = ${org.orgId} and type = 'blocks'`);
    expect(edges!.n).toBe(issues.reduce((n, i) => n + i.relations.length, 0));
    expect(edges!.n).toBeGreaterThan(0);
  });
});
