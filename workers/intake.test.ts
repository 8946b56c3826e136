import { eq, sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { query } from "../db/client.ts";
import { connectors, intakeDeliveries } from "../db/schema/index.ts";
import { waitFor } from "../server/testing/wait.ts";
import { saveIssue } from "../server/issues/index.ts";
import { listAttachments } from "../server/issues/attachments.ts";
import { listComments } from "../server/issues/comments.ts";
import { getIssue } from "../server/issues/read.ts";
import { claimIssue, nextBatch, nextIssue } from "../server/queue/index.ts";
import { githubDelivery } from "../test/fakes/github.ts";
import { gitlabDelivery } from "../test/fakes/gitlab.ts";
import { listConnectors } from "../server/intake/connectors.ts";
import { createConnector } from "../server/intake/create.ts";
import { personAccepts, personCtx } from "../server/intake/testing.ts";
import { githubExample as github, gitlabFixture, hookUrl, useIntakeWorld } from "./testing/intake.ts";

/**
 * Intake's issue stream end to end in one process (workers/testing/intake.ts): signed deliveries
 * through the routes' handler, processing and write-back by the in-process job runner, the fake
 * GitHub and GitLab APIs recording the write-back.
 */
const world = useIntakeWorld("INT");
const { post } = world;
/** The examples have no `closed` delivery: one is the opened example with the action and state GitHub sends on a close. */
const closedGithub = (id: number, number: number) => {
  const closed = github("issues", "opened");
  Object.assign(closed, { action: "closed" });
  Object.assign(closed.issue, { id, number, state: "closed", closed_at: "2019-05-15T16:00:00Z" });
  return closed;
};
const issueOfSource = world.linked;
const deliveriesOf = async (connectorId: string) => (await world.services.db.select().from(intakeDeliveries).where(eq(intakeDeliveries.connectorId, connectorId))).length;

describe("creating a connector", () => {
  it("is for owners and admins; the secret is shown once and kept encrypted, the token too", async () => {
    await expect(createConnector(world.org.agents.bob.ctx, { provider: "github", repo: "Codertocat/Hello-World", project: "INT" })).rejects.toMatchObject({ code: "FORBIDDEN" });
    const created = await createConnector(world.org.agents.alice.ctx, { provider: "github", repo: "Codertocat/Hello-World", project: "INT", token: "ghp_secret_token_1" });
    expect(created.webhookUrl).toBe(`http://localhost:${world.services.config.PORT}/webhooks/github/${created.connectorId}`);
    expect(created.secret).toMatch(/^rwh_/);
    const [row] = await world.services.db.select().from(connectors).where(eq(connectors.id, created.connectorId));
    expect(JSON.stringify(row)).not.toContain(created.secret);
    expect(JSON.stringify(row)).not.toContain("ghp_secret_token_1");
    const listed = (await listConnectors(world.org.agents.alice.ctx, {})).connectors.find((c) => c.id === created.connectorId)!;
    expect(listed).toMatchObject({ status: "active", connection: "pending", tokenOnFile: true, lastDeliveryAt: null, lastError: null, webhookUrl: created.webhookUrl });
    expect(JSON.stringify(listed)).not.toContain(created.secret);
    await expect(createConnector(world.org.agents.alice.ctx, { provider: "github", repo: "not a repo", project: "INT" })).rejects.toThrow();
    await expect(createConnector(world.org.agents.alice.ctx, { provider: "github", repo: "a/b", project: "NOPE" })).rejects.toMatchObject({ code: "NOT_FOUND" });
  });
});

describe("GitHub deliveries", () => {
  let connector: Awaited<ReturnType<typeof createConnector>>;
  beforeAll(async () => {
    connector = await createConnector(world.org.agents.alice.ctx, { provider: "github", repo: "Codertocat/Hello-World", project: "INT", token: "ghp_test_writeback" });
  });
  const deliver = async (event: string, payload: unknown, id?: string, secret = connector.secret) =>
    post("github", connector.connectorId, await githubDelivery(hookUrl("github", connector.connectorId), secret, event, payload, id));

  it("refuses a forged or missing signature with 401 and stores nothing; unknown 404, oversized 413", async () => {
    const forged = await deliver("issues", github("issues", "opened"), undefined, "rwh_not-the-secret");
    expect(forged.status).toBe(401);
    const unsigned = new Request(hookUrl("github", connector.connectorId), { method: "POST", headers: { "x-github-event": "issues", "x-github-delivery": "x", "content-length": "2" }, body: "{}" });
    expect((await post("github", connector.connectorId, unsigned)).status).toBe(401);
    expect(await deliveriesOf(connector.connectorId)).toBe(0);
    expect((await listConnectors(world.org.agents.alice.ctx, {})).connectors.find((c) => c.id === connector.connectorId)!.connection).toBe("pending");
    expect((await post("github", crypto.randomUUID(), await githubDelivery(hookUrl("github", "x"), connector.secret, "ping", {}))).status).toBe(404);
    expect((await post("gitlab", connector.connectorId, gitlabDelivery(hookUrl("gitlab", connector.connectorId), connector.secret, "Issue Hook", {}))).status).toBe(404);
    const huge = new Request(hookUrl("github", connector.connectorId), { method: "POST", headers: { "content-length": String(2 * 1024 * 1024) }, body: "x" });
    expect((await post("github", connector.connectorId, huge)).status).toBe(413);
  });

  it("turns Connected on the ping; an event it does not use is 202 and not stored", async () => {
    const ping = await deliver("ping", github("ping"));
    expect(ping.status).toBe(202);
    const listed = (await listConnectors(world.org.agents.alice.ctx, {})).connectors.find((c) => c.id === connector.connectorId)!;
    expect(listed.connection).toBe("connected");
    expect(listed.lastDeliveryAt).not.toBeNull();
    expect((await deliver("star", { action: "created" })).status).toBe(202);
    expect(await deliveriesOf(connector.connectorId)).toBe(0);
  });

  it("an opened issue by a collaborator is a dispatchable queue entry, with its fields, labels, due date and link; a redelivery adds nothing", async () => {
    const opened = github("issues", "opened");
    opened.issue.author_association = "COLLABORATOR";
    const started = Date.now();
    const reply = await deliver("issues", opened, "delivery-opened-1");
    expect(reply.status).toBe(202);
    const found = await waitFor(() => issueOfSource(connector.connectorId, String(opened.issue.id)), 15_000, "the opened issue");
    // A figure, not an assertion (a loaded machine is no fault of intake): bench/intake.ts measures the latency.
    console.info(`intake: the opened issue in the queue ${Date.now() - started} ms after its delivery`);
    expect(found.triage).toBeNull();
    const issue = await getIssue(world.org.agents.alice.ctx, { identifier: found.identifier });
    expect(issue).toMatchObject({ title: opened.issue.title, body: opened.issue.body, status: "todo", dueAt: new Date(opened.issue.milestone.due_on).toISOString() });
    expect(issue.labels).toEqual(expect.arrayContaining(["support", ...opened.issue.labels.map((l: { name: string }) => l.name)]));
    const links = await listAttachments(world.org.agents.alice.ctx, { issue: found.identifier });
    expect(links.attachments[0]).toMatchObject({ url: opened.issue.html_url, title: `GitHub Codertocat/Hello-World#${opened.issue.number} by @${opened.issue.user.login}` });
    const again = await deliver("issues", opened, "delivery-opened-1");
    expect(await again.json()).toMatchObject({ outcome: "duplicate" });
    // Another delivery of the same source issue (a different id) is the same Retasc issue.
    await deliver("issues", opened, "delivery-opened-2");
    await waitFor(async () => (await query<{ n: number }>(world.services.db, sql`select count(*)::int as n from intake_deliveries where connector_id = ${connector.connectorId} and processed_at is null`))[0]!.n === 0, 15_000, "processing");
    const count = await query<{ n: number }>(world.services.db, sql`select count(*)::int as n from intake_links where connector_id = ${connector.connectorId}`);
    expect(Number(count[0]!.n)).toBe(1);
  });

  it("edits, labels and comments are kept in step; done in Retasc closes the source once, with one comment", async () => {
    const opened = github("issues", "opened");
    const { identifier } = (await issueOfSource(connector.connectorId, String(opened.issue.id)))!;
    const edited = github("issues", "edited");
    Object.assign(edited.issue, { id: opened.issue.id, number: opened.issue.number, title: "Spelling error in the README file (edited)", labels: [{ name: "docs" }] });
    await deliver("issues", edited);
    await waitFor(async () => (await getIssue(world.org.agents.alice.ctx, { identifier })).title.endsWith("(edited)"), 15_000, "the edit");
    expect((await getIssue(world.org.agents.alice.ctx, { identifier })).labels.sort()).toEqual(["docs", "support"]);
    const commented = github("issue_comment", "created");
    Object.assign(commented.issue, { id: opened.issue.id, number: opened.issue.number });
    await deliver("issue_comment", commented);
    await deliver("issue_comment", commented);
    const mine = async () => (await listComments(world.org.agents.alice.ctx, { issue: identifier })).comments.filter((c) => c.body.includes(commented.comment.body));
    await waitFor(async () => (await mine()).length > 0, 15_000, "the comment");
    await waitFor(async () => (await query<{ n: number }>(world.services.db, sql`select count(*)::int as n from intake_deliveries where processed_at is null`))[0]!.n === 0, 15_000, "processing");
    const thread = await mine();
    expect(thread).toHaveLength(1);
    expect(thread[0]!.body.startsWith(`@${commented.comment.user.login} on GitHub:`)).toBe(true);

    const claim = (await claimIssue(world.org.agents.alice.ctx, { identifier })) as { claimToken: string };
    await saveIssue(world.org.agents.alice.ctx, { identifier, status: "done", claimToken: claim.claimToken });
    const key = `Codertocat/Hello-World#${opened.issue.number}`;
    await waitFor(async () => world.fakeGithub.issues.get(key)?.state === "closed", 15_000, "the close on GitHub");
    const writes = world.fakeGithub.requests.filter((r) => r.method !== "GET");
    expect(writes.map((r) => `${r.method} ${r.path}`)).toEqual([`POST /repos/${key.replace("#", "/issues/")}/comments`, `PATCH /repos/${key.replace("#", "/issues/")}`]);
    expect(world.fakeGithub.issues.get(key)!.comments).toHaveLength(1);
    expect(world.fakeGithub.issues.get(key)!.comments[0]).toContain(`Done in Retasc as ${identifier}.`);
    expect(world.fakeGithub.problems).toEqual([]);
    // GitHub's own closed event for that close changes nothing and writes nothing back.
    await deliver("issues", closedGithub(opened.issue.id, opened.issue.number));
    await waitFor(async () => (await query<{ n: number }>(world.services.db, sql`select count(*)::int as n from outbox where completed_at is null and failed_at is null`))[0]!.n === 0, 15_000, "the outbox to drain");
    expect((await getIssue(world.org.agents.alice.ctx, { identifier })).status).toBe("done");
    expect(world.fakeGithub.requests.filter((r) => r.method !== "GET")).toHaveLength(2);
  });

  it("an outsider's issue awaits triage; closed at the source, it is canceled with nothing written back", async () => {
    const opened = github("issues", "opened");
    Object.assign(opened.issue, { id: 9_000_001, number: 77, author_association: "NONE" });
    await deliver("issues", opened);
    const found = await waitFor(() => issueOfSource(connector.connectorId, "9000001"), 15_000, "the outsider's issue");
    expect(found.triage).toBe("pending");
    const before = world.fakeGithub.requests.length;
    await deliver("issues", closedGithub(9_000_001, 77));
    await waitFor(async () => (await getIssue(world.org.agents.alice.ctx, { identifier: found.identifier })).status === "canceled", 15_000, "the cancel");
    await waitFor(async () => (await query<{ n: number }>(world.services.db, sql`select count(*)::int as n from outbox where completed_at is null and failed_at is null`))[0]!.n === 0, 15_000, "the outbox to drain");
    expect(world.fakeGithub.requests.length).toBe(before);
  });
});

describe("GitLab at a self-hosted base URL", () => {
  let connector: Awaited<ReturnType<typeof createConnector>>;
  beforeAll(async () => {
    connector = await createConnector(world.org.agents.alice.ctx, { provider: "gitlab", repo: "diaspora/diaspora", project: "INT", baseUrl: world.fakeGitlab.url, token: "glpat-test-writeback" });
  });
  const deliver = (event: string, payload: unknown, token = connector.secret) => post("gitlab", connector.connectorId, gitlabDelivery(hookUrl("gitlab", connector.connectorId), token, event, payload));

  it("checks X-Gitlab-Token; the documented issue event becomes an issue with due_date; a Developer's is dispatchable; a note is a comment; canceled closes it once with the reason", async () => {
    expect((await deliver("Issue Hook", gitlabFixture("gitlab-issue-open.json"), "wrong-token")).status).toBe(401);
    expect(await deliveriesOf(connector.connectorId)).toBe(0);
    const opened = gitlabFixture("gitlab-issue-open.json");
    opened.object_attributes.due_date = "2026-12-24";
    expect((await deliver("Issue Hook", opened)).status).toBe(202);
    const found = await waitFor(() => issueOfSource(connector.connectorId, "301"), 15_000, "the GitLab issue");
    expect(found.triage).toBeNull(); // author 51 is a Developer (30) on the fake
    const issue = await getIssue(world.org.agents.alice.ctx, { identifier: found.identifier });
    expect(issue).toMatchObject({ title: "New API: create/update/delete file", body: "Create new API for manipulations with repository" });
    expect(issue.dueAt?.slice(0, 10)).toBe("2026-12-24");
    expect(issue.labels.sort()).toEqual(["API", "support"]);
    const note = gitlabFixture("gitlab-note-issue.json");
    Object.assign(note.issue, { id: 301, iid: 23, state: "opened" });
    note.object_attributes.author_id = 51; // a Developer's note: the team's, taken as it is
    await deliver("Note Hook", note);
    await waitFor(async () => (await listComments(world.org.agents.alice.ctx, { issue: found.identifier })).comments.some((c) => c.body === "@root on GitLab:\n\nHello world"), 15_000, "the note");

    await saveIssue(world.org.agents.alice.ctx, { identifier: found.identifier, status: "canceled", cancelReason: "duplicate of the upload API" });
    await waitFor(async () => world.fakeGitlab.issues.get("diaspora/diaspora#23")?.state === "closed", 15_000, "the close on GitLab");
    const writes = world.fakeGitlab.requests.filter((r) => r.method !== "GET");
    expect(writes.map((r) => `${r.method} ${r.path}`)).toEqual(["POST /api/v4/projects/diaspora/diaspora/issues/23/notes", "PUT /api/v4/projects/diaspora/diaspora/issues/23"]);
    expect(world.fakeGitlab.issues.get("diaspora/diaspora#23")!.comments[0]).toContain("Reason: duplicate of the upload API");
    expect(world.fakeGitlab.problems).toEqual([]);
  });

  it("an author GitLab does not list as a Developer awaits triage", async () => {
    const opened = gitlabFixture("gitlab-issue-open.json");
    Object.assign(opened.object_attributes, { id: 302, iid: 24, author_id: 99 });
    await deliver("Issue Hook", opened);
    const found = await waitFor(() => issueOfSource(connector.connectorId, "302"), 15_000, "the outsider's GitLab issue");
    expect(found.triage).toBe("pending");
  });

  it("a token the provider refuses marks the connector and is not retried", async () => {
    const opened = gitlabFixture("gitlab-issue-open.json");
    Object.assign(opened.object_attributes, { id: 303, iid: 25 });
    await deliver("Issue Hook", opened);
    const found = await waitFor(() => issueOfSource(connector.connectorId, "303"), 15_000, "the issue");
    world.fakeGitlab.failWith = 401;
    try {
      await saveIssue(world.org.agents.alice.ctx, { identifier: found.identifier, status: "canceled", cancelReason: "not needed" });
      const marked = await waitFor(async () => (await listConnectors(world.org.agents.alice.ctx, {})).connectors.find((c) => c.id === connector.connectorId)!.lastError, 15_000, "the connector's last error");
      expect(marked).toBe("write-back token refused (401)");
      const failed = await waitFor(async () => (await query<{ attempts: number }>(world.services.db, sql`select attempts from outbox where job = 'intake.write_back' and failed_at is not null`))[0], 15_000, "the failed job");
      expect(Number(failed.attempts)).toBe(1);
    } finally {
      world.fakeGitlab.failWith = null;
    }
  });
});

describe("triage", () => {
  it("an outsider's issue is shown pending, skipped by next_issue and next_batch (counted as awaitingTriage), refused by claim_issue until a person accepts it", async () => {
    const connector = await createConnector(world.org.agents.alice.ctx, { provider: "github", repo: "Codertocat/Triage", project: "INT" });
    const opened = github("issues", "opened");
    Object.assign(opened.issue, { id: 9_100_001, number: 5, author_association: "CONTRIBUTOR" });
    await post("github", connector.connectorId, await githubDelivery(hookUrl("github", connector.connectorId), connector.secret, "issues", opened));
    const { identifier } = await waitFor(() => issueOfSource(connector.connectorId, "9100001"), 15_000, "the outsider's issue");
    expect(await getIssue(world.org.agents.bob.ctx, { identifier })).toMatchObject({ triage: "pending", status: "todo" });
    const next = (await nextIssue(world.org.agents.bob.ctx, {})) as { claimed: boolean; awaitingTriage?: number; identifier?: string };
    expect(next.identifier).not.toBe(identifier);
    if (!next.claimed) expect(next.awaitingTriage).toBeGreaterThanOrEqual(1);
    const peek = (await nextBatch(world.org.agents.bob.ctx, {})) as { issues?: { identifier: string }[]; awaitingTriage?: number };
    expect((peek.issues ?? []).map((i) => i.identifier)).not.toContain(identifier);
    await expect(claimIssue(world.org.agents.bob.ctx, { identifier })).rejects.toMatchObject({ code: "AWAITING_TRIAGE" });

    // No agent lets it in (decision 038); a person who read it does.
    await expect(saveIssue(world.org.agents.carol.ctx, { identifier, triage: "accepted" })).rejects.toMatchObject({ code: "FORBIDDEN" });
    expect(await personAccepts(personCtx(world.services, world.org.orgId, world.org.agents.carol.userId), identifier)).toMatchObject({ triage: "accepted" });
    const claimed = (await claimIssue(world.org.agents.bob.ctx, { identifier })) as { identifier: string; claimToken: string };
    expect(claimed.identifier).toBe(identifier);
    await saveIssue(world.org.agents.bob.ctx, { identifier, status: "canceled", cancelReason: "triage test", claimToken: claimed.claimToken });
  });

  it("a connector set to let all issues through files outsiders' issues dispatchable", async () => {
    const connector = await createConnector(world.org.agents.alice.ctx, { provider: "github", repo: "Codertocat/Open", project: "INT", triageAll: true });
    const opened = github("issues", "opened");
    Object.assign(opened.issue, { id: 9_200_001, number: 6, author_association: "NONE" });
    await post("github", connector.connectorId, await githubDelivery(hookUrl("github", connector.connectorId), connector.secret, "issues", opened));
    const found = await waitFor(() => issueOfSource(connector.connectorId, "9200001"), 15_000, "the issue");
    expect(found.triage).toBeNull();
    expect((await getIssue(world.org.agents.bob.ctx, { identifier: found.identifier })).triage).toBeUndefined();
  });
});
