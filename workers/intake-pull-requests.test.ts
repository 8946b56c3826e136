import { eq, sql } from "drizzle-orm";
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { query } from "../db/client.ts";
import { intakeDeliveries } from "../db/schema/index.ts";
import { retascJobs } from "./catalog.ts";
import { startInlineRunner } from "./inline.ts";
import type { JobRunner } from "./runner.ts";
import { waitFor } from "../server/testing/wait.ts";
import type { Services } from "../server/context.ts";
import { saveIssue } from "../server/issues/index.ts";
import { listAttachments } from "../server/issues/attachments.ts";
import { listComments } from "../server/issues/comments.ts";
import { getIssue } from "../server/issues/read.ts";
import { createLogger } from "../server/log.ts";
import { claimIssue, nextBatch } from "../server/queue/index.ts";
import { servicesFor, testConfig } from "../server/testing/db.ts";
import { useTestServices } from "../server/testing/database.ts";
import type { FakeForge } from "../server/testing/fake-git-forge.ts";
import { githubDelivery, startFakeGithub } from "../server/testing/fake-github.ts";
import { gitlabDelivery, startFakeGitlab } from "../server/testing/fake-gitlab.ts";
import { seedOrg, type SeededOrg } from "../server/testing/fixtures.ts";
import { listConnectors } from "../server/intake/connectors.ts";
import { createConnector } from "../server/intake/create.ts";
import { intakeWebhookResponse } from "../server/intake/http.ts";

/**
 * The pull/merge request stream (docs/decisions/026-intake-pull-requests.md) end to end in one
 * process: GitHub's pull_request examples (@octokit/webhooks-examples) and GitLab's documented
 * merge request event (fixtures/), signed as the providers sign them, through the routes'
 * handler and the in-process job runner; fake GitHub and GitLab APIs record any write-back.
 */
const log = createLogger("silent");
const env = useTestServices();
const examples = JSON.parse(fs.readFileSync(path.resolve("node_modules/@octokit/webhooks-examples/api.github.com/index.json"), "utf8")) as {
  name: string;
  examples: Record<string, any>[];
}[];
const github = (action: string) => structuredClone(examples.find((e) => e.name === "pull_request")!.examples.find((x) => x.action === action));
/**
 * An outsider's request: the examples are the owner's own, so the id, number and standing are
 * set. The examples have no `edited` delivery: it is the opened one with GitHub's action name.
 */
const outsiders = (action: string, id: number, number: number, extra: Record<string, unknown> = {}) => {
  const payload = github(action) ?? { ...github("opened")!, action };
  Object.assign(payload.pull_request, { id, number, author_association: "CONTRIBUTOR", ...extra });
  return payload;
};
const gitlabMerge = (attributes: Record<string, unknown>) => {
  const payload = JSON.parse(fs.readFileSync(path.resolve(import.meta.dirname, "../server/intake/fixtures/gitlab-merge-request-open.json"), "utf8"));
  Object.assign(payload.object_attributes, attributes);
  return payload;
};

let services: Services;
let org: SeededOrg;
let fakeGithub: FakeForge;
let fakeGitlab: FakeForge;
let runner: JobRunner;

beforeAll(async () => {
  fakeGithub = await startFakeGithub({ token: "ghp_test_writeback" });
  fakeGitlab = await startFakeGitlab({ token: "glpat-test-writeback", members: { 51: 30 } });
  services = servicesFor(env.tdb.database, { config: testConfig({ GITHUB_API_URL: fakeGithub.url, JOB_BACKOFF_MS: "50", OUTBOX_POLL_MS: "200" }) });
  org = await seedOrg(services, { prefix: "PRS" });
  runner = await startInlineRunner({ services, database: env.tdb.database, log, catalog: retascJobs, sweeps: [], exclusive: false });
});
afterAll(async () => {
  await runner?.stop();
  await Promise.all([fakeGithub?.close(), fakeGitlab?.close()]);
});

const hookUrl = (provider: string, id: string) => `http://localhost/webhooks/${provider}/${id}`;
const itemOf = async (connectorId: string, sourceId: string) =>
  (await query<{ identifier: string; kind: string }>(services.db, sql`select i.identifier, l.kind from intake_links l join issues i on i.id = l.issue_id where l.connector_id = ${connectorId} and l.source_id = ${sourceId}`))[0];
const settled = () =>
  waitFor(
    async () =>
      (await query<{ n: number }>(services.db, sql`select (select count(*) from intake_deliveries where processed_at is null) + (select count(*) from outbox where completed_at is null and failed_at is null) as n`))[0]!.n == 0,
    3_000,
    "deliveries and jobs to settle",
  );

describe("connecting with the stream", () => {
  it("needs a reviewer who is a member; the list shows the stream and the reviewer", async () => {
    await expect(createConnector(org.agents.alice.ctx, { provider: "github", repo: "Codertocat/No-Reviewer", project: "PRS", pullRequests: true })).rejects.toThrow(/needs a reviewer/);
    await expect(createConnector(org.agents.alice.ctx, { provider: "github", repo: "Codertocat/Stranger", project: "PRS", pullRequests: true, reviewer: "nobody@example.com" })).rejects.toMatchObject({
      code: "NOT_FOUND",
    });
    const created = await createConnector(org.agents.alice.ctx, { provider: "github", repo: "Codertocat/Listed", project: "PRS", pullRequests: true, reviewer: org.agents.carol.userId });
    expect(created.pullRequests).toBe(true);
    expect(created.steps.join("\n")).toContain("Pull requests");
    const listed = (await listConnectors(org.agents.bob.ctx, {})).connectors.find((c) => c.id === created.connectorId)!;
    expect(listed).toMatchObject({ pullRequests: true, reviewer: expect.stringMatching(/^carol-.*@example\.com$/) });
  });

  it("off (the default), a pull_request delivery is acknowledged and not stored", async () => {
    const off = await createConnector(org.agents.alice.ctx, { provider: "github", repo: "Codertocat/Off", project: "PRS" });
    const reply = await intakeWebhookResponse(services, log, "github", off.connectorId, await githubDelivery(hookUrl("github", off.connectorId), off.secret, "pull_request", outsiders("opened", 1, 1)));
    expect(reply.status).toBe(202);
    expect(await reply.json()).toMatchObject({ outcome: "ignored" });
    expect(await services.db.select().from(intakeDeliveries).where(eq(intakeDeliveries.connectorId, off.connectorId))).toHaveLength(0);
  });
});

describe("GitHub pull requests", () => {
  let connector: Awaited<ReturnType<typeof createConnector>>;
  beforeAll(async () => {
    connector = await createConnector(org.agents.alice.ctx, { provider: "github", repo: "Codertocat/Hello-World", project: "PRS", token: "ghp_test_writeback", pullRequests: true, reviewer: org.agents.carol.userId });
  });
  const deliver = async (payload: unknown) =>
    intakeWebhookResponse(services, log, "github", connector.connectorId, await githubDelivery(hookUrl("github", connector.connectorId), connector.secret, "pull_request", payload));

  it("the team's own request is ignored; an outsider's is a review item on the reviewer's lane, awaiting triage, kept in step, done when merged, with nothing written back", async () => {
    const own = github("opened")!;
    expect(own.pull_request.author_association).toBe("OWNER");
    expect((await deliver(own)).status).toBe(202);
    await settled();
    expect(await itemOf(connector.connectorId, `pr:${own.pull_request.id}`)).toBeUndefined();

    const opened = outsiders("opened", 5_000_001, 41);
    await deliver(opened);
    const { identifier, kind } = await waitFor(() => itemOf(connector.connectorId, "pr:5000001"), 2_000, "the review item");
    expect(kind).toBe("pull_request");
    const item = await getIssue(org.agents.alice.ctx, { identifier });
    expect(item).toMatchObject({ title: opened.pull_request.title, status: "review", triage: "pending", work: true });
    expect(item.assignee).toMatchObject({ userId: org.agents.carol.userId });
    const links = await listAttachments(org.agents.alice.ctx, { issue: identifier });
    expect(links.attachments[0]).toMatchObject({ url: opened.pull_request.html_url, title: `GitHub pull request Codertocat/Hello-World#41 by @${opened.pull_request.user.login}` });
    // Outsider text: not dispatched before a member accepts it.
    await expect(claimIssue(org.agents.carol.ctx, { identifier })).rejects.toMatchObject({ code: "AWAITING_TRIAGE" });
    await saveIssue(org.agents.bob.ctx, { identifier, triage: "accepted" });
    const lane = (await nextBatch(org.agents.carol.ctx, {})) as { issues: { identifier: string }[] };
    expect(lane.issues.map((i) => i.identifier)).toContain(identifier);
    const elsewhere = (await nextBatch(org.agents.bob.ctx, {})) as { issues?: { identifier: string }[] };
    expect((elsewhere.issues ?? []).map((i) => i.identifier)).not.toContain(identifier);

    await deliver(outsiders("edited", 5_000_001, 41, { title: "Update the README with new information (edited)" }));
    await waitFor(async () => (await getIssue(org.agents.alice.ctx, { identifier })).title.endsWith("(edited)"), 2_000, "the edit");

    await deliver(outsiders("closed", 5_000_001, 41, { merged: true, state: "closed" }));
    await waitFor(async () => (await getIssue(org.agents.alice.ctx, { identifier })).status === "done", 2_000, "done on merge");
    await settled();
    expect(fakeGithub.requests.filter((r) => r.method !== "GET")).toEqual([]);
  });

  it("closed unmerged is canceled with the reason; reopened, it is reviewed again as a new item; the reviewer's finish writes nothing back", async () => {
    await deliver(outsiders("opened", 5_000_002, 42));
    const first = await waitFor(() => itemOf(connector.connectorId, "pr:5000002"), 2_000, "the review item");
    await deliver(outsiders("closed", 5_000_002, 42, { merged: false, state: "closed" }));
    await waitFor(async () => (await getIssue(org.agents.alice.ctx, { identifier: first.identifier })).status === "canceled", 2_000, "the cancel");
    expect((await getIssue(org.agents.alice.ctx, { identifier: first.identifier })).cancelReason).toBe("closed unmerged on GitHub (Codertocat/Hello-World#42)");

    await deliver(outsiders("reopened", 5_000_002, 42));
    const again = await waitFor(async () => {
      const now = await itemOf(connector.connectorId, "pr:5000002");
      return now && now.identifier !== first.identifier ? now : undefined;
    }, 2_000, "the new review item");
    expect(await getIssue(org.agents.alice.ctx, { identifier: again.identifier })).toMatchObject({ status: "review", triage: "pending" });
    const thread = (await listComments(org.agents.alice.ctx, { issue: first.identifier })).comments.map((c) => c.body);
    expect(thread).toContain(`Reopened on GitHub (Codertocat/Hello-World#42); its review continues in ${again.identifier}.`);

    await saveIssue(org.agents.alice.ctx, { identifier: again.identifier, triage: "accepted" });
    const claim = (await claimIssue(org.agents.carol.ctx, { identifier: again.identifier })) as { claimToken: string };
    await saveIssue(org.agents.carol.ctx, { identifier: again.identifier, status: "done", claimToken: claim.claimToken });
    await settled();
    expect(fakeGithub.requests.filter((r) => r.method !== "GET")).toEqual([]);
    expect(await query<{ n: number }>(services.db, sql`select count(*)::int as n from outbox where job = 'intake.write_back' and failed_at is not null`)).toEqual([{ n: 0 }]);
  });
});

describe("GitLab merge requests", () => {
  let connector: Awaited<ReturnType<typeof createConnector>>;
  beforeAll(async () => {
    connector = await createConnector(org.agents.alice.ctx, {
      provider: "gitlab",
      repo: "diaspora/diaspora",
      project: "PRS",
      baseUrl: fakeGitlab.url,
      token: "glpat-test-writeback",
      pullRequests: true,
      reviewer: org.agents.carol.userId,
    });
  });
  const deliver = (payload: unknown) => intakeWebhookResponse(services, log, "gitlab", connector.connectorId, gitlabDelivery(hookUrl("gitlab", connector.connectorId), connector.secret, "Merge Request Hook", payload));

  it("a Developer's request is ignored; below Developer it is a review item, done when merged", async () => {
    expect((await deliver(gitlabMerge({}))).status).toBe(202); // author 51 is a Developer on the fake
    await settled();
    expect(await itemOf(connector.connectorId, "pr:99")).toBeUndefined();

    await deliver(gitlabMerge({ id: 100, iid: 2, author_id: 77 }));
    const { identifier } = await waitFor(() => itemOf(connector.connectorId, "pr:100"), 2_000, "the review item");
    const item = await getIssue(org.agents.alice.ctx, { identifier });
    expect(item).toMatchObject({ title: "MS-Viewport", status: "review", triage: "pending" });
    expect(item.labels.sort()).toEqual(["API", "support"]);
    await deliver(gitlabMerge({ id: 100, iid: 2, author_id: 77, action: "merge", state: "merged" }));
    await waitFor(async () => (await getIssue(org.agents.alice.ctx, { identifier })).status === "done", 2_000, "done on merge");
    await settled();
    expect(fakeGitlab.requests.filter((r) => r.method !== "GET")).toEqual([]);
  });

  it("closed unmerged is canceled", async () => {
    await deliver(gitlabMerge({ id: 101, iid: 3, author_id: 77 }));
    const { identifier } = await waitFor(() => itemOf(connector.connectorId, "pr:101"), 2_000, "the review item");
    await deliver(gitlabMerge({ id: 101, iid: 3, author_id: 77, action: "close", state: "closed" }));
    await waitFor(async () => (await getIssue(org.agents.alice.ctx, { identifier })).status === "canceled", 2_000, "the cancel");
    expect((await getIssue(org.agents.alice.ctx, { identifier })).cancelReason).toBe("closed unmerged on GitLab (diaspora/diaspora!3)");
  });
});
