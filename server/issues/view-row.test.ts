import { getTableColumns, sql } from "drizzle-orm";
import { expect, it } from "vitest";
import { query } from "../../db/client.ts";
import { issues } from "../../db/schema/index.ts";
import { useTestServices } from "../testing/database.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { saveIssue } from "./index.ts";
import { findIssue } from "./lookups.ts";
import type { IssueRow } from "./types.ts";
import { renderIssueView, viewReadsFrom } from "./views.ts";

/**
 * A claim's and a finish's results carry the issue's columns an issue view reads
 * (retasc_view_row, db/migrations/0080), not the whole row (issue 30). A column
 * renderIssueView starts to read must be added there too, or the claim's and the finish's
 * replies would show it as null while get_issue shows its value.
 */
const env = useTestServices();

/** A value of the column's type, so no read of a row is skipped by a branch on a null. */
function filled(key: string, dataType: string, row: IssueRow): unknown {
  if (key.endsWith("Enc")) return row.titleEnc;
  if (key === "changeType") return "feat";
  if (key === "triage") return "accepted";
  if (key === "verification") return "pending";
  if (dataType === "date") return new Date();
  if (dataType === "number") return 1;
  if (dataType === "boolean") return true;
  return "x";
}

it("retasc_view_row builds the columns an issue view reads, with the id and the lease's expiry, and no other", async () => {
  const org = await seedOrg(env.services);
  const { alice } = org.agents;
  const created = await saveIssue(alice.ctx, { title: "Every column", work: true, changeType: "feat", noDependency: "none", priority: 2 });
  const stored = await findIssue(env.services.db, alice.ctx.principal, created.identifier);
  const columns = getTableColumns(issues);
  const row = Object.fromEntries(
    Object.entries(stored).map(([key, value]) => [key, value ?? filled(key, columns[key as keyof typeof columns].dataType, stored)]),
  ) as IssueRow;
  const read = new Set<string>();
  const spied = new Proxy(row, {
    get(target, key, receiver) {
      if (typeof key === "string") read.add(key);
      return Reflect.get(target, key, receiver);
    },
  });
  const now = new Date();
  const rels = [{ type: "blocks" as const, sourceId: "other", targetId: row.id, identifier: "X-1", status: "todo" as const, projectId: row.projectId }];
  const reads = viewReadsFrom({ rels, labels: [], children: [], parent: null, checkpoint: null, lease: null, people: [] }, row.id, { projectIds: null });
  renderIssueView(await env.services.keyring.forOrg(env.services.db, org.orgId), spied, reads, now);
  // Beside the view: the id the callers read the view's reads for, and the expiry a claim's reply states (server/queue/claim.ts).
  const wanted = [...read, "id", "leaseExpiresAt"].map((key) => columns[key as keyof typeof columns].name);

  const [def] = await query<{ text: string }>(env.services.db, sql`select pg_get_functiondef('retasc_view_row(issues)'::regprocedure) as text`);
  const built = [...def!.text.matchAll(/'([a-z_]+)', i\.([a-z_]+)/g)].map(([, key, column]) => {
    expect(key).toBe(column);
    return key!;
  });
  expect([...new Set(built)].sort()).toEqual([...new Set(wanted)].sort());
});
