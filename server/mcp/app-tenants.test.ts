import { describe, expect, test } from "vitest";
import { tools as registeredTools } from "./registry.ts";
import { callError, callOk, newIssue, useSeededApp } from "./testing.ts";

/**
 * Tenant isolation on the built app, driven by the official SDK client over Streamable HTTP:
 * a key of one org aims every tool at another org's things: each is refused NOT_FOUND or answers
 * without a trace of them, and nothing of theirs changes.
 */
const { seeded, client } = useSeededApp(["ISO", "OTH"]);

describe("tenant isolation", () => {
  test("a key of one org gets NOT_FOUND for every tool addressing another org's issues, projects, members and connectors", async () => {
    const victim = seeded.orgs.OTH!;
    const owner = await client("OTH", "alice");
    const intruder = await client("ISO", "alice");
    const target = await callOk(owner, "save_issue", newIssue("Secret roadmap", { body: "do not leak" }));
    const second = await callOk(owner, "save_issue", newIssue("Second secret"));
    await callOk(owner, "add_relation", { sourceId: target.identifier, targetId: second.identifier, type: "related" });
    const comment = await callOk(owner, "save_comment", { issue: target.identifier, body: "private note" });
    const attachment = await callOk(owner, "save_attachment", { issue: target.identifier, url: "https://example.com/secret" });
    const claim = await callOk(owner, "claim_issue", { identifier: target.identifier });
    const { members } = await callOk(owner, "list_members");
    const bobPerson = members.find((m: { kind: string; userId: string }) => m.kind === "human" && m.userId === victim.people.bob.userId);
    const bobAgent = members.find((m: { kind: string; userId: string }) => m.kind === "agent" && m.userId === victim.people.bob.userId);
    const mine = await callOk(intruder, "save_issue", newIssue("Intruder's own issue"));
    const victimInvite = await callOk(owner, "invite_member", { email: `bob-${victim.orgId}@example.com`, decided: true });

    const issue = target.identifier as string;
    const addressed: Record<string, Record<string, unknown>> = {
      claim_issue: { identifier: issue },
      check_claim: { identifier: issue },
      heartbeat: { identifier: issue, claimToken: claim.claimToken },
      checkpoint: { identifier: issue, claimToken: claim.claimToken, note: "x" },
      release_issue: { identifier: issue, claimToken: claim.claimToken },
      save_issue: { identifier: issue, title: "pwned" },
      get_issue: { identifier: issue },
      add_relation: { sourceId: mine.identifier, targetId: issue, type: "blocks" },
      remove_relation: { sourceId: target.identifier, targetId: second.identifier, type: "related" },
      save_comment: { issue, body: "hello" },
      list_comments: { issue },
      retract_comment: { comment: comment.id, note: "x" },
      save_attachment: { issue, url: "https://example.com/x" },
      list_attachments: { issue },
      get_attachment: { attachment: attachment.id },
      obsolete_attachment: { attachment: attachment.id, reason: "x" },
      save_attachment_file: { issue, filename: "x.txt", contentBase64: Buffer.from("x").toString("base64") },
      get_attachment_file: { attachment: attachment.id },
      suspend_member: { memberId: bobPerson.memberId },
      reactivate_member: { memberId: bobPerson.memberId },
      retire_member: { memberId: bobAgent.memberId },
      revoke_connector: { connectorId: victim.connectorId },
      get_project: { prefix: victim.prefix },
      analytics_overview: { project: victim.prefix },
      // No org here has imported anyone: claiming by email finds nothing of the intruder's own, and an id
      // is looked up in the caller's org only (a placeholder of another org: workers/linear-import.test.ts).
      claim_ghost: {},
      invite_member: { projectIds: [victim.projectId], decided: true },
      revoke_invite: { inviteId: victimInvite.inviteId },
      accept_invite: { inviteId: victimInvite.inviteId },
      // The org's latest import: the intruder's org has none, and another org's is not it.
      latest_import: {},
    };
    // Tools that address nothing by id: their answers must simply not mention the other org.
    const unaddressed: Record<string, Record<string, unknown>> = {
      whoami: {},
      setup_status: {},
      mint_session_key: {},
      next_issue: { allLanes: true },
      next_batch: { allLanes: true },
      list_issues: { status: ["todo", "doing", "review", "done"] },
      save_label: { name: "intruder" },
      list_labels: {},
      list_members: { includeRetired: true },
      list_connectors: {},
      queue_status: {},
      list_projects: {},
      usage_summary: {},
      billing_summary: {},
      list_invites: {},
      analytics_issues: { figure: "created", days: 90 },
      list_claimable_ghosts: {},
      dismiss_ghost_prompt: {},
      list_import_sources: {},
      import_history: {},
    };
    // run_import reads another tracker (no network here); the org it lands in and the runs it shows are
    // the caller's own, which server/mcp/imports.test.ts checks with a second org.
    const elsewhere = ["run_import"];
    expect([...Object.keys(addressed), ...Object.keys(unaddressed), ...elsewhere].sort()).toEqual(registeredTools.map((t) => t.name).sort());

    for (const [name, args] of Object.entries(addressed)) {
      const error = await callError(intruder, name, args);
      expect(error.code, `${name}: ${error.message}`).toBe("NOT_FOUND");
    }
    const foreignMarkers = [victim.orgId, victim.projectId, victim.connectorId, victim.people.bob.userId, issue, "Secret roadmap", "private note", victimInvite.inviteId];
    for (const [name, args] of Object.entries(unaddressed)) {
      const result = await intruder.callTool({ name, arguments: args });
      expect(result.isError, `${name}: ${JSON.stringify(result.structuredContent)}`).toBeFalsy();
      const text = JSON.stringify(result.structuredContent);
      for (const marker of foreignMarkers) expect(text, `${name} leaked ${marker}`).not.toContain(marker);
    }

    // Nothing of the victim's changed.
    const after = await callOk(owner, "get_issue", { identifier: issue });
    expect(after).toMatchObject({ title: "Secret roadmap", related: [second.identifier] });
    expect(after.lease.fence).toBe(claim.fence);
    expect((await callOk(owner, "list_comments", { issue })).comments).toHaveLength(1);
    expect((await callOk(owner, "list_connectors")).connectors[0].status).toBe("active");
  });
});
