import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { query } from "../../../db/client.ts";
import { generateWorkspace, stateTypeOf } from "../../../test/fakes/linear-workspace.ts";
import { type FakeLinear, startFakeLinear } from "../../../test/fakes/linear.ts";
import type { Services } from "../../context.ts";
import { useTestServices } from "../../testing/database.ts";
import { servicesFor, testConfig } from "../../testing/db.ts";
import { seedOrg, type SeededOrg } from "../../testing/fixtures.ts";
import { waitFor } from "../../testing/wait.ts";
import { applyImportRun } from "../pipeline/apply-run.ts";
import { importStatus } from "../pipeline/status.ts";
import { dryRunLinearImport, startLinearImport } from "./index.ts";

/**
 * The owner's mapping of a Linear import: the dry run shows Linear's workflow states by name and
 * its priorities by word with what each becomes, the mapping given changes both, and the run
 * started with it applies exactly that (its history ending a remapped issue as what it became).
 */
const env = useTestServices();
let linear: FakeLinear;
let services: Services;
let org: SeededOrg;

beforeAll(async () => {
  linear = await startFakeLinear({ workspace: generateWorkspace({ issues: 40, seed: 11 }) });
  services = servicesFor(env.tdb.database, { config: testConfig({ LINEAR_API_URL: linear.apiUrl }) });
  org = await seedOrg(services, { prefix: "MAIN" });
}, 60_000);
afterAll(() => linear?.close());

const ctx = () => ({ ...org.agents.alice.ctx, config: services.config });
const mapping = { statuses: { "In Review": "done" as const, Backlog: "canceled" as const }, priorities: { urgent: 4, none: 3 } };

describe("the Linear import's mapping", () => {
  it("the dry run names states and priorities as Linear does, with the owner's mapping over the defaults", async () => {
    const input = { apiKey: linear.apiKey, teamId: linear.workspace.team.id };
    const plain = await dryRunLinearImport(ctx(), input);
    expect(plain.statuses.find((s) => s.from === "In Review")).toMatchObject({ to: "doing" });
    expect(plain.priorities.find((p) => p.from === "urgent")).toMatchObject({ to: 1 });
    const mapped = await dryRunLinearImport(ctx(), { ...input, mapping });
    expect(mapped.statuses.find((s) => s.from === "In Review")).toMatchObject({ to: "done" });
    expect(mapped.statuses.find((s) => s.from === "In Progress")).toMatchObject({ to: "doing" });
    expect(mapped.statuses.find((s) => s.from === "Backlog")).toMatchObject({ to: "canceled" });
    expect(mapped.priorities.find((p) => p.from === "urgent")).toMatchObject({ to: 4 });
    expect(mapped.priorities.find((p) => p.from === "none")).toMatchObject({ to: 3 });
    await expect(dryRunLinearImport(ctx(), { ...input, mapping: { statuses: { Todo: "later" as never } } })).rejects.toThrow(/Invalid option/);
  });

  it("the run started with the mapping applies it, issue by issue, its history included", async () => {
    const { runId } = await startLinearImport(ctx(), { apiKey: linear.apiKey, teamId: linear.workspace.team.id, newProject: { name: "Mapped" }, mapping });
    const staged = await waitFor(async () => {
      const s = await importStatus(ctx(), { runId });
      return s.phase !== "fetching" ? s : null;
    }, 60_000, "the run staged");
    if (staged.phase === "applying") await applyImportRun(services, runId);
    expect((await importStatus(ctx(), { runId })).phase).toBe("done");
    const w = linear.workspace;
    const rows = await query<{ number: number; status: string; priority: number; ended: string | null }>(
      services.db,
      sql`select i.number, i.status, i.priority, (select string_agg(a.kind, ',' order by a.kind) from activity a where a.issue_id = i.id and a.kind in ('done', 'canceled')) as ended
          from issues i join projects p on p.id = i.project_id where p.org_id = ${org.orgId} and p.prefix = ${w.team.key.toUpperCase()}`,
    );
    const byNumber = new Map(rows.map((r) => [r.number, r]));
    expect(byNumber.size).toBe(w.issues.length);
    const defaults: Record<string, string> = { started: "doing", completed: "done", canceled: "canceled" };
    let remapped = 0;
    for (const issue of w.issues) {
      const state = w.states.find((s) => s.id === issue.stateId)!;
      const want = mapping.statuses[state.name as keyof typeof mapping.statuses] ?? defaults[stateTypeOf(w, issue)] ?? "todo";
      const got = byNumber.get(issue.number)!;
      expect([issue.number, state.name, got.status]).toEqual([issue.number, state.name, want]);
      expect(got.priority).toBe(issue.priority === 1 ? 4 : issue.priority === 0 ? 3 : issue.priority);
      expect(got.ended).toBe(want === "done" || want === "canceled" ? want : null);
      if (state.name in mapping.statuses) remapped++;
    }
    expect(remapped).toBeGreaterThan(0);
  });
});
