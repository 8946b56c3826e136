import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { query } from "../db/client.ts";
import { waitFor } from "../server/testing/wait.ts";
import { saveIssue } from "../server/issues/index.ts";
import { listAttachments } from "../server/issues/attachments.ts";
import { listComments } from "../server/issues/comments.ts";
import { getIssue } from "../server/issues/read.ts";
import { claimIssue, nextBatch } from "../server/queue/index.ts";
import { createConnector } from "../server/intake/create.ts";
import { personAccepts, personCtx } from "../server/intake/testing.ts";
import { heldForIssue } from "../server/intake/triage.ts";
import { githubExample, gitlabFixture, gitlabMergeRequest as gitlabMerge, outsidersPullRequest as outsiders, useIntakeWorld } from "./testing/intake.ts";

/**
 * The pull/merge request stream (docs/decisions/026-intake-pull-requests.md, 032) end to end in
 * one process (workers/testing/intake.ts): GitHub's pull_request examples and GitLab's documented
 * merge request event, signed, through the routes' handler and the in-process job runner; fake
 * GitHub and GitLab APIs record any write-back. Connecting the stream and its reviewer are
 * intake-pull-requests-reviewer.test.ts.
 */
const world = useIntakeWorld("PRS");
const github = (action: string) => githubExample("pull_request", action);
const itemOf = world.linked;
/** A person of the org at the Dash (carol, the reviewer). */
const person = () => personCtx(world.services, world.org.orgId, world.org.agents.carol.userId);
const { settled } = world;

describe("GitHub pull requests", () => {
  let connector: Awaited<ReturnType<typeof createConnector>>;
  beforeAll(async () => {
    connector = await createConnector(world.org.agents.alice.ctx, { provider: "github", repo: "Codertocat/Hello-World", project: "PRS", token: "ghp_test_writeback", pullRequests: true, reviewer: world.org.agents.carol.userId });
  });
  const deliver = (payload: unknown, event = "pull_request") => world.postGithub(connector, event, payload);

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
    const item = await getIssue(world.org.agents.alice.ctx, { identifier });
    // Its text is held for a person (decision 038): the item names only where it came from.
    expect(item).toMatchObject({ status: "review", triage: "pending", work: true });
    expect(item.title).toBe("Held for triage: GitHub pull request Codertocat/Hello-World#41");
    expect((await heldForIssue(person(), { identifier })).issue).toMatchObject({ title: opened.pull_request.title, body: opened.pull_request.body });
    expect(item.assignee).toMatchObject({ userId: world.org.agents.carol.userId });
    const links = await listAttachments(world.org.agents.alice.ctx, { issue: identifier });
    expect(links.attachments[0]).toMatchObject({ url: opened.pull_request.html_url, title: `GitHub pull request Codertocat/Hello-World#41 by @${opened.pull_request.user.login}` });
    // Outsider text: not dispatched before a person accepts it.
    await expect(claimIssue(world.org.agents.carol.ctx, { identifier })).rejects.toMatchObject({ code: "AWAITING_TRIAGE" });
    await personAccepts(person(), identifier);
    expect((await getIssue(world.org.agents.alice.ctx, { identifier })).title).toBe(opened.pull_request.title);
    const lane = (await nextBatch(world.org.agents.carol.ctx, {})) as { issues: { identifier: string }[] };
    expect(lane.issues.map((i) => i.identifier)).toContain(identifier);
    const elsewhere = (await nextBatch(world.org.agents.bob.ctx, {})) as { issues?: { identifier: string }[] };
    expect((elsewhere.issues ?? []).map((i) => i.identifier)).not.toContain(identifier);

    // An edit at the source puts it back in triage; the agents keep the accepted text until a person accepts the new one.
    await deliver(outsiders("edited", 5_000_001, 41, { title: "Update the README with new information (edited)" }));
    await waitFor(async () => (await getIssue(world.org.agents.alice.ctx, { identifier })).triage === "pending", 2_000, "the edit held");
    expect((await getIssue(world.org.agents.alice.ctx, { identifier })).title).toBe(opened.pull_request.title);
    await personAccepts(person(), identifier);
    expect((await getIssue(world.org.agents.alice.ctx, { identifier })).title.endsWith("(edited)")).toBe(true);

    await deliver(outsiders("closed", 5_000_001, 41, { merged: true, state: "closed" }));
    await waitFor(async () => (await getIssue(world.org.agents.alice.ctx, { identifier })).status === "done", 2_000, "done on merge");
    await settled();
    expect(world.fakeGithub.requests.filter((r) => r.method !== "GET")).toEqual([]);
  });

  it("a review item's clock (review_since, its age floor) starts when a person lets it in, stops while an edit waits in triage, and starts again when the text comes back", async () => {
    const clockOf = async (identifier: string) => {
      const [row] = await query<{ review_since: string | null; own_level: number }>(world.services.db, sql`select review_since, own_level from issues where identifier = ${identifier}`);
      return { since: row!.review_since === null ? null : new Date(row!.review_since).getTime(), level: row!.own_level };
    };
    const opened = outsiders("opened", 5_000_009, 49);
    await deliver(opened);
    const { identifier } = await waitFor(() => itemOf(connector.connectorId, "pr:5000009"), 2_000, "the review item");
    // Awaiting triage it is never dispatched: no clock, no floor.
    expect(await clockOf(identifier)).toEqual({ since: null, level: 0 });
    const accepting = Date.now();
    await personAccepts(person(), identifier);
    const accepted = await clockOf(identifier);
    expect(accepted.since).toBeGreaterThanOrEqual(accepting);
    expect(accepted.level).toBe(3);
    // An outsider's edit puts it back in triage: the clock stops and the floor goes with it.
    await deliver(outsiders("edited", 5_000_009, 49, { title: "Something else entirely" }));
    await waitFor(async () => (await getIssue(world.org.agents.alice.ctx, { identifier })).triage === "pending", 2_000, "the edit held");
    expect(await clockOf(identifier)).toEqual({ since: null, level: 0 });
    // The text back as it was signed: let out again, the clock starts again.
    const restoring = Date.now();
    await deliver(outsiders("edited", 5_000_009, 49, { title: opened.pull_request.title, updated_at: new Date(Date.now() + 60_000).toISOString() }));
    await waitFor(async () => (await getIssue(world.org.agents.alice.ctx, { identifier })).triage === "accepted", 2_000, "the text restored");
    const restored = await clockOf(identifier);
    expect(restored.since).toBeGreaterThanOrEqual(restoring);
    expect(restored.level).toBe(3);
  });

  it("closed unmerged is canceled with the reason; reopened, it is reviewed again as a new item; the reviewer's finish writes nothing back", async () => {
    await deliver(outsiders("opened", 5_000_002, 42));
    const first = await waitFor(() => itemOf(connector.connectorId, "pr:5000002"), 2_000, "the review item");
    await deliver(outsiders("closed", 5_000_002, 42, { merged: false, state: "closed" }));
    await waitFor(async () => (await getIssue(world.org.agents.alice.ctx, { identifier: first.identifier })).status === "canceled", 2_000, "the cancel");
    expect((await getIssue(world.org.agents.alice.ctx, { identifier: first.identifier })).cancelReason).toBe("closed unmerged on GitHub (Codertocat/Hello-World#42)");

    await deliver(outsiders("reopened", 5_000_002, 42));
    const again = await waitFor(async () => {
      const now = await itemOf(connector.connectorId, "pr:5000002");
      return now && now.identifier !== first.identifier ? now : undefined;
    }, 2_000, "the new review item");
    expect(await getIssue(world.org.agents.alice.ctx, { identifier: again.identifier })).toMatchObject({ status: "review", triage: "pending" });
    const thread = (await listComments(world.org.agents.alice.ctx, { issue: first.identifier })).comments.map((c) => c.body);
    expect(thread).toContain(`Reopened on GitHub (Codertocat/Hello-World#42); its review continues in ${again.identifier}.`);

    await personAccepts(person(), again.identifier);
    const claim = (await claimIssue(world.org.agents.carol.ctx, { identifier: again.identifier })) as { claimToken: string };
    await saveIssue(world.org.agents.carol.ctx, { identifier: again.identifier, status: "done", claimToken: claim.claimToken });
    await settled();
    expect(world.fakeGithub.requests.filter((r) => r.method !== "GET")).toEqual([]);
    expect(await query<{ n: number }>(world.services.db, sql`select count(*)::int as n from outbox where job = 'intake.write_back' and failed_at is not null`)).toEqual([{ n: 0 }]);
  });
  it("comments on a followed request (its conversation and its review threads) become comments on its review item, attributed, once; a deleted one is retracted; the team's own requests add nothing", async () => {
    await deliver(outsiders("opened", 5_000_003, 43));
    const { identifier } = await waitFor(() => itemOf(connector.connectorId, "pr:5000003"), 2_000, "the review item");
    // GitHub sends a comment on a pull request's conversation as an issue_comment naming the request by number.
    const talk = githubExample("issue_comment", "created");
    Object.assign(talk.issue, { id: 8_000_043, number: 43, pull_request: { url: "https://api.github.com/repos/Codertocat/Hello-World/pulls/43", html_url: "https://github.com/Codertocat/Hello-World/pull/43" } });
    Object.assign(talk.comment, { id: 7_000_001, body: "Could you add a test for this?" });
    const review = githubExample("pull_request_review_comment", "created");
    Object.assign(review.pull_request, { id: 5_000_003, number: 43 });
    Object.assign(review.comment, { id: 7_000_001, body: "This line reads the wrong field." });
    // Each twice (as GitHub redelivers): one comment each.
    await deliver(talk, "issue_comment");
    await deliver(review, "pull_request_review_comment");
    await deliver(talk, "issue_comment");
    await deliver(review, "pull_request_review_comment");
    await settled();
    const thread = async () => (await listComments(world.org.agents.alice.ctx, { issue: identifier })).comments;
    const bodies = (await thread()).map((c) => c.body);
    // Both carry id 7000001: review comments are numbered apart from conversation comments.
    expect(bodies.filter((b) => b === `@${talk.comment.user.login} on GitHub:\n\nCould you add a test for this?`)).toHaveLength(1);
    expect(bodies.filter((b) => b === `@${review.comment.user.login} on GitHub:\n\nThis line reads the wrong field.`)).toHaveLength(1);

    const deleted = githubExample("pull_request_review_comment", "deleted");
    Object.assign(deleted.pull_request, { id: 5_000_003, number: 43 });
    Object.assign(deleted.comment, { id: 7_000_001 });
    await deliver(deleted, "pull_request_review_comment");
    await settled();
    const after = await thread();
    expect(after.find((c) => c.body.endsWith("This line reads the wrong field."))).toMatchObject({ retracted: true });
    expect(after.find((c) => c.body.endsWith("Could you add a test for this?"))).toMatchObject({ retracted: false });

    // The team's own request (no review item) and an unknown one: nothing is filed for a comment.
    const links = async () => Number((await query<{ n: number }>(world.services.db, sql`select count(*)::int as n from intake_links where connector_id = ${connector.connectorId}`))[0]!.n);
    const before = await links();
    const own = githubExample("issue_comment", "created");
    Object.assign(own.issue, { number: 2, pull_request: { url: "https://api.github.com/repos/Codertocat/Hello-World/pulls/2" } });
    await deliver(own, "issue_comment");
    await deliver(githubExample("pull_request_review_comment", "created"), "pull_request_review_comment");
    await settled();
    expect(await links()).toBe(before);
  });
});

describe("GitLab merge requests", () => {
  let connector: Awaited<ReturnType<typeof createConnector>>;
  beforeAll(async () => {
    connector = await createConnector(world.org.agents.alice.ctx, {
      provider: "gitlab",
      repo: "diaspora/diaspora",
      project: "PRS",
      baseUrl: world.fakeGitlab.url,
      token: "glpat-test-writeback",
      pullRequests: true,
      reviewer: world.org.agents.carol.userId,
    });
  });
  const deliver = (payload: unknown, event = "Merge Request Hook") => world.postGitlab(connector, event, payload);

  it("a Developer's request is ignored; below Developer it is a review item, done when merged", async () => {
    expect((await deliver(gitlabMerge({}))).status).toBe(202); // author 51 is a Developer on the fake
    await settled();
    expect(await itemOf(connector.connectorId, "pr:99")).toBeUndefined();

    await deliver(gitlabMerge({ id: 100, iid: 2, author_id: 77 }));
    const { identifier } = await waitFor(() => itemOf(connector.connectorId, "pr:100"), 2_000, "the review item");
    const item = await getIssue(world.org.agents.alice.ctx, { identifier });
    expect(item).toMatchObject({ status: "review", triage: "pending" });
    expect((await heldForIssue(person(), { identifier })).issue).toMatchObject({ title: "MS-Viewport" });
    expect(item.labels.sort()).toEqual(["API", "support"]);
    await deliver(gitlabMerge({ id: 100, iid: 2, author_id: 77, action: "merge", state: "merged" }));
    await waitFor(async () => (await getIssue(world.org.agents.alice.ctx, { identifier })).status === "done", 2_000, "done on merge");
    await settled();
    expect(world.fakeGitlab.requests.filter((r) => r.method !== "GET")).toEqual([]);
  });

  it("closed unmerged is canceled", async () => {
    await deliver(gitlabMerge({ id: 101, iid: 3, author_id: 77 }));
    const { identifier } = await waitFor(() => itemOf(connector.connectorId, "pr:101"), 2_000, "the review item");
    await deliver(gitlabMerge({ id: 101, iid: 3, author_id: 77, action: "close", state: "closed" }));
    await waitFor(async () => (await getIssue(world.org.agents.alice.ctx, { identifier })).status === "canceled", 2_000, "the cancel");
    expect((await getIssue(world.org.agents.alice.ctx, { identifier })).cancelReason).toBe("closed unmerged on GitLab (diaspora/diaspora!3)");
  });
  it("a note on a followed merge request is a comment on its review item, once", async () => {
    await deliver(gitlabMerge({ id: 102, iid: 4, author_id: 77 }));
    const { identifier } = await waitFor(() => itemOf(connector.connectorId, "pr:102"), 2_000, "the review item");
    const note = gitlabFixture("gitlab-note-merge-request.json");
    Object.assign(note.merge_request, { id: 102, iid: 4 });
    note.object_attributes.author_id = 51; // a Developer's note: the team's, taken as it is
    await deliver(note, "Note Hook");
    await deliver(note, "Note Hook");
    await settled();
    const bodies = (await listComments(world.org.agents.alice.ctx, { issue: identifier })).comments.map((c) => c.body);
    expect(bodies.filter((b) => b === "@root on GitLab:\n\nThis MR needs work.")).toHaveLength(1);
  });
});
