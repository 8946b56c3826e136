import { expect, it } from "vitest";
import type { Ctx } from "../context.ts";
import { humanCtx } from "../orgs/access.ts";
import { claimIssue } from "../queue/index.ts";
import { useTestServices } from "../testing/database.ts";
import { seedOrg, type SeededOrg } from "../testing/fixtures.ts";
import { saveIssue } from "./index.ts";

/**
 * Who accepts a review (decision 073): an agent under its claim of the review, or a person on the
 * Dash who is its reviewer or runs the org, without one. Never the person who submitted it.
 */
const env = useTestServices();

async function dashAs(org: SeededOrg, who: "alice" | "bob" | "carol"): Promise<Ctx> {
  return (await humanCtx(env.services, { orgId: org.orgId, userId: org.agents[who].userId, runtime: "dash" })).ctx;
}

/** An issue bob's agent built and handed to `reviewer` for review. */
async function inReview(org: SeededOrg, title: string, reviewer: "alice" | "carol"): Promise<string> {
  const bob = org.agents.bob.ctx;
  const issue = await saveIssue(bob, { title, work: true, changeType: "feat", noDependency: "alone" });
  const claim = await claimIssue(bob, { identifier: issue.identifier });
  await saveIssue(bob, { identifier: issue.identifier, claimToken: claim.claimToken, status: "review", assignee: org.agents[reviewer].userId, handoff: `${title} on its branch` });
  return issue.identifier;
}

it("a person on the Dash accepts an unheld review as its reviewer or as an owner; another member, the submitter and agents need the claim", async () => {
  const org = await seedOrg(env.services, { prefix: "ACPT" });
  const first = await inReview(org, "Parse the invoice", "carol");
  const done = { identifier: first, status: "done" as const };
  // bob submitted it: not his to accept, on the Dash or by his agent.
  await expect(saveIssue(await dashAs(org, "bob"), done)).rejects.toMatchObject({ code: "SELF_REVIEW" });
  // carol's agent has not claimed it.
  await expect(saveIssue(org.agents.carol.ctx, done)).rejects.toMatchObject({ code: "CLAIM_REQUIRED" });
  // carol, its reviewer, on the Dash.
  expect(await saveIssue(await dashAs(org, "carol"), done)).toMatchObject({ status: "done" });

  const second = await inReview(org, "Render the invoice", "alice");
  const bobAsMember = await inReview(org, "Mail the invoice", "alice");
  // carol is a member and not its reviewer: her claim is the way.
  await expect(saveIssue(await dashAs(org, "carol"), { identifier: bobAsMember, status: "done" })).rejects.toMatchObject({ code: "CLAIM_REQUIRED" });
  // alice owns the org (and is the reviewer here): accepted.
  expect(await saveIssue(await dashAs(org, "alice"), { identifier: second, status: "done" })).toMatchObject({ status: "done" });
});
