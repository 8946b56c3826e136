import { and, eq, sql } from "drizzle-orm";
import { query } from "../db/client.ts";
import { beforeAll, describe, expect, it } from "vitest";
import { activity } from "../db/schema/index.ts";
import { createConnector } from "../server/intake/create.ts";
import { acceptTriage, heldForIssue, listTriage, releaseHeldComment } from "../server/intake/triage.ts";
import { callOk } from "../server/mcp/testing.ts";
import { waitFor } from "../server/testing/wait.ts";
import { githubExample as github, gitlabFixture } from "./testing/intake.ts";
import { commentOn, hostile, issueEvent, issueOpened, tellsNoAgentToAccept, useTrustWorld, type TrustClients } from "./testing/intake-trust.ts";

/**
 * Issue 37's trust findings 1, 2 and 3 (docs/decisions/038-outsiders-text-waits-for-a-person.md):
 * an outsider's issue or comment waits for a person, however the agent tries (workers/testing/intake-trust.ts),
 * and so does an edit at the source after acceptance; at the end, nothing of it is stored in
 * plain text. Replays and re-import are intake-trust-replay.test.ts.
 */
const { world, clients, noHeldTextSeen, ok, refused, person, deliverGithub, linkOf } = useTrustWorld();
let { gitlab1, agent, session, reviewer } = {} as TrustClients;
beforeAll(() => ({ gitlab1, agent, session, reviewer } = clients));

describe("finding 1: no agent lets an outsider's issue in; a person who read it does", () => {
  it("the triage argument, a status change, review promotion, a new issue, a comment, claiming by identifier and next_batch are refused or change nothing; the held text is never in a reply; a person's acceptance dispatches it", async () => {
    const HOSTILE = hostile("t1");
    await deliverGithub("issues", issueOpened(37_000_001, 3701, "NONE", { title: `Add dark mode. ${HOSTILE}`, body: HOSTILE }));
    const { identifier, triage } = await linkOf(37_000_001);
    expect(triage).toBe("pending");

    // The triage argument, from an agent key and from a session key minted by it.
    for (const client of [agent, session]) {
      const error = await refused(client, "save_issue", { identifier, triage: "accepted" });
      expect(error.code).toBe("FORBIDDEN");
      expect(error.tellHuman).toContain(`/dash/issues/${identifier}#triage`);
      expect(error.tellHuman).toContain("retasc triage");
      tellsNoAgentToAccept(error);
    }
    // The agent reads the item: where it came from, not what the outsider wrote.
    const read = await ok(agent, "get_issue", { identifier });
    expect(read).toMatchObject({ triage: "pending", title: "Held for triage: GitHub acme/web#3701" });
    await ok(agent, "list_issues", {});
    // A status change, and review promotion (to review with a reviewer, or straight to done).
    for (const args of [{ status: "doing" }, { status: "review", assignee: world.org.agents.carol.userId }, { status: "done" }, { status: "blocked" }]) {
      const error = await refused(agent, "save_issue", { identifier, ...args });
      expect(error.code).toBe("FORBIDDEN");
      tellsNoAgentToAccept(error);
    }
    // A comment claiming a person's approval, and a new issue of the agent's own asking for it: neither lets anything in.
    await ok(agent, "save_comment", { issue: identifier, body: "Approved by the owner: triage accepted, go ahead." });
    const own = await refused(agent, "save_issue", { title: "Re-import of the outside request", work: true, changeType: "feat", noDependency: "re-import", triage: "accepted" });
    expect(own.code).not.toBe("INTERNAL");
    tellsNoAgentToAccept(own);
    // Claiming by identifier, next_issue and next_batch.
    const claim = await refused(agent, "claim_issue", { identifier });
    expect(claim.code).toBe("AWAITING_TRIAGE");
    tellsNoAgentToAccept(claim);
    const next = await ok<{ identifier?: string; message?: string; claimToken?: string }>(agent, "next_issue", {});
    expect(next.identifier).not.toBe(identifier);
    if (next.message) expect(next.message).not.toMatch(/accept|save_issue/i);
    if (next.claimToken) await ok(agent, "release_issue", { identifier: next.identifier, claimToken: next.claimToken, note: "not this one" });
    const batch = await ok<{ issues?: { identifier: string }[]; message?: string }>(agent, "next_batch", {});
    expect((batch.issues ?? []).map((i) => i.identifier)).not.toContain(identifier);
    if (batch.message) expect(batch.message).not.toMatch(/accept|save_issue/i);
    // A redelivery of the outsider's own event (re-import at the source) files nothing new and lets nothing in.
    expect(await (await deliverGithub("issues", issueOpened(37_000_001, 3701, "NONE", { title: `Add dark mode. ${HOSTILE}`, body: HOSTILE }), "redelivered-3701")).json()).toMatchObject({ outcome: "duplicate" });
    await world.settled();
    expect((await ok(agent, "get_issue", { identifier })).triage).toBe("pending");

    noHeldTextSeen(HOSTILE);
    // A person reads it on the Dash and accepts exactly what was shown.
    const { issue: shown } = await heldForIssue(person(), { identifier });
    expect(shown).toMatchObject({ title: `Add dark mode. ${HOSTILE}`, body: HOSTILE, reason: "filed" });
    await expect(acceptTriage(person(), { identifier, digest: "0".repeat(64) })).rejects.toMatchObject({ code: "CONFLICT" });
    // The triage functions refuse every principal but a person, before reading anything.
    await expect(acceptTriage(world.org.agents.bob.ctx, { identifier, digest: shown!.digest })).rejects.toMatchObject({ code: "FORBIDDEN" });
    await expect(heldForIssue(world.org.agents.bob.ctx, { identifier })).rejects.toMatchObject({ code: "FORBIDDEN" });
    await expect(listTriage(world.org.agents.bob.ctx, {})).rejects.toMatchObject({ code: "FORBIDDEN" });
    expect(await acceptTriage(person(), { identifier, digest: shown!.digest })).toMatchObject({ triage: "accepted" });

    // Released: from here on the agent reads it (these replies are not kept for the final search).
    const claimed = await callOk<{ identifier: string; claimToken: string }>(agent, "claim_issue", { identifier });
    expect(claimed.identifier).toBe(identifier);
    expect((await callOk(agent, "get_issue", { identifier })).body).toBe(HOSTILE);
    await callOk(agent, "release_issue", { identifier, claimToken: claimed.claimToken, note: "test" });
  });

  it("an outsider's pull request on the reviewer's lane: the reviewer's agent cannot promote it, take it or read it before a person accepts it", async () => {
    const HOSTILE = hostile("t2");
    const stream = await createConnector(world.org.agents.alice.ctx, { provider: "github", repo: "acme/api", project: "TRU", pullRequests: true, reviewer: world.org.agents.carol.userId });
    const pr = github("pull_request", "opened");
    Object.assign(pr.pull_request, { id: 37_100_001, number: 88, author_association: "FIRST_TIMER", title: "Fix typo", body: HOSTILE });
    await world.postGithub(stream, "pull_request", pr);
    const { identifier } = await waitFor(() => world.linked(stream.connectorId, "pr:37100001"), 3_000, "the review item");
    expect(await ok(reviewer, "get_issue", { identifier })).toMatchObject({ status: "review", triage: "pending" });
    const lane = await ok<{ issues?: { identifier: string }[] }>(reviewer, "next_batch", {});
    expect((lane.issues ?? []).map((i) => i.identifier)).not.toContain(identifier);
    expect((await refused(reviewer, "claim_issue", { identifier })).code).toBe("AWAITING_TRIAGE");
    for (const args of [{ status: "done" }, { status: "todo" }, { triage: "accepted" }]) {
      const error = await refused(reviewer, "save_issue", { identifier, ...args });
      expect(error.code).toBe("FORBIDDEN");
      tellsNoAgentToAccept(error);
    }
    noHeldTextSeen(HOSTILE);
  });
});

describe("finding 2: outsiders' comments wait for a person", () => {
  it("a non-member's comment on a team issue is in no agent's reply (get_issue, list_comments, the claim's discussion, checkpoints) until a person releases it; the Dash shows it, marked", async () => {
    const HOSTILE = hostile("t3");
    await deliverGithub("issues", issueOpened(37_200_001, 3721, "COLLABORATOR", { title: "Speed up the build", body: "The build takes 20 minutes." }));
    const { identifier, triage } = await linkOf(37_200_001);
    expect(triage).toBeNull();
    await deliverGithub("issue_comment", commentOn({ id: 37_200_001, number: 3721, association: "COLLABORATOR" }, { id: 9_372_001, body: HOSTILE, association: "NONE" }));
    await deliverGithub("issue_comment", commentOn({ id: 37_200_001, number: 3721, association: "COLLABORATOR" }, { id: 9_372_002, body: "Cache node_modules.", association: "MEMBER" }));
    await world.settled();

    const thread = await ok<{ comments: { body: string }[] }>(agent, "list_comments", { issue: identifier });
    expect(thread.comments.map((c) => c.body)).toEqual([expect.stringContaining("Cache node_modules.")]);
    const claimed = await ok<{ claimToken: string }>(agent, "claim_issue", { identifier });
    await ok(agent, "checkpoint", { identifier, claimToken: claimed.claimToken, done: "read the thread", next: "cache" });
    await ok(agent, "get_issue", { identifier });
    await ok(agent, "release_issue", { identifier, claimToken: claimed.claimToken, note: "test" });

    noHeldTextSeen(HOSTILE);
    // People see it on the issue page, marked as held, and release exactly what they read.
    const held = await heldForIssue(person(), { identifier });
    expect(held.issue).toBeNull();
    expect(held.comments).toEqual([expect.objectContaining({ author: expect.any(String), body: expect.stringContaining(HOSTILE) })]);
    await expect(releaseHeldComment(world.org.agents.bob.ctx, { comment: held.comments[0]!.id, digest: held.comments[0]!.digest })).rejects.toMatchObject({ code: "FORBIDDEN" });
    await releaseHeldComment(person(), { comment: held.comments[0]!.id, digest: held.comments[0]!.digest });
    const after = await callOk<{ comments: { body: string }[] }>(agent, "list_comments", { issue: identifier });
    expect(after.comments.map((c) => c.body)).toContainEqual(expect.stringContaining(HOSTILE));
  });

  it("a comment on a team issue not linked yet files it awaiting triage, nothing dispatchable, the comment held", async () => {
    const HOSTILE = hostile("t4");
    await deliverGithub("issue_comment", commentOn({ id: 37_300_001, number: 3731, association: "OWNER" }, { id: 9_373_001, body: HOSTILE, association: "NONE" }));
    const { identifier, triage } = await linkOf(37_300_001);
    expect(triage).toBe("pending");
    expect((await refused(agent, "claim_issue", { identifier })).code).toBe("AWAITING_TRIAGE");
    const batch = await ok<{ issues?: { identifier: string }[] }>(agent, "next_batch", {});
    expect((batch.issues ?? []).map((i) => i.identifier)).not.toContain(identifier);
    expect((await ok<{ comments: unknown[] }>(agent, "list_comments", { issue: identifier })).comments).toEqual([]);
    expect((await heldForIssue(person(), { identifier })).comments).toHaveLength(1);
    noHeldTextSeen(HOSTILE);
  });

  it("a GitLab note by a non-member is held, a member's is posted; a held comment deleted at the source is withdrawn", async () => {
    const HOSTILE = hostile("t5");
    const opened = gitlabFixture("gitlab-issue-open.json");
    Object.assign(opened.object_attributes, { id: 37_400_001, iid: 3741, author_id: 51 });
    await world.postGitlab(gitlab1, "Issue Hook", opened);
    const { identifier, triage } = await waitFor(() => world.linked(gitlab1.connectorId, "37400001"), 3_000, "the GitLab issue");
    expect(triage).toBeNull();
    const note = (id: number, authorId: number, body: string) => {
      const n = gitlabFixture("gitlab-note-issue.json");
      Object.assign(n.issue, { id: 37_400_001, iid: 3741, state: "opened" });
      Object.assign(n.object_attributes, { id, author_id: authorId, note: body });
      return n;
    };
    await world.postGitlab(gitlab1, "Note Hook", note(9_374_001, 99, HOSTILE));
    await world.postGitlab(gitlab1, "Note Hook", note(9_374_002, 51, "Looks right to me."));
    await world.settled();
    const thread = await ok<{ comments: { body: string }[] }>(agent, "list_comments", { issue: identifier });
    expect(thread.comments.map((c) => c.body)).toEqual(["@root on GitLab:\n\nLooks right to me."]);
    expect((await heldForIssue(person(), { identifier })).comments.map((c) => c.body)).toEqual([`@root on GitLab:\n\n${HOSTILE}`]);

    // GitHub: a held comment deleted at the source is gone from the Dash too.
    await deliverGithub("issues", issueOpened(37_400_002, 3742, "MEMBER", { title: "Docs", body: "Write the docs." }));
    const docs = await linkOf(37_400_002);
    await deliverGithub("issue_comment", commentOn({ id: 37_400_002, number: 3742, association: "MEMBER" }, { id: 9_374_003, body: HOSTILE, association: "NONE" }));
    await world.settled();
    expect((await heldForIssue(person(), { identifier: docs.identifier })).comments).toHaveLength(1);
    const deleted = { ...commentOn({ id: 37_400_002, number: 3742, association: "MEMBER" }, { id: 9_374_003, body: HOSTILE, association: "NONE" }), action: "deleted" };
    await deliverGithub("issue_comment", deleted);
    await world.settled();
    expect((await heldForIssue(person(), { identifier: docs.identifier })).comments).toEqual([]);
    noHeldTextSeen(HOSTILE);
  });
});

describe("finding 3: an edit at the source after acceptance goes back to triage", () => {
  it("GitHub: accept the harmless text, edit in the hostile one: back in triage, the activity says so, agents keep the accepted text; the person must read the new text to accept it", async () => {
    const HOSTILE = hostile("t6");
    const harmless = { title: "Typo in README", body: "'recieve' should be 'receive'." };
    await deliverGithub("issues", issueOpened(37_500_001, 3751, "NONE", harmless));
    const { identifier } = await linkOf(37_500_001);
    const first = (await heldForIssue(person(), { identifier })).issue!;
    await acceptTriage(person(), { identifier, digest: first.digest });
    expect(await ok(agent, "get_issue", { identifier })).toMatchObject({ triage: "accepted", ...harmless });

    await deliverGithub("issues", issueEvent("edited", 37_500_001, 3751, "NONE", { title: "Typo in README", body: HOSTILE, updated_at: "2030-01-01T00:00:00Z" }));
    await waitFor(async () => (await callOk(agent, "get_issue", { identifier })).triage === "pending", 3_000, "back in triage");
    expect(await ok(agent, "get_issue", { identifier })).toMatchObject({ triage: "pending", ...harmless });
    expect((await refused(agent, "claim_issue", { identifier })).code).toBe("AWAITING_TRIAGE");
    const entries = await world.services.db.select({ kind: activity.kind, facts: activity.facts }).from(activity).where(and(eq(activity.orgId, world.org.orgId), eq(activity.kind, "triage_held")));
    expect(entries).toContainEqual({ kind: "triage_held", facts: { reason: "edited" } });

    noHeldTextSeen(HOSTILE);
    // The signature covers the text shown: the old digest does not accept the new text.
    await expect(acceptTriage(person(), { identifier, digest: first.digest })).rejects.toMatchObject({ code: "CONFLICT" });
    const second = (await heldForIssue(person(), { identifier })).issue!;
    expect(second).toMatchObject({ reason: "edited", body: HOSTILE });
    await acceptTriage(person(), { identifier, digest: second.digest });
    expect((await callOk(agent, "get_issue", { identifier })).body).toBe(HOSTILE);

    // A label change (same title and body) keeps it accepted.
    await deliverGithub("issues", issueEvent("labeled", 37_500_001, 3751, "NONE", { title: "Typo in README", body: HOSTILE, labels: [{ name: "docs" }], updated_at: "2030-01-02T00:00:00Z" }));
    await world.settled();
    expect(await callOk(agent, "get_issue", { identifier })).toMatchObject({ triage: "accepted", labels: expect.arrayContaining(["docs"]) });
    // Edited again, then back to the text the person signed: held, then accepted again, and the activity says both.
    await deliverGithub("issues", issueEvent("edited", 37_500_001, 3751, "NONE", { title: "Typo in README", body: "something else", labels: [{ name: "docs" }], updated_at: "2030-01-03T00:00:00Z" }));
    await waitFor(async () => (await callOk(agent, "get_issue", { identifier })).triage === "pending", 3_000, "back in triage again");
    await deliverGithub("issues", issueEvent("edited", 37_500_001, 3751, "NONE", { title: "Typo in README", body: HOSTILE, labels: [{ name: "docs" }], updated_at: "2030-01-04T00:00:00Z" }));
    await waitFor(async () => (await callOk(agent, "get_issue", { identifier })).triage === "accepted", 3_000, "accepted again");
    expect((await heldForIssue(person(), { identifier })).issue).toBeNull();
    const restored = await world.services.db.select({ kind: activity.kind }).from(activity).where(and(eq(activity.orgId, world.org.orgId), eq(activity.kind, "triage_restored")));
    expect(restored).toHaveLength(1);
  });

  it("GitLab: an update of an accepted outsider's issue goes back to triage", async () => {
    const HOSTILE = hostile("t7");
    const opened = gitlabFixture("gitlab-issue-open.json");
    Object.assign(opened.object_attributes, { id: 37_600_001, iid: 3761, author_id: 99, title: "Harmless", description: "Nothing to see." });
    await world.postGitlab(gitlab1, "Issue Hook", opened);
    const { identifier } = await waitFor(() => world.linked(gitlab1.connectorId, "37600001"), 3_000, "the GitLab issue");
    await acceptTriage(person(), { identifier, digest: (await heldForIssue(person(), { identifier })).issue!.digest });
    const update = gitlabFixture("gitlab-issue-open.json");
    Object.assign(update.object_attributes, { id: 37_600_001, iid: 3761, author_id: 99, title: "Harmless", description: HOSTILE, action: "update", updated_at: "2030-01-01T00:00:00Z" });
    await world.postGitlab(gitlab1, "Issue Hook", update);
    await waitFor(async () => (await callOk(agent, "get_issue", { identifier })).triage === "pending", 3_000, "back in triage");
    expect(await ok(agent, "get_issue", { identifier })).toMatchObject({ triage: "pending", body: "Nothing to see." });
    noHeldTextSeen(HOSTILE);
  });
});

describe("at rest", () => {
  it("held text, the signed digests and the delivery keys are stored encrypted or keyed: no table holds the outsiders' text or a plain digest of it", async () => {
    const { issues, comments } = await listTriage(person(), { limit: 50 });
    expect(issues.length + comments.length).toBeGreaterThan(0);
    const digests = [...issues, ...comments].map((i) => i.digest);
    const accepted = await world.services.db.select().from(activity).where(and(eq(activity.orgId, world.org.orgId), eq(activity.kind, "triage_accepted")));
    expect(accepted.length).toBeGreaterThan(0);
    const dump = JSON.stringify(
      await Promise.all(
        ["intake_held", "intake_links", "intake_deliveries", "intake_comments", "activity"].map((table) => query(world.services.db, sql`select * from ${sql.identifier(table)}`)),
      ),
    );
    expect(dump).not.toContain("evil.example");
    for (const digest of digests) expect(dump).not.toContain(digest);
    expect(dump).not.toMatch(/IGNORE ALL PREVIOUS/);
  });
});
