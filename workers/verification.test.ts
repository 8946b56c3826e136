import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { and, eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { query } from "../db/client.ts";
import { issues } from "../db/schema/index.ts";
import { createConnector } from "../server/intake/create.ts";
import { personCtx } from "../server/intake/testing.ts";
import { callError, callOk, connectClient, inProcessFetch, inProcessOrigin } from "../server/mcp/testing.ts";
import { setVerification } from "../server/verification/settings.ts";
import { verifyByHand } from "../server/verification/attest.ts";
import { githubExample, gitlabFixture, useIntakeWorld } from "./testing/intake.ts";

/**
 * Done you can trust (decision 045), from the agents' side over /mcp with the SDK client, and
 * CI's side through the connector's webhook door: GitHub's check_run, check_suite, status and
 * workflow_run examples and GitLab's documented pipeline event, signed and processed by the
 * in-process job runner. A CI key's attestation: app/routes/api.ci.verify.test.ts.
 */
const world = useIntakeWorld("VER");
const endpoint = `${inProcessOrigin}/mcp`;
let finisher: Client;
let other: Client;
let github: Awaited<ReturnType<typeof createConnector>>;
let gitlab: Awaited<ReturnType<typeof createConnector>>;

const sha = (n: number) => n.toString(16).padStart(40, "a");

beforeAll(async () => {
  const { services, org } = world;
  finisher = await connectClient(endpoint, org.agents.alice.key, { fetch: inProcessFetch(services) });
  other = await connectClient(endpoint, org.agents.bob.key, { fetch: inProcessFetch(services) });
  github = await createConnector(org.agents.alice.ctx, { provider: "github", repo: "Codertocat/Hello-World", project: "VER" });
  gitlab = await createConnector(org.agents.alice.ctx, { provider: "gitlab", repo: "gitlab-org/gitlab-test", project: "VER" });
  await setVerification(personCtx(services, org.orgId, org.agents.alice.userId), { projectId: org.projectId, mode: "ci", checks: "test,lint", windowMinutes: 120 });
});
afterAll(async () => {
  await finisher?.close();
  await other?.close();
});

/** A unit of work and one that waits on it, filed over /mcp. */
async function pair(title: string) {
  const blocker = await callOk(finisher, "save_issue", { title, work: true, changeType: "feat", noDependency: "a test" });
  const dependent = await callOk(finisher, "save_issue", { title: `after ${title}`, work: true, changeType: "feat", blockedBy: [blocker.identifier] });
  return { blocker: blocker.identifier as string, dependent: dependent.identifier as string };
}

/** The finisher claims `identifier` by name and returns its claim token. */
const claim = async (identifier: string) => (await callOk(finisher, "claim_issue", { identifier })).claimToken as string;

/** Another agent asks for work: what next_issue hands out (or explains). */
const nextForOther = async () => {
  const reply = await callOk(other, "next_issue", {});
  if (reply.claimToken) await callOk(other, "release_issue", { identifier: reply.identifier, claimToken: reply.claimToken });
  return reply;
};

/** Another agent claims `identifier` by name (refused BLOCKED while a blocker gates it) and lets it go. */
const otherClaims = async (identifier: string) => {
  const claimed = await callOk(other, "claim_issue", { identifier });
  await callOk(other, "release_issue", { identifier, claimToken: claimed.claimToken });
  return claimed;
};

const checkRun = (name: string, head: string, conclusion: string, url = `https://github.com/Codertocat/Hello-World/runs/${name}`) => {
  const payload = githubExample("check_run", "completed");
  Object.assign(payload.check_run, { id: Math.floor(Math.random() * 1e9), name, head_sha: head, status: "completed", conclusion, html_url: url });
  return payload;
};
const workflowRun = (name: string, head: string, conclusion: string) => {
  const payload = githubExample("workflow_run", "completed");
  Object.assign(payload.workflow_run, { id: Math.floor(Math.random() * 1e9), name, head_sha: head, head_branch: "elsewhere", status: "completed", conclusion, pull_requests: [] });
  return payload;
};

const issueRow = async (identifier: string) => (await world.services.db.select().from(issues).where(and(eq(issues.orgId, world.org.orgId), eq(issues.identifier, identifier))))[0]!;

describe("a finish in a project with verification on", () => {
  it("without evidence is refused EVIDENCE_REQUIRED with a hint; following the hint leaves it pending and its dependent undispatched; green from check_run and workflow_run dispatches it", async () => {
    const { blocker, dependent } = await pair("green path");
    const token = await claim(blocker);
    const refused = await callError(finisher, "save_issue", { identifier: blocker, claimToken: token, status: "done" });
    expect(refused.code).toBe("EVIDENCE_REQUIRED");
    expect(refused.hint).toContain('"evidence":{"commit"');
    // The hint, followed.
    const finished = await callOk(finisher, "save_issue", { identifier: blocker, claimToken: token, status: "done", evidence: { commit: sha(1), branch: "feature/green" } });
    expect(finished).toMatchObject({ status: "done", verification: "pending", evidence: { commit: sha(1), branch: "feature/green", pr: null }, held: false });

    const waiting = await nextForOther();
    expect(waiting.claimed).toBe(false);
    expect(waiting.awaitingVerification).toEqual([blocker]);
    expect(waiting.message).toContain(`${blocker}`);
    const direct = await callError(other, "claim_issue", { identifier: dependent });
    expect(direct.code).toBe("BLOCKED");
    expect(direct.message).toContain("CI verification pending");
    // The dependent's own view says it is still blocked by the pending finish.
    const gated = await callOk(other, "get_issue", { identifier: dependent });
    expect(gated.blockedBy).toEqual([{ identifier: blocker, status: "done", verification: "pending" }]);
    expect(gated.openBlockers).toEqual([blocker]);

    // One required check green is not enough; the other arrives as a workflow run on the same commit.
    expect((await world.postGithub(github, "check_run", checkRun("test", sha(1), "success"))).status).toBe(202);
    await world.settled();
    expect((await issueRow(blocker)).verification).toBe("pending");
    expect((await nextForOther()).claimed).toBe(false);
    expect((await world.postGithub(github, "workflow_run", workflowRun("lint", sha(1), "success"))).status).toBe(202);
    await world.settled();
    expect((await callOk(finisher, "get_issue", { identifier: blocker })).verification).toBe("passed");
    expect(await callOk(other, "get_issue", { identifier: dependent })).toMatchObject({ blockedBy: [{ identifier: blocker, status: "done" }], openBlockers: [] });
    const dispatched = await nextForOther();
    expect(dispatched).toMatchObject({ identifier: dependent, claimToken: expect.any(String) });
  });

  it("red reopens it: back in todo at High, the failing check as a comment and the next claim's gotchas, one rider to the finisher, one notification, dependents still blocked", async () => {
    const { blocker, dependent } = await pair("red path");
    const token = await claim(blocker);
    await callOk(finisher, "save_issue", { identifier: blocker, claimToken: token, status: "done", evidence: { commit: sha(2) } });
    const red = checkRun("test", sha(2), "failure", "https://github.com/Codertocat/Hello-World/runs/red");
    const deliveryId = crypto.randomUUID();
    expect((await world.postGithub(github, "check_run", red, { id: deliveryId })).status).toBe(202);
    // The same delivery again, and the same content under a new delivery id: duplicates.
    expect(await (await world.postGithub(github, "check_run", red, { id: deliveryId })).json()).toMatchObject({ outcome: "duplicate" });
    expect(await (await world.postGithub(github, "check_run", red)).json()).toMatchObject({ outcome: "duplicate" });
    await world.settled();

    const reopened = await callOk(other, "get_issue", { identifier: blocker });
    expect(reopened).toMatchObject({ status: "todo", verification: "failed", priority: 2 });
    const comments = await callOk(other, "list_comments", { issue: blocker });
    expect(comments.comments.map((c: { body: string }) => c.body).join("\n")).toContain("- test: failure at aaaaaaaaaaaa (https://github.com/Codertocat/Hello-World/runs/red)");
    expect((await callError(other, "claim_issue", { identifier: dependent })).code).toBe("BLOCKED");

    // The finisher hears of it once, on its next call, whatever the call.
    const told = await callOk(finisher, "queue_status", {});
    expect(told.rider).toMatch(new RegExp(`${blocker} failed CI \\(test\\) and is back in the queue`));
    expect((await callOk(finisher, "queue_status", {})).rider).toBeUndefined();

    // The next claim reads the failing checks as its checkpoint's gotchas.
    const next = await callOk(other, "claim_issue", { identifier: blocker });
    expect(next.checkpoint.gotchas).toContain("- test: failure");
    await callOk(other, "release_issue", { identifier: blocker, claimToken: next.claimToken });

    const notified = await query<{ n: number }>(
      world.services.db,
      sql`select count(*)::int as n from outbox where job = 'notify.issue_event' and payload->>'kind' = 'verification_failed' and payload->>'issueId' = ${(await issueRow(blocker)).id}`,
    );
    expect(Number(notified[0]!.n)).toBe(1);
  });

  it("a GitLab pipeline for the merge request named in the evidence settles it, with every check reported counting when none are required", async () => {
    const { services, org } = world;
    await setVerification(personCtx(services, org.orgId, org.agents.alice.userId), { projectId: org.projectId, mode: "ci", checks: [] });
    const { blocker, dependent } = await pair("gitlab path");
    const token = await claim(blocker);
    await callOk(finisher, "save_issue", { identifier: blocker, claimToken: token, status: "done", evidence: { pr: "https://gitlab.example.com/gitlab-org/gitlab-test/-/merge_requests/41" } });
    const running = gitlabFixture("gitlab-pipeline.json");
    Object.assign(running.object_attributes, { id: 9001, status: "running", sha: sha(3), ref: "feature/gitlab" });
    running.merge_request.iid = 41;
    running.builds[1].status = "running";
    expect((await world.postGitlab(gitlab, "Pipeline Hook", running)).status).toBe(202);
    await world.settled();
    expect((await issueRow(blocker)).verification).toBe("pending");
    expect((await callError(other, "claim_issue", { identifier: dependent })).code).toBe("BLOCKED");
    const passed = structuredClone(running);
    Object.assign(passed.object_attributes, { status: "success" });
    passed.builds[1].status = "success";
    expect((await world.postGitlab(gitlab, "Pipeline Hook", passed)).status).toBe(202);
    await world.settled();
    expect((await issueRow(blocker)).verification).toBe("passed");
    expect(await otherClaims(dependent)).toMatchObject({ identifier: dependent });
    await setVerification(personCtx(services, org.orgId, org.agents.alice.userId), { projectId: org.projectId, mode: "ci", checks: "test,lint" });
  });

  it("a signed status and check_suite for the branch head match by branch; a bad signature is refused and changes nothing", async () => {
    const { blocker } = await pair("branch head");
    const token = await claim(blocker);
    await callOk(finisher, "save_issue", { identifier: blocker, claimToken: token, status: "done", evidence: { commit: sha(4), branch: "feature/head" } });
    const status = githubExample("status");
    Object.assign(status, { id: 77, sha: sha(5), state: "success", context: "lint", branches: [{ name: "feature/head", commit: { sha: sha(5) } }, { name: "master", commit: { sha: sha(6) } }] });
    expect((await world.postGithub(github, "status", status, { secret: "not-the-secret" })).status).toBe(401);
    expect((await world.postGithub(github, "status", status)).status).toBe(202);
    const suite = githubExample("check_suite", "completed");
    Object.assign(suite.check_suite, { id: 88, head_sha: sha(5), head_branch: "feature/head", status: "completed", conclusion: "success", app: { ...suite.check_suite.app, name: "test" } });
    expect((await world.postGithub(github, "check_suite", suite)).status).toBe(202);
    await world.settled();
    expect((await issueRow(blocker)).verification).toBe("passed");
  });
});

describe("by hand", () => {
  it("a person passes or fails a pending finish by hand, recorded as theirs; an agent may not", async () => {
    const { services, org } = world;
    const { blocker } = await pair("by hand");
    const token = await claim(blocker);
    await callOk(finisher, "save_issue", { identifier: blocker, claimToken: token, status: "done", evidence: { commit: sha(9) } });
    await expect(verifyByHand(org.agents.bob.ctx, { identifier: blocker, verdict: "passed" })).rejects.toMatchObject({ code: "FORBIDDEN" });
    const carol = personCtx(services, org.orgId, org.agents.carol.userId);
    expect(await verifyByHand(carol, { identifier: blocker, verdict: "failed", note: "broke staging" })).toMatchObject({ verification: "failed" });
    const recorded = await query<{ actor_id: string; source: string; check: string }>(
      services.db,
      sql`select actor_id, source, "check" from verification_reports where issue_id = ${(await issueRow(blocker)).id}`,
    );
    expect(recorded).toEqual([{ actor_id: org.agents.carol.userId, source: "person", check: "by hand: broke staging" }]);
    await expect(verifyByHand(carol, { identifier: blocker, verdict: "passed" })).rejects.toMatchObject({ code: "CONFLICT" });
  });
});
