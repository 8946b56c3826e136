import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { createTestDatabase, testDriver, type TestDatabase } from "../testing/db.ts";
import { startApp, tempDataDir, type AppProcess } from "../testing/app-process.ts";
import { cliPost, signUp } from "../testing/world.ts";
import { callError, callOk, connectClient } from "./testing.ts";

/**
 * Project scoping (decision 042) on the built app, over every door: an owner with projects SEE
 * and HID invites Mia scoped to SEE. Mia's agent key (and its session key) read HID's issue as
 * NOT_FOUND on every tool, are never handed it, and her Dash and CLI endpoints answer the same;
 * the owner, unscoped, sees everything; a scope change applies on the next request.
 */
let app: AppProcess;
let database: TestDatabase | null = null;
const clients: Client[] = [];
let owner: Awaited<ReturnType<typeof signUp>>;
let mia: Awaited<ReturnType<typeof signUp>>;
let orgId: string;
let see: { id: string; prefix: string };
let hid: { id: string; prefix: string };
let miaMemberId: string;
let ownerAgent: Client;
let miaAgent: Client;
/** HID's issue, and what the owner made on it, for aiming at. */
let hidden: { identifier: string; claimToken: string; commentId: string; attachmentId: string; other: string; title: string };
let visible: string;

const connect = async (key: string, name: string) => {
  const client = await connectClient(`${app.url}/mcp`, key, { name });
  clients.push(client);
  return client;
};
const post = (token: string, path: string, body: unknown) => cliPost(app.url, token, path, body);
const work = (title: string, extra: Record<string, unknown> = {}) => ({ title, work: true, changeType: "feat", noDependency: "independent", ...extra });

beforeAll(async () => {
  database = testDriver === "postgres" ? await createTestDatabase({ max: 2 }) : null;
  app = await startApp({ ...(database ? { DATABASE_URL: database.url! } : { RETASC_DATA_DIR: tempDataDir() }), RETASC_EMAIL_PASSWORD: "on" });
  owner = await signUp(app.url, "Olga");
  const org = await post(owner.token, "orgs", { name: "Scoped org" });
  orgId = org.orgId ?? org.id;
  const project = async (prefix: string) => {
    const made = await post(owner.token, "projects", { orgId, name: `${prefix} project`, prefix });
    return { id: (made.projectId ?? made.id) as string, prefix };
  };
  see = await project("SEE");
  hid = await project("HID");
  ownerAgent = await connect((await post(owner.token, "keys", { orgId, action: "mint" })).key, "owner");

  // HID's issues outrank SEE's, so a dispatch that ignored the scope would hand them out first.
  const secret = await callOk(ownerAgent, "save_issue", work("Hidden roadmap", { project: "HID", priority: 1 }));
  const other = await callOk(ownerAgent, "save_issue", work("Hidden second", { project: "HID", priority: 1 }));
  await callOk(ownerAgent, "save_issue", work("Hidden third", { project: "HID", priority: 1 }));
  await callOk(ownerAgent, "add_relation", { sourceId: secret.identifier, targetId: other.identifier, type: "related" });
  const comment = await callOk(ownerAgent, "save_comment", { issue: secret.identifier, body: "hidden note" });
  const attachment = await callOk(ownerAgent, "save_attachment", { issue: secret.identifier, url: "https://example.com/hidden" });
  const claim = await callOk(ownerAgent, "claim_issue", { identifier: secret.identifier });
  hidden = { identifier: secret.identifier, claimToken: claim.claimToken, commentId: comment.id, attachmentId: attachment.id, other: other.identifier, title: "Hidden roadmap" };
  visible = (await callOk(ownerAgent, "save_issue", work("Visible work", { project: "SEE", priority: 3 }))).identifier;

  const invite = await post(owner.token, "members", { orgId, action: "invite", projectIds: [see.id] });
  expect(invite.projectIds).toEqual([see.id]);
  mia = await signUp(app.url, "Mia");
  const joined = await post(mia.token, "join", { code: invite.code });
  expect(joined).toMatchObject({ role: "member", projectIds: [see.id] });
  expect(joined.projects.map((p: { prefix: string }) => p.prefix)).toEqual(["SEE"]);
  miaMemberId = joined.memberId;
  miaAgent = await connect((await post(mia.token, "keys", { orgId, action: "mint" })).key, "mia");
});
afterEach(({ task }) => {
  if (task.result?.state === "fail") process.stderr.write(`app output:\n${app?.output().slice(-8000)}\n`);
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => {})));
  await app?.stop();
  await database?.close();
});

/** Whatever names the hidden project or its issues. */
const hiddenMarks = () => [hid.id, "HID-", hidden.title, "Hidden second", "Hidden third", "hidden note"];

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
    { save_issue: work("x", { project: "HID" }) },
    { save_issue: { title: "x", work: true, changeType: "feat", blockedBy: [hidden.identifier] } },
    { save_issue: work("x", { parent: hidden.identifier }) },
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

  test("a key bound to a project outside the scope is refused", async () => {
    const reply = await fetch(`${app.url}/api/cli/keys`, {
      method: "POST",
      headers: { authorization: `Bearer ${mia.token}`, "content-type": "application/json" },
      body: JSON.stringify({ orgId, action: "mint", projectId: hid.id }),
    });
    expect(reply.status).toBe(404);
    expect((await reply.json()).error.code).toBe("NOT_FOUND");
  });

  test("the Dash and the CLI endpoints answer 404 for the other project's issue and list nothing of it", async () => {
    const asMia = (path: string) => fetch(`${app.url}${path}`, { headers: { cookie: mia.cookie, origin: app.url }, redirect: "manual" });
    for (const suffix of ["", ".data"]) expect((await asMia(`/dash/issues/${hidden.identifier}${suffix}`)).status).toBe(404);
    expect((await asMia(`/dash/issues/${visible}`)).status).toBe(200);
    for (const page of ["/dash", "/dash/queue", "/dash/queue?status=todo&status=doing&status=done"]) {
      const reply = await asMia(page);
      expect(reply.status, page).toBe(200);
      const text = await reply.text();
      for (const mark of hiddenMarks()) expect(text, `${page} shows ${mark}`).not.toContain(mark);
    }
    const cli = (path: string) => fetch(`${app.url}/api/cli/${path}`, { headers: { authorization: `Bearer ${mia.token}` } });
    const projects = await (await cli(`projects?orgId=${orgId}`)).json();
    expect(projects.projects.map((p: { prefix: string }) => p.prefix)).toEqual(["SEE"]);
    // Export is the owner's (a member is refused whatever their scope); the triage list holds nothing of HID.
    expect((await cli(`export?orgId=${orgId}`)).status).toBe(403);
    expect(JSON.stringify(await (await cli(`triage?orgId=${orgId}`)).json())).not.toContain("HID-");
  });

  test("a scope change applies on the next request; owners and admins cannot be scoped", async () => {
    const scope = (projectIds: string[] | null) => post(owner.token, "members", { orgId, action: "scope", memberId: miaMemberId, projectIds });
    expect(await scope(null)).toEqual({ memberId: miaMemberId, projectIds: null });
    expect(await callOk(miaAgent, "get_issue", { identifier: hidden.identifier })).toMatchObject({ title: hidden.title });
    expect(await scope([see.id])).toEqual({ memberId: miaMemberId, projectIds: [see.id] });
    expect((await callError(miaAgent, "get_issue", { identifier: hidden.identifier })).code).toBe("NOT_FOUND");

    const ownerMember = (await callOk(ownerAgent, "list_members")).members.find((m: { kind: string; role?: string }) => m.kind === "human" && m.role === "owner");
    const refused = await fetch(`${app.url}/api/cli/members`, {
      method: "POST",
      headers: { authorization: `Bearer ${owner.token}`, "content-type": "application/json" },
      body: JSON.stringify({ orgId, action: "scope", memberId: ownerMember.memberId, projectIds: [see.id] }),
    });
    expect(refused.status).toBe(400);
    expect((await refused.json()).error.message).toMatch(/cannot be scoped/);
    // The Dash's Members page sets it too.
    const form = new URLSearchParams({ intent: "scope", memberId: miaMemberId });
    form.append("projectIds", see.id);
    form.append("projectIds", hid.id);
    const dash = await fetch(`${app.url}/dash/settings/members.data`, { method: "POST", headers: { cookie: owner.cookie, origin: app.url }, body: form });
    expect(await dash.text()).toMatch(/Scope changed/);
    expect(await callOk(miaAgent, "get_issue", { identifier: hidden.identifier })).toMatchObject({ title: hidden.title });
    await scope([see.id]);
  });

  test("an issue of theirs related to the other project's issues shows none of them, on every door, and still waits on its hidden blocker", async () => {
    const hid = (title: string, extra: Record<string, unknown> = {}) => callOk(ownerAgent, "save_issue", work(title, { project: "HID", ...extra }));
    const epic = await callOk(ownerAgent, "save_issue", { title: "Hidden epic", project: "HID", work: false, changeType: "feat", noDependency: "a container" });
    const blocker = await hid("Hidden blocker");
    const gated = await hid("Hidden gated", { priority: 1 });
    const relatedTo = await hid("Hidden related");
    const duplicate = await hid("Hidden duplicate");
    // Made by the unscoped owner across the two projects.
    const linked = (await callOk(ownerAgent, "save_issue", work("Linked work", { project: "SEE", priority: 4, parent: epic.identifier }))).identifier;
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

  test("the owner, unscoped, sees every project", async () => {
    expect((await callOk(ownerAgent, "list_projects")).projects.map((p: { prefix: string }) => p.prefix)).toEqual(["HID", "SEE"]);
    const listed = await callOk(ownerAgent, "list_issues", { status: ["todo", "doing", "review"] });
    expect(listed.issues.map((i: { identifier: string }) => i.identifier)).toContain(hidden.identifier);
  });
});
