import { and, eq } from "drizzle-orm";
import { expect, it } from "vitest";
import { members } from "../../db/schema/index.ts";
import type { Ctx } from "../context.ts";
import { fleetSnapshot } from "../dash/fleet.ts";
import { saveIssue } from "../issues/index.ts";
import { inProcessFetch, inProcessOrigin } from "../mcp/testing.ts";
import { humanCtx } from "../orgs/access.ts";
import { createProject } from "../orgs/index.ts";
import { claimIssue } from "../queue/index.ts";
import { TestClock } from "../testing/db.ts";
import { useTestServices } from "../testing/database.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { verifyByHand } from "../verification/attest.ts";
import { setVerification } from "../verification/settings.ts";
import { falseDoneRate, type FalseDoneRow } from "./false-done.ts";

const clock = new TestClock();
const env = useTestServices({ clock });
const MINUTE = 60_000;
const DAY = 86_400_000;

/** queue_status over the whole /mcp path, as an agent reads it. */
async function queueStatusOverMcp(key: string) {
  const response = await inProcessFetch(env.services)(`${inProcessOrigin}/mcp`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: `Bearer ${key}` },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "queue_status", arguments: {} } }),
  });
  return (await response.json()).result.structuredContent as { falseDone: FalseDoneRow[] };
}

const row = (rows: FalseDoneRow[], by: FalseDoneRow["by"], key: string | null = null) => rows.find((r) => r.by === by && r.key === key);

it("counts the finishes reopened (CI failed them) within 7 days, per runtime and per person, with the time to verified; scoped as the Fleet", async () => {
  const t0 = new Date("2026-09-01T08:00:00Z").getTime();
  clock.set(new Date(t0));
  const org = await seedOrg(env.services, { prefix: "FDR" });
  const ops = await createProject(env.services.db, { orgId: org.orgId, name: "Ops", prefix: "FDO" });
  // Carol is scoped to the main project (decision 042).
  await env.services.db.update(members).set({ projectIds: [org.projectId] }).where(and(eq(members.orgId, org.orgId), eq(members.userId, org.agents.carol.userId)));
  const dashOf = async (who: "alice" | "carol") => (await humanCtx(env.services, { orgId: org.orgId, userId: org.agents[who].userId, runtime: "dash" })).ctx;
  const alice = await dashOf("alice");
  await setVerification(alice, { projectId: org.projectId, mode: "ci" });
  const bob = org.agents.bob.ctx; // codex
  const carol = org.agents.carol.ctx; // cursor
  const at = (ms: number) => clock.set(new Date(t0 + ms));

  const finish = async (agent: Ctx, identifier: string) => {
    const claim = await claimIssue(agent, { identifier });
    await saveIssue(agent, { identifier, claimToken: claim.claimToken, status: "done", evidence: { commit: "abc1234" } });
  };
  const file = async (title: string, changeType?: "fix" | "feat", project?: string) =>
    (await saveIssue(alice, { title, work: true, noDependency: "a test", ...(changeType ? { changeType } : {}), ...(project ? { project } : {}) })).identifier;
  const [failed, passed, failedSoon, failedLate, passedLater] = [
    await file("failed by CI at once", "fix"),
    await file("passed", "feat"),
    await file("failed on day 3", "fix"),
    await file("failed on day 8", "feat"),
    await file("passed later", "feat"),
  ];
  const elsewhere = await file("another project, verification off", undefined, ops.prefix);

  await finish(bob, failed);
  await finish(carol, passed);
  await finish(bob, failedSoon);
  await finish(carol, failedLate);
  await finish(bob, passedLater);
  await finish(bob, elsewhere);
  at(20 * MINUTE);
  await verifyByHand(alice, { identifier: failed, verdict: "failed" });
  at(30 * MINUTE);
  await verifyByHand(alice, { identifier: passed, verdict: "passed" });
  at(50 * MINUTE);
  await verifyByHand(alice, { identifier: passedLater, verdict: "passed" });
  // The failed one finished again and passed: a finish of its own, not false; the failure was the first one's.
  at(60 * MINUTE);
  await finish(bob, failed);
  at(80 * MINUTE);
  await verifyByHand(alice, { identifier: failed, verdict: "passed" });
  // Left pending, then failed: counted however late CI fails it.
  at(3 * DAY);
  await verifyByHand(alice, { identifier: failedSoon, verdict: "failed" });
  at(8 * DAY);
  await verifyByHand(alice, { identifier: failedLate, verdict: "failed" });
  at(9 * DAY);

  const everything = await falseDoneRate(alice, clock.now());
  // 7 finishes; false: the first finish of `failed`, `failedSoon` and `failedLate` (CI failed it on day 8), not the refinish.
  expect(row(everything.rows, "all")).toEqual({
    by: "all", key: null, email: null, finishes: 7, falseDone: 3, rate: 0.4286,
    // CI passed after 20, 30 and 50 minutes.
    medianToVerifiedMs: 30 * MINUTE, p90ToVerifiedMs: 46 * MINUTE,
  });
  expect(row(everything.rows, "runtime", "codex")).toMatchObject({ finishes: 5, falseDone: 2, rate: 0.4, medianToVerifiedMs: 35 * MINUTE, p90ToVerifiedMs: 47 * MINUTE });
  expect(row(everything.rows, "runtime", "cursor")).toMatchObject({ finishes: 2, falseDone: 1, rate: 0.5, medianToVerifiedMs: 30 * MINUTE });
  expect(row(everything.rows, "person", org.agents.bob.userId)).toMatchObject({ finishes: 5, falseDone: 2, rate: 0.4, email: expect.stringMatching(/^bob-/) });
  expect(row(everything.rows, "person", org.agents.carol.userId)).toMatchObject({ finishes: 2, falseDone: 1, email: expect.stringMatching(/^carol-/) });
  expect(everything.rows.filter((r) => r.by === "runtime").map((r) => r.key)).toEqual(["codex", "cursor"]);
  // By changeType: fix (both finishes of `failed`, `failedSoon`), feat (`passed`, `failedLate`, `passedLater`), none (`elsewhere`).
  expect(row(everything.rows, "changeType", "fix")).toMatchObject({ finishes: 3, falseDone: 2, rate: 0.6667 });
  expect(row(everything.rows, "changeType", "feat")).toMatchObject({ finishes: 3, falseDone: 1, rate: 0.3333 });
  expect(row(everything.rows, "changeType", null)).toMatchObject({ finishes: 1, falseDone: 0 });

  // Carol, scoped to the main project, does not see the other project's finish.
  const scoped = await falseDoneRate(await dashOf("carol"), clock.now());
  expect(row(scoped.rows, "all")).toMatchObject({ finishes: 6, falseDone: 3, rate: 0.5 });
  expect(row(scoped.rows, "runtime", "codex")).toMatchObject({ finishes: 4, falseDone: 2, rate: 0.5 });

  // The doors: the Dash's Fleet page, and queue_status over /mcp (a key bound to the main project reads its project).
  expect((await fleetSnapshot(alice)).falseDone).toEqual(everything.rows);
  const overMcp = await queueStatusOverMcp(org.agents.bob.key);
  expect(row(overMcp.falseDone, "all")).toMatchObject({ finishes: 6, falseDone: 3, rate: 0.5 });

  // Past the range (30 days), nothing is counted.
  at(40 * DAY);
  expect((await falseDoneRate(alice, clock.now())).rows).toEqual([
    { by: "all", key: null, email: null, finishes: 0, falseDone: 0, rate: null, medianToVerifiedMs: null, p90ToVerifiedMs: null },
  ]);
});
