import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { beforeAll, describe, expect, test } from "vitest";
import { callError, callOk, newIssue } from "./testing.ts";
import { useScopedOrg, type ScopedOrg } from "./testing/scoped-org.ts";

/**
 * Project scoping (decision 042) over /mcp (server/mcp/testing/scoped-org.ts): Mia's agent key
 * (and its session key) read HID's issue as NOT_FOUND on every tool and are never handed it, and
 * an issue of hers shows nothing of HID's issues it is related to, on every door.
 */
const { org, connect, hiddenMarks } = useScopedOrg();
let { app, mia, hid, miaMemberId, ownerAgent, miaAgent, hidden, visible, see } = {} as ScopedOrg;
beforeAll(() => ({ app, mia, hid, miaMemberId, ownerAgent, miaAgent, hidden, visible, see } = org));

/** Every tool tools/list shows, with arguments aimed at the hidden issue (or nothing, for tools that address none). */
async function walkEveryTool(agent: Client) {
  const addressed: Record<string, Record<string, unknown>> = {
    claim_issue: { identifier: hidden.identifier },
    check_claim: { identifier: hidden.identifier },
    heartbeat: { identifier: hidden.identifier, claimToken: hidden.claimToken },
    checkpoint: { identifier: hidden.identifier, claimToken: hidden.claimToken, note: "x" },
    release_issue: { identifier: hidden.identifier, claimToken: hidden.claimToken },
    save_issue: { identifier: hidden.identifier, title: "pwned" },
    get_issue: { identifier: hidden.identifier },
    add_relation: { sourceId: visible, targetId: hidden.identifier, type: "blocks" },
    remove_relation: { sourceId: hidden.identifier, targetId: hidden.other, type: "related" },
    save_comment: { issue: hidden.identifier, body: "hello" },
    list_comments: { issue: hidden.identifier },
    retract_comment: { comment: hidden.commentId, note: "x" },
    save_attachment: { issue: hidden.identifier, url: "https://example.com/x" },
    list_attachments: { issue: hidden.identifier },
    get_attachment: { attachment: hidden.attachmentId },
    obsolete_attachment: { attachment: hidden.attachmentId, reason: "x" },
    save_attachment_file: { issue: hidden.identifier, filename: "x.txt", contentBase64: Buffer.from("x").toString("base64") },
    get_attachment_file: { attachment: hidden.attachmentId },
    get_project: { prefix: "HID" },
    analytics_overview: { project: "HID" },
  };
  // Filing under the hidden project, or a child of the hidden issue, is as unknown as reading it.
  const filed: Record<string, Record<string, unknown>>[] = [
    { save_issue: newIssue("x", { project: "HID" }) },
    { save_issue: { title: "x", work: true, changeType: "feat", blockedBy: [hidden.identifier] } },
    { save_issue: newIssue("x", { parent: hidden.identifier }) },
    { list_issues: { project: "HID" } },
    // Finishing with the hidden claim's live token (the one-statement finish path) is as unknown too.
    { save_issue: { identifier: hidden.identifier, claimToken: hidden.claimToken, status: "done" } },
  ];
  const unaddressed: Record<string, Record<string, unknown>> = {
    whoami: {},
    setup_status: {},
    mint_session_key: {},
    next_batch: { allLanes: true, n: 25 },
    next_issue: { allLanes: true },
    list_issues: { status: ["todo", "doing", "review", "done"] },
    save_label: { name: "scoped" },
    list_labels: {},
    list_members: { includeRetired: true },
    list_connectors: {},
    queue_status: {},
    list_projects: {},
    usage_summary: {},
    billing_summary: {},
    analytics_issues: { figure: "created", days: 90 },
  };
  // Tools about people and connectors, which belong to no project: refused to a member anyway, or nothing to claim.
  const unrelated: Record<string, Record<string, unknown>> = {
    claim_ghost: {},
    list_claimable_ghosts: {},
    dismiss_ghost_prompt: {},
    revoke_connector: { connectorId: "none" },
    suspend_member: { memberId: "none" },
    reactivate_member: { memberId: "none" },
    retire_member: { memberId: "none" },
    invite_member: { email: "x@example.com", projectIds: [hid.id], decided: true },
    list_invites: {},
    revoke_invite: { inviteId: "none" },
    accept_invite: { inviteId: "none" },
    // Imports are the org's: refused to a member before the source is reached.
    list_import_sources: {},
    run_import: { source: "linear", token: "lin_api_not_sent" },
    latest_import: {},
    import_history: {},
  };
  // A tool added later must be placed in one of the lists, or this fails.
  const { tools } = await agent.listTools();
  expect(tools.map((t) => t.name).sort()).toEqual([...new Set([...Object.keys(addressed), ...Object.keys(unaddressed), ...Object.keys(unrelated)])].sort());

  for (const [name, args] of [...Object.entries(addressed), ...filed.flatMap((f) => Object.entries(f))]) {
    const error = await callError(agent, name, args);
    expect(error.code, `${name} ${JSON.stringify(args)}: ${error.message}`).toBe("NOT_FOUND");
    for (const mark of [hidden.title, "hidden note"]) expect(JSON.stringify(error), `${name} leaked ${mark}`).not.toContain(mark);
  }
  const handed: string[] = [];
  for (const [name, args] of [...Object.entries(unaddressed), ...Object.entries(unrelated)]) {
    const result = await agent.callTool({ name, arguments: args });
    const text = JSON.stringify(result.structuredContent);
    if (name in unaddressed) expect(result.isError, `${name}: ${text}`).toBeFalsy();
    if (name === "next_issue" || name === "next_batch") handed.push(text);
    for (const mark of hiddenMarks()) expect(text, `${name} revealed ${mark}`).not.toContain(mark);
  }
  return handed;
}

describe("a member scoped to one project", () => {
  test("their agent's key reads the other project's issue as NOT_FOUND on every tool, and is handed only its own project's work", async () => {
    const handed = await walkEveryTool(miaAgent);
    // next_batch showed and next_issue claimed the visible issue, though the hidden ones rank higher.
    expect(handed).toHaveLength(2);
    for (const reply of handed) expect(reply).toContain(visible);
    // The owner's view is unchanged: the hidden issue kept its title, comment and lease.
    const after = await callOk(ownerAgent, "get_issue", { identifier: hidden.identifier });
    expect(after).toMatchObject({ title: hidden.title, related: [hidden.other] });
    expect(after.lease.fence).toBe(1);
    expect((await callOk(ownerAgent, "list_comments", { issue: hidden.identifier })).comments).toHaveLength(1);
    expect((await callOk(ownerAgent, "list_members")).members.find((m: { memberId: string }) => m.memberId === miaMemberId).projectIds).toEqual([see.id]);
  });

  test("a session key minted by the scoped agent inherits the scope", async () => {
    const session = await callOk(miaAgent, "mint_session_key");
    const sessionAgent = await connect(session.key, "mia-session");
    expect((await callError(sessionAgent, "get_issue", { identifier: hidden.identifier })).code).toBe("NOT_FOUND");
    expect((await callOk(sessionAgent, "list_projects")).projects.map((p: { prefix: string }) => p.prefix)).toEqual(["SEE"]);
  });

  test("an issue of theirs related to the other project's issues shows none of them, on every door, and still waits on its hidden blocker", async () => {
    const hid = (title: string, extra: Record<string, unknown> = {}) => callOk(ownerAgent, "save_issue", newIssue(title, { project: "HID", ...extra }));
    const epic = await callOk(ownerAgent, "save_issue", { title: "Hidden epic", project: "HID", work: false, changeType: "feat", noDependency: "a container" });
    const blocker = await hid("Hidden blocker");
    const gated = await hid("Hidden gated", { priority: 1 });
    const relatedTo = await hid("Hidden related");
    const duplicate = await hid("Hidden duplicate");
    // Made by the unscoped owner across the two projects.
    const linked = (await callOk(ownerAgent, "save_issue", newIssue("Linked work", { project: "SEE", priority: 4, parent: epic.identifier }))).identifier;
    const container = (await callOk(ownerAgent, "save_issue", { title: "Linked epic", project: "SEE", work: false, changeType: "feat", noDependency: "a container" })).identifier;
    await hid("Hidden child", { parent: container });
    const waiting = (await callOk(ownerAgent, "save_issue", { title: "Waiting work", work: true, changeType: "feat", project: "SEE", blockedBy: [blocker.identifier] })).identifier;
    await callOk(ownerAgent, "add_relation", { sourceId: linked, targetId: relatedTo.identifier, type: "related" });
    await callOk(ownerAgent, "add_relation", { sourceId: linked, targetId: duplicate.identifier, type: "duplicate" });
    await callOk(ownerAgent, "add_relation", { sourceId: linked, targetId: gated.identifier, type: "blocks" });
    const marks = ["HID-", "Hidden "];
    const shows = (where: string, reply: unknown) => {
      const text = typeof reply === "string" ? reply : JSON.stringify(reply);
      for (const mark of marks) {
        const at = text.indexOf(mark);
        expect(at === -1 ? null : text.slice(Math.max(0, at - 120), at + 60), `${where} shows ${mark}`).toBeNull();
      }
    };
    // The owner sees every relation.
    expect(await callOk(ownerAgent, "get_issue", { identifier: linked })).toMatchObject({
      parent: epic.identifier,
      related: [relatedTo.identifier],
      duplicates: [duplicate.identifier],
      blocks: [{ identifier: gated.identifier }],
    });

    const linkedView = await callOk(miaAgent, "get_issue", { identifier: linked });
    shows("get_issue", linkedView);
    expect(linkedView).toMatchObject({ parent: null, related: [], duplicates: [], blocks: [], blockedBy: [], openBlockers: [] });
    const containerView = await callOk(miaAgent, "get_issue", { identifier: container });
    shows("get_issue of the container", containerView);
    expect(containerView.children).toEqual([]);
    const waitingView = await callOk(miaAgent, "get_issue", { identifier: waiting });
    shows("get_issue of the blocked issue", waitingView);
    expect(waitingView).toMatchObject({ blockedBy: [], openBlockers: [], blockedOutsideScope: "waits on 1 open issue outside your projects" });
    const blocked = await callError(miaAgent, "claim_issue", { identifier: waiting });
    shows("the BLOCKED refusal", blocked);
    expect(blocked.code).toBe("BLOCKED");
    expect(blocked.message).toMatch(/1 issue outside your projects/);
    shows("list_issues", await callOk(miaAgent, "list_issues", { status: ["todo", "doing", "review", "done"] }));
    shows("queue_status", await callOk(miaAgent, "queue_status"));
    const next = await callOk(miaAgent, "next_issue", { allLanes: true });
    expect(next.identifier).toBe(linked);
    shows("next_issue's claim", next);
    const again = await callOk(miaAgent, "claim_issue", { identifier: linked });
    shows("claim_issue's reply", again);

    const asMia = (path: string) => fetch(`${app.url}${path}`, { headers: { cookie: mia.cookie, origin: app.url }, redirect: "manual" });
    for (const page of [`/dash/issues/${linked}`, `/dash/issues/${container}`, `/dash/issues/${waiting}`, "/dash", "/dash/queue"]) {
      const reply = await asMia(page);
      expect(reply.status, page).toBe(200);
      const text = await reply.text();
      shows(page, text);
      // What it waits on is said, not named; the urgency it carries likewise.
      if (page.endsWith(waiting)) expect(text).toContain("waits on 1 open issue outside your projects");
      if (page.endsWith(linked)) expect(text).toMatch(/from <span>an issue outside your projects<\/span>/);
    }
  });
});
