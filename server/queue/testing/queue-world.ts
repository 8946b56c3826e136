import { saveIssue } from "../../issues/index.ts";
import { useTestServices } from "../../testing/database.ts";
import { TestClock, testConfig } from "../../testing/db.ts";
import { seedOrg, type SeededOrg } from "../../testing/fixtures.ts";
import { nextIssue } from "../index.ts";

/**
 * What the queue's service-level suites share (server/queue/queue*.test.ts): a test clock, a
 * database of the file's own with ten-minute leases, a fresh org each, and the calls they make most.
 */
export function queueWorld() {
  const clock = new TestClock();
  // Called by each file: useTestServices registers the file's own beforeAll and afterAll.
  const env = useTestServices({ clock, config: testConfig({ LEASE_TTL_SECONDS: "600" }) });
  const fresh = (prefix = "RTSC"): Promise<SeededOrg> => seedOrg(env.services, { prefix });
  return { clock, env, fresh };
}

export type Ctx = SeededOrg["agents"]["alice"]["ctx"];

/** A standalone work issue. */
export const create = (ctx: Ctx, title: string, extra: Record<string, unknown> = {}) =>
  saveIssue(ctx, { title, work: true, changeType: "feat", noDependency: "standalone", ...extra });

/** What next_issue claims for `ctx`, or null when it claims nothing. */
export async function claimedIdentifier(ctx: Ctx, args: Record<string, unknown> = {}) {
  const reply = await nextIssue(ctx, args);
  return "claimToken" in reply ? reply.identifier : null;
}
