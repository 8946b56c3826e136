import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { query } from "../../db/client.ts";
import { isOpen } from "../../db/schema/dispatch.ts";
import { useTestServices } from "../testing/database.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { paceStatement } from "./forecast.ts";

const env = useTestServices();
const FILLER_ORGS = 40;
const FILLER_ISSUES = 25;
const FINISHED = 300;

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Index Name"?: string;
  Plans?: PlanNode[];
}

/** Every scan of `relation` in a plan, as "Node Type via Index Name". */
function scansOf(node: PlanNode, relation: string): string[] {
  const own = node["Relation Name"] === relation ? [`${node["Node Type"]} via ${node["Index Name"] ?? "no index"}`] : [];
  return [...own, ...(node.Plans ?? []).flatMap((child) => scansOf(child, relation))];
}

/** The plan of `statement`'s scans of issues, as "Node Type via Index Name". */
async function issueScans(statement: ReturnType<typeof sql>): Promise<string[]> {
  const [explained] = await query<{ "QUERY PLAN": [{ Plan: PlanNode }] }>(env.services.db, sql`explain (format json) ${statement}`);
  return scansOf(explained!["QUERY PLAN"][0].Plan, "issues");
}

/**
 * A new org the statistics do not know yet (taken while every org in them was a filler one, all in
 * the most-common list, so the new one is estimated at one row), as between two autoanalyzes while
 * a tenant ramps up: the reads of queue_status and the forecast must not be planned as scans of all
 * its finished work.
 */
describe("plans under statistics that do not know the org yet", () => {
  let orgId: string;
  let projectId: string;

  beforeAll(async () => {
    const { db } = env.services;
    await db.execute(sql`insert into orgs (id, name) select 'plan-org-' || o, 'Filler ' || o from generate_series(1, ${FILLER_ORGS}::int) o`);
    await db.execute(sql`insert into projects (id, org_id, name, prefix, next_number)
      select 'plan-prj-' || o, 'plan-org-' || o, 'Project', 'PF', ${FILLER_ISSUES + 1}::int from generate_series(1, ${FILLER_ORGS}::int) o`);
    await db.execute(sql`insert into issues (id, org_id, project_id, number, identifier, title_enc, work, status)
      select 'plan-iss-' || o || '-' || n, 'plan-org-' || o, 'plan-prj-' || o, n, 'PF-' || n, 'placeholder', true, 'todo'
      from generate_series(1, ${FILLER_ORGS}::int) o, generate_series(1, ${FILLER_ISSUES}::int) n`);
    const org = await seedOrg(env.services, { prefix: "PLN" });
    await db.execute(sql`analyze`);

    ({ orgId, projectId } = org.agents.alice.ctx.principal as { orgId: string; projectId: string });
    expect(projectId).toEqual(expect.any(String));
    await db.execute(sql`insert into issues (id, org_id, project_id, number, identifier, title_enc, work, status)
      select 'pln-iss-' || n, ${orgId}, ${projectId}, 1000 + n, 'PLN-' || (1000 + n), 'placeholder', true, 'done'
      from generate_series(1, ${FINISHED}::int) n`);
    await db.execute(sql`insert into leases (id, org_id, issue_id, fence, user_id, runtime, claimed_at, heartbeat_at, expires_at, ended_at, end_reason)
      select 'pln-lease-' || n, ${orgId}, 'pln-iss-' || n, 1, 'system', 'test', now() - interval '10 minutes', now() - interval '10 minutes',
             now() + interval '1 hour', now() - interval '1 minute', 'finished'
      from generate_series(1, ${FINISHED}::int) n`);
  });

  it("the forecast's pace reads each finished lease's issue by primary key, never the org's issues per lease", async () => {
    const windowStart = new Date(Date.now() - 24 * 3_600_000);
    for (const scope of [projectId, null]) {
      const statement = paceStatement(orgId, scope, windowStart);
      const scans = await issueScans(statement);
      // A project key's finishes look their issue up by primary key; an org key's never read issues.
      expect(scans.every((scan) => scan.endsWith("via issues_pkey")), scans.join(", ")).toBe(true);
      if (scope === null) expect(scans).toEqual([]);
      const [pace] = await query<{ finished: number }>(env.services.db, statement);
      expect(Number(pace!.finished)).toBe(FINISHED);
    }
  });

  it("an org's or a project's open issues are read from the open-issues index, not past its finished ones", async () => {
    for (const scope of [sql`i.org_id = ${orgId}`, sql`i.project_id = ${projectId} and i.org_id = ${orgId}`]) {
      const statement = sql`select count(*)::int as n from issues i where ${scope} and i.work and ${isOpen(sql`i.status`)}`;
      expect(await issueScans(statement)).toEqual([expect.stringMatching(/via issues_org_open_idx$/)]);
      const [open] = await query<{ n: number }>(env.services.db, statement);
      expect(open!.n).toBe(0);
    }
  });
});
