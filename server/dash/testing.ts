import { TestClock, testConfig } from "../testing/db.ts";
import type { Ctx } from "../context.ts";
import { saveIssue } from "../issues/index.ts";
import { humanCtx } from "../orgs/access.ts";
import type { SeededOrg } from "../testing/fixtures.ts";
import { useTestServices } from "../testing/database.ts";

/** Test helpers for the Dash's page readers (dash*.test.ts): a file's database on a test clock, leases of 10 minutes. */
export const MINUTE = 60_000;

export function useDashServices() {
  const clock = new TestClock();
  const env = useTestServices({ clock, config: testConfig({ LEASE_TTL_SECONDS: "600" }) });
  /** A person of the org at the Dash. */
  const dashAs = async (org: SeededOrg, who: "alice" | "bob" | "carol"): Promise<Ctx> =>
    (await humanCtx(env.services, { orgId: org.orgId, userId: org.agents[who].userId, runtime: "dash" })).ctx;
  return { clock, env, dashAs };
}

/** Files a standalone work issue. */
export const create = (ctx: Ctx, title: string, extra: Record<string, unknown> = {}) =>
  saveIssue(ctx, { title, work: true, changeType: "feat", noDependency: "standalone", ...extra });
