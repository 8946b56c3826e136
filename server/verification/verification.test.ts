import { describe, expect, it } from "vitest";
import { bootstrap, mintKey } from "../admin/commands.ts";
import { getIssue, saveIssue } from "../issues/index.ts";
import { humanCtx } from "../orgs/access.ts";
import { claimIssue } from "../queue/index.ts";
import { TestClock } from "../testing/db.ts";
import { useTestServices } from "../testing/database.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { setVerification, setVerificationCommand } from "./settings.ts";
import { verdictOf } from "./verdict.ts";

const clock = new TestClock();
const env = useTestServices({ clock });
const MINUTE = 60_000;

describe("what reports add up to", () => {
  const latest = (entries: [string, "success" | "failure" | "pending"][]) => new Map(entries);
  it("with required checks: any red fails, all green passes, a missing or running one waits; others do not count", () => {
    expect(verdictOf(latest([["test", "success"]]), ["test", "lint"])).toBeNull();
    expect(verdictOf(latest([["test", "success"], ["lint", "pending"]]), ["test", "lint"])).toBeNull();
    expect(verdictOf(latest([["test", "success"], ["lint", "success"], ["deploy", "failure"]]), ["test", "lint"])).toBe("passed");
    expect(verdictOf(latest([["test", "failure"], ["lint", "success"]]), ["test", "lint"])).toBe("failed");
  });
  it("with none named: every check reported must be green; one running waits; nothing reported waits", () => {
    expect(verdictOf(latest([]), [])).toBeNull();
    expect(verdictOf(latest([["a", "success"], ["b", "pending"]]), [])).toBeNull();
    expect(verdictOf(latest([["a", "success"], ["b", "success"]]), [])).toBe("passed");
    expect(verdictOf(latest([["a", "success"], ["b", "failure"]]), [])).toBe("failed");
  });
});

describe("a pending finish", () => {
  it("reads stale past the project's window, and off mode takes a plain finish as before", async () => {
    const org = await seedOrg(env.services, { prefix: "STL" });
    const alice = (await humanCtx(env.services, { orgId: org.orgId, userId: org.agents.alice.userId, runtime: "dash" })).ctx;
    const agent = org.agents.bob.ctx;
    const plain = await saveIssue(agent, { title: "off mode", work: true, changeType: "feat", noDependency: "a test" });
    const held = await claimIssue(agent, { identifier: plain.identifier });
    expect(await saveIssue(agent, { identifier: plain.identifier, claimToken: held.claimToken, status: "done" })).not.toHaveProperty("verification");

    await setVerification(alice, { projectId: org.projectId, mode: "ci", windowMinutes: 30 });
    const issue = await saveIssue(agent, { title: "ci mode", work: true, changeType: "feat", noDependency: "a test" });
    const claim = await claimIssue(agent, { identifier: issue.identifier });
    await saveIssue(agent, { identifier: issue.identifier, claimToken: claim.claimToken, status: "done", evidence: { pr: 12 } });
    clock.advance(29 * MINUTE);
    expect(await getIssue(agent, { identifier: issue.identifier })).toMatchObject({ verification: "pending", evidence: { commit: null, branch: null, pr: "12" } });
    clock.advance(2 * MINUTE);
    expect((await getIssue(agent, { identifier: issue.identifier })).verification).toBe("stale");
  });
});

describe("the settings", () => {
  it("are an owner's or admin's to change, through any door; the operator's command acts as the system", async () => {
    const org = await seedOrg(env.services, { prefix: "SET" });
    const bob = (await humanCtx(env.services, { orgId: org.orgId, userId: org.agents.bob.userId, runtime: "dash" })).ctx;
    await expect(setVerification(bob, { projectId: org.projectId, mode: "ci" })).rejects.toMatchObject({ code: "FORBIDDEN" });
    await expect(setVerification(org.agents.bob.ctx, { projectId: org.projectId, mode: "ci" })).rejects.toMatchObject({ code: "FORBIDDEN" });
    const set = await setVerificationCommand(env.services, { project: org.projectId, mode: "ci", checks: "test, lint", "window-minutes": "90" });
    expect(set).toEqual({ projectId: org.projectId, prefix: "SET", mode: "ci", checks: ["test", "lint"], windowMinutes: 90, stallMinutes: 45, quarantineAfter: 3, releaseStalled: false });
    // Releasing stalled claims is chosen, and unchosen, with its flag; left out, it stays as it was (decision 062).
    expect(await setVerificationCommand(env.services, { project: org.projectId, mode: "ci", "release-stalled": true })).toMatchObject({ releaseStalled: true, windowMinutes: 90 });
    expect(await setVerificationCommand(env.services, { project: org.projectId, mode: "ci" })).toMatchObject({ releaseStalled: true });
    expect(await setVerificationCommand(env.services, { project: org.projectId, mode: "ci", "no-release-stalled": true })).toMatchObject({ releaseStalled: false });
    await expect(setVerificationCommand(env.services, { project: org.projectId, mode: "ci", "release-stalled": true, "no-release-stalled": true })).rejects.toMatchObject({ code: "INVALID_INPUT" });
    await expect(setVerificationCommand(env.services, { project: org.projectId, mode: "sometimes" })).rejects.toThrow();
  });

  it("a CI key is minted only for a project", async () => {
    const { orgId, projectId } = await bootstrap(env.services, { org: "Keys", project: "Web", prefix: "KEY", email: "owner@keys.example" });
    const ci = await mintKey(env.services, { org: orgId, email: "ci@keys.example", runtime: "ci", project: projectId, ci: true });
    expect(ci).toMatchObject({ ci: true, projectId, key: expect.stringMatching(/^rtci_/) });
  });
});
