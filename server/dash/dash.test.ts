import { describe, expect, it } from "vitest";
import { saveComment } from "../issues/comments.ts";
import { checkpoint, claimIssue, heartbeat } from "../queue/index.ts";
import { forceRelease } from "../queue/force-release.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { fleetSnapshot } from "./fleet.ts";
import { issueDetail } from "./issue.ts";
import { queuePage } from "./queue.ts";
import { create, useDashServices } from "./testing.ts";

const { env, dashAs } = useDashServices();

describe("issue drill-down", () => {
  it("shows the activity log with principal, runtime and key, checkpoints, comments and a sanitized body", async () => {
    const org = await seedOrg(env.services, { prefix: "DRL" });
    await create(org.agents.alice.ctx, "Harden the login", { body: "Do **this**.\n\n<script>alert(1)</script>\n\n[x](javascript:alert(1))" });
    const claim = await claimIssue(org.agents.bob.ctx, { identifier: "DRL-1" });
    await heartbeat(org.agents.bob.ctx, { identifier: "DRL-1", claimToken: claim.claimToken });
    await checkpoint(org.agents.bob.ctx, { identifier: "DRL-1", claimToken: claim.claimToken, done: "audit", gotchas: "cookies" });
    const dash = await dashAs(org, "alice");
    await saveComment(dash, { issue: "DRL-1", body: "Looks good so far" });
    const detail = await issueDetail(dash, { identifier: "drl-1" });
    expect(detail.bodyHtml).toContain("<strong>this</strong>");
    // Raw HTML shows as text and a script URL stays text, never a link.
    expect(detail.bodyHtml).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(detail.bodyHtml).not.toMatch(/<script|href="javascript:/);
    expect(detail.activity.map((e) => [e.kind, e.runtime, e.keyPrefix])).toEqual([
      ["commented", "dash", null],
      ["checkpoint", "codex", org.agents.bob.key.slice(0, 12)],
      ["heartbeat", "codex", org.agents.bob.key.slice(0, 12)],
      ["claimed", "codex", org.agents.bob.key.slice(0, 12)],
      ["created", "claude-code", org.agents.alice.key.slice(0, 12)],
    ]);
    expect(detail.activity[1]!.who).toMatch(/^bob-.*@example\.com$/);
    expect(detail.activity[1]).toMatchObject({ label: "checkpoint", text: "saved by codex, fence 1 · done: audit · gotchas: cookies" });
    expect(detail.activity[3]!.text).toMatch(/^claimed by codex, lease to \d\d:\d\d UTC, fence 1$/);
    expect(detail.checkpoints).toMatchObject([{ runtime: "codex", done: "audit", gotchas: "cookies" }]);
    expect(detail.comments).toMatchObject([{ body: "Looks good so far", bodyHtml: "<p>Looks good so far</p>\n", runtime: "dash" }]);
    expect(detail.comments[0]!.author).toMatch(/^alice-/);
  });

  it("refuses another org's issue as NOT_FOUND", async () => {
    const org = await seedOrg(env.services, { prefix: "TEN" });
    const other = await seedOrg(env.services, { prefix: "TEN" });
    await create(other.agents.alice.ctx, "secret");
    await expect(issueDetail(await dashAs(org, "alice"), { identifier: "TEN-1" })).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(queuePage(await dashAs(org, "alice"), {}).then((p) => p.total)).resolves.toBe(0);
  });

  it("draws blockers above, gated work below and marks the critical chain", async () => {
    const org = await seedOrg(env.services, { prefix: "GRA" });
    const a = org.agents.alice.ctx;
    const root = await create(a, "root"); // GRA-1
    const side = await create(a, "side"); // GRA-2
    const mid = await create(a, "mid", { blockedBy: [root.identifier], noDependency: undefined }); // GRA-3
    const center = await create(a, "center", { blockedBy: [mid.identifier, side.identifier], noDependency: undefined }); // GRA-4
    await create(a, "urgent goal", { priority: 1, blockedBy: [center.identifier], noDependency: undefined }); // GRA-5
    await create(a, "low goal", { priority: 4, blockedBy: [center.identifier], noDependency: undefined }); // GRA-6
    const detail = await issueDetail(await dashAs(org, "alice"), { identifier: center.identifier });
    expect(detail.graph.nodes.map((n) => n.identifier).sort()).toEqual(["GRA-1", "GRA-2", "GRA-3", "GRA-4", "GRA-5", "GRA-6"]);
    // Laid out top to bottom: each blocker above what it gates.
    const y = (id: string) => detail.graph.layout.nodes[id]!.y;
    for (const e of detail.graph.edges) expect(y(e.from), `${e.from} above ${e.to}`).toBeLessThan(y(e.to));
    expect(y("GRA-1")).toBeLessThan(y("GRA-3"));
    expect(detail.graph.nodes.filter((n) => n.critical).map((n) => n.identifier).sort()).toEqual(["GRA-1", "GRA-3", "GRA-4", "GRA-5"]);
    expect(detail.graph.edges.filter((e) => e.critical).map((e) => `${e.from}>${e.to}`).sort()).toEqual([
      "GRA-1>GRA-3",
      "GRA-3>GRA-4",
      "GRA-4>GRA-5",
    ]);
    expect(detail.why.inheritedFrom).toEqual({ identifier: "GRA-5", raisedByDeadline: null });
  });
});

describe("forceRelease", () => {
  it("lets an owner or admin take back a stuck claim, never a member", async () => {
    const org = await seedOrg(env.services, { prefix: "FRC" });
    await create(org.agents.alice.ctx, "stuck");
    const claim = await claimIssue(org.agents.bob.ctx, { identifier: "FRC-1" });
    await expect(forceRelease(await dashAs(org, "carol"), { identifier: "FRC-1", reason: "stuck" })).rejects.toMatchObject({
      code: "FORBIDDEN",
    });
    await expect(forceRelease(await dashAs(org, "alice"), { identifier: "FRC-1", reason: "" })).rejects.toThrow();
    const released = await forceRelease(await dashAs(org, "alice"), { identifier: "FRC-1", reason: "agent hung on a prompt" });
    expect(released).toMatchObject({ identifier: "FRC-1", released: true });
    await expect(heartbeat(org.agents.bob.ctx, { identifier: "FRC-1", claimToken: claim.claimToken })).rejects.toMatchObject({
      code: "STALE_CLAIM",
    });
    await expect(forceRelease(await dashAs(org, "alice"), { identifier: "FRC-1", reason: "again" })).rejects.toMatchObject({
      code: "CONFLICT",
    });
    const detail = await issueDetail(await dashAs(org, "alice"), { identifier: "FRC-1" });
    expect(detail.activity[0]).toMatchObject({ kind: "force_released", runtime: "dash" });
    expect(detail.activity[0]).toMatchObject({ label: "taken back", text: "claim of codex taken back by dash, fence 1: agent hung on a prompt" });
    const fleet = await fleetSnapshot(await dashAs(org, "alice"));
    expect(fleet.moves[0]).toMatchObject({ kind: "force_released", fromRuntime: "codex", runtime: "dash" });
    const again = await claimIssue(org.agents.carol.ctx, { identifier: "FRC-1" });
    expect(again.fence).toBe(2);
  });
});
