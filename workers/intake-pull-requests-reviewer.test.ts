import { and, eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { intakeDeliveries, members } from "../db/schema/index.ts";
import { waitFor } from "../server/testing/wait.ts";
import { getIssue } from "../server/issues/read.ts";
import { listComments } from "../server/issues/comments.ts";
import { listConnectors, setConnectorReviewer } from "../server/intake/connectors.ts";
import { suspendMember } from "../server/orgs/members.ts";
import { createConnector } from "../server/intake/create.ts";
import { gitlabMergeRequest as gitlabMerge, outsidersPullRequest as outsiders, useIntakeWorld } from "./testing/intake.ts";

/**
 * The pull/merge request stream's connector (docs/decisions/026-intake-pull-requests.md, 032) in
 * one process (workers/testing/intake.ts): off by default; on, it needs a reviewer who is a member,
 * and when that reviewer leaves, requests still arrive until a person picks another.
 */
const world = useIntakeWorld("PRS");
const itemOf = world.linked;

describe("connecting with the stream", () => {
  it("needs a reviewer who is a member; the list shows the stream and the reviewer", async () => {
    await expect(createConnector(world.org.agents.alice.ctx, { provider: "github", repo: "Codertocat/No-Reviewer", project: "PRS", pullRequests: true })).rejects.toThrow(/needs a reviewer/);
    await expect(createConnector(world.org.agents.alice.ctx, { provider: "github", repo: "Codertocat/Stranger", project: "PRS", pullRequests: true, reviewer: "nobody@example.com" })).rejects.toMatchObject({
      code: "NOT_FOUND",
    });
    const created = await createConnector(world.org.agents.alice.ctx, { provider: "github", repo: "Codertocat/Listed", project: "PRS", pullRequests: true, reviewer: world.org.agents.carol.userId });
    expect(created.pullRequests).toBe(true);
    expect(created.steps.join("\n")).toContain("Pull requests");
    const listed = (await listConnectors(world.org.agents.bob.ctx, {})).connectors.find((c) => c.id === created.connectorId)!;
    expect(listed).toMatchObject({ pullRequests: true, reviewer: expect.stringMatching(/^carol-.*@example\.com$/) });
  });

  it("off (the default), a pull_request delivery is acknowledged and not stored", async () => {
    const off = await createConnector(world.org.agents.alice.ctx, { provider: "github", repo: "Codertocat/Off", project: "PRS" });
    const reply = await world.postGithub(off, "pull_request", outsiders("opened", 1, 1));
    expect(reply.status).toBe(202);
    expect(await reply.json()).toMatchObject({ outcome: "ignored" });
    expect(await world.services.db.select().from(intakeDeliveries).where(eq(intakeDeliveries.connectorId, off.connectorId))).toHaveLength(0);
  });
});

describe("when the preset reviewer has left the org", () => {
  it("requests still arrive, unassigned in todo and awaiting triage, saying why; the card names the reviewer and what to do; a new reviewer takes the next ones and clears it", async () => {
    const owner = world.org.agents.alice.ctx;
    const github = await createConnector(owner, { provider: "github", repo: "Codertocat/Left", project: "PRS", pullRequests: true, reviewer: world.org.agents.carol.userId });
    const gitlab = await createConnector(owner, { provider: "gitlab", repo: "diaspora/left", project: "PRS", baseUrl: world.fakeGitlab.url, token: "glpat-test-writeback", pullRequests: true, reviewer: world.org.agents.carol.userId });
    const [carol] = await world.services.db.select({ id: members.id }).from(members).where(and(eq(members.orgId, world.org.orgId), eq(members.userId, world.org.agents.carol.userId)));
    await suspendMember(owner, { memberId: carol!.id });
    const card = async (id: string) => (await listConnectors(owner, {})).connectors.find((c) => c.id === id)!;

    await world.postGithub(github, "pull_request", outsiders("opened", 5_100_001, 51));
    await world.postGitlab(gitlab, "Merge Request Hook", gitlabMerge({ id: 200, iid: 9, author_id: 77 }));
    const fromGithub = await waitFor(() => itemOf(github.connectorId, "pr:5100001"), 2_000, "the GitHub item");
    const fromGitlab = await waitFor(() => itemOf(gitlab.connectorId, "pr:200"), 2_000, "the GitLab item");
    for (const { identifier, kind } of [fromGithub, fromGitlab]) {
      expect(kind).toBe("pull_request");
      const item = await getIssue(owner, { identifier });
      expect(item).toMatchObject({ status: "todo", triage: "pending", work: true });
      expect(item.assignee ?? null).toBeNull();
      const thread = (await listComments(owner, { issue: identifier })).comments.map((c) => c.body);
      expect(thread.some((b) => b.startsWith("Filed unassigned: the connector's reviewer is no longer an active member"))).toBe(true);
    }
    for (const id of [github.connectorId, gitlab.connectorId]) {
      expect((await card(id)).lastError).toMatch(/^carol-.*@example\.com is no longer an active member: new review items arrive unassigned in todo; pick another reviewer on this card$/);
    }

    // Settled by the source as any item: merged is done, though nobody reviewed it here.
    await world.postGithub(github, "pull_request", outsiders("closed", 5_100_001, 51, { merged: true, state: "closed" }));
    await waitFor(async () => (await getIssue(owner, { identifier: fromGithub.identifier })).status === "done", 2_000, "done on merge");

    // Only an owner or admin picks the reviewer, and only an active member.
    await expect(setConnectorReviewer(world.org.agents.bob.ctx, { connectorId: github.connectorId, reviewer: world.org.agents.bob.userId })).rejects.toMatchObject({ code: "FORBIDDEN" });
    await expect(setConnectorReviewer(owner, { connectorId: github.connectorId, reviewer: world.org.agents.carol.userId })).rejects.toMatchObject({ code: "INVALID_INPUT" });
    await setConnectorReviewer(owner, { connectorId: github.connectorId, reviewer: world.org.agents.bob.userId });
    expect(await card(github.connectorId)).toMatchObject({ lastError: null, pullRequests: true, reviewer: expect.stringMatching(/^bob-/) });
    await world.postGithub(github, "pull_request", outsiders("opened", 5_100_002, 52));
    const next = await waitFor(() => itemOf(github.connectorId, "pr:5100002"), 2_000, "the next item");
    const item = await getIssue(owner, { identifier: next.identifier });
    expect(item).toMatchObject({ status: "review", triage: "pending" });
    expect(item.assignee).toMatchObject({ userId: world.org.agents.bob.userId });
  });
});
