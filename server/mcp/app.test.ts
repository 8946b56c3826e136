import fs from "node:fs";
import path from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { tools as registeredTools } from "./registry.ts";
import { callError, callOk, connectClient, startSeededApp, type SeededApp } from "./testing.ts";

/**
 * The built app as a real HTTP server, driven by the official SDK client over Streamable
 * HTTP: the must-show behaviours of the MCP surface.
 */
const designTools = [
  "whoami", "mint_session_key",
  "next_issue", "next_batch", "claim_issue", "check_claim", "heartbeat", "checkpoint", "release_issue",
  "save_issue", "get_issue", "list_issues",
  "add_relation", "remove_relation",
  "save_comment", "list_comments", "retract_comment", "save_label", "list_labels",
  "save_attachment", "list_attachments", "get_attachment", "obsolete_attachment",
  "save_attachment_file", "get_attachment_file",
  "list_members", "suspend_member", "reactivate_member", "retire_member", "list_claimable_ghosts", "claim_ghost", "dismiss_ghost_prompt", "list_connectors", "revoke_connector",
  "setup_status", "invite_member", "list_invites", "revoke_invite", "accept_invite",
  "queue_status", "get_project", "list_projects", "usage_summary", "billing_summary",
  "analytics_overview", "analytics_issues",
  "list_import_sources", "run_import", "latest_import", "import_history",
];

let seeded: SeededApp;
const clients: Client[] = [];

async function client(prefix: string, who: "alice" | "bob" | "carol"): Promise<Client> {
  const c = await connectClient(seeded.endpoint, seeded.orgs[prefix]!.people[who].key, { name: `${prefix}-${who}` });
  clients.push(c);
  return c;
}

const newIssue = (title: string, extra: Record<string, unknown> = {}) => ({
  title,
  work: true,
  changeType: "feat",
  ...(extra.blockedBy ? {} : { noDependency: "independent test work" }),
  ...extra,
});

beforeAll(async () => {
  // A 1 MiB body limit (the default, 16 MiB, fits a file attachment) so the 413 test sends little.
  seeded = await startSeededApp(["LOOP", "LANE", "BAT", "ISO", "OTH"], { MCP_MAX_BODY_BYTES: String(1024 * 1024) });
});
afterEach(({ task }) => {
  // The server's side of a failure (its error log lines) belongs in the test report.
  if (task.result?.state === "fail") process.stderr.write(`app output:\n${seeded?.app.output().slice(-8000)}\n`);
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => {})));
  await seeded?.close();
});

test("tools/list serves every tool of the design with input and output schemas", async () => {
  const alice = await client("LOOP", "alice");
  const { tools } = await alice.listTools();
  expect(tools.map((t) => t.name).sort()).toEqual([...designTools].sort());
  for (const tool of tools) {
    expect(tool.inputSchema.type).toBe("object");
    // Left out where it would say only `{type: "object"}` (decision 091).
    if (tool.outputSchema) expect(tool.outputSchema.type, tool.name).toBe("object");
    expect(tool.description!.length, tool.name).toBeGreaterThan(60);
  }
  const save = tools.find((t) => t.name === "save_issue")!;
  expect(Object.keys(save.inputSchema.properties!)).toEqual(
    expect.arrayContaining(["identifier", "title", "body", "work", "blockedBy", "noDependency", "status", "priority", "assignee", "labels", "dueAt", "cancelReason", "parent", "claimToken"]),
  );
});

test("the full loop with two principals: file, claim, checkpoint, heartbeat, release, resume, review, promote, unblock", async () => {
  const alice = await client("LOOP", "alice");
  const bob = await client("LOOP", "bob");
  const aliceEmail = (await callOk(alice, "whoami")).human.email as string;

  const blocker = await callOk(alice, "save_issue", newIssue("Add the users table", { priority: 3 }));
  const feature = await callOk(alice, "save_issue", newIssue("Sign-up flow", { priority: 1, blockedBy: [blocker.identifier] }));
  expect(feature.openBlockers).toEqual([blocker.identifier]);
  // The small blocker inherits the urgency of what it gates.
  expect((await callOk(alice, "get_issue", { identifier: blocker.identifier })).effectiveLevel).toBe(4);

  const first = await callOk(bob, "next_issue");
  expect(first).toMatchObject({ identifier: blocker.identifier, fence: 1, otherClaims: 0, checkpoint: null });
  expect(first.claimToken).toEqual(expect.any(String));
  expect(first.branch).toMatch(/^loop-\d+\/add-the-users-table/);

  const noted = await callOk(bob, "checkpoint", {
    identifier: blocker.identifier,
    claimToken: first.claimToken,
    done: "migration written",
    next: "add the index",
    gotchas: "email must be unique",
  });
  expect(noted.checkpoint).toMatchObject({ done: "migration written", next: "add the index" });
  const beat = await callOk(bob, "heartbeat", { identifier: blocker.identifier, claimToken: first.claimToken });
  expect(Date.parse(beat.expiresAt)).toBeGreaterThanOrEqual(Date.parse(first.expiresAt));
  expect(await callOk(bob, "check_claim", { identifier: blocker.identifier })).toMatchObject({ youHold: true, held: true });
  const released = await callOk(bob, "release_issue", {
    identifier: blocker.identifier,
    claimToken: first.claimToken,
    note: "out of time, pick up from the checkpoint",
  });
  expect(released).toMatchObject({ released: true });
  expect((await callError(bob, "heartbeat", { identifier: blocker.identifier, claimToken: first.claimToken })).code).toBe("STALE_CLAIM");

  // A second agent (another session of bob, another runtime would do the same) resumes from the checkpoint.
  const session = await callOk(bob, "mint_session_key");
  const bob2 = await connectClient(seeded.endpoint, session.key, { name: "bob-session-2" });
  clients.push(bob2);
  const resumed = await callOk(bob2, "next_issue");
  expect(resumed).toMatchObject({ identifier: blocker.identifier, fence: 2 });
  expect(resumed.checkpoint).toMatchObject({ done: "migration written", next: "add the index", gotchas: "email must be unique" });
  expect(resumed.branch).toBe(first.branch);

  const inReview = await callOk(bob2, "save_issue", {
    identifier: blocker.identifier,
    status: "review",
    assignee: aliceEmail,
    claimToken: resumed.claimToken,
  });
  expect(inReview).toMatchObject({ status: "review", lease: null });
  expect(inReview.assignee.email).toBe(aliceEmail);
  // Review still blocks; the author's principal may not review its own work.
  expect((await callError(bob, "claim_issue", { identifier: feature.identifier })).code).toBe("BLOCKED");
  expect((await callError(bob, "claim_issue", { identifier: blocker.identifier })).code).toBe("SELF_REVIEW");

  const review = await callOk(alice, "next_issue");
  expect(review).toMatchObject({ identifier: blocker.identifier, fence: 3 });
  expect(review.issue.status).toBe("review");
  const promoted = await callOk(alice, "save_issue", { identifier: blocker.identifier, status: "done", claimToken: review.claimToken });
  expect(promoted.status).toBe("done");

  const unblocked = await callOk(bob, "next_issue");
  expect(unblocked).toMatchObject({ identifier: feature.identifier });
  expect(unblocked.issue.openBlockers).toEqual([]);
  await callOk(bob, "save_issue", { identifier: feature.identifier, status: "done", claimToken: unblocked.claimToken });
});

test("lanes: work assigned to someone else is counted in otherLanes and taken only with allLanes", async () => {
  const alice = await client("LANE", "alice");
  const bob = await client("LANE", "bob");
  const bobEmail = (await callOk(bob, "whoami")).human.email as string;
  const forBob = await callOk(alice, "save_issue", newIssue("Bob's lane", { assignee: bobEmail, priority: 2 }));

  const empty = await callOk(alice, "next_issue");
  expect(empty).toMatchObject({ claimed: false, ready: 0, otherLanes: 1 });
  expect(empty).not.toHaveProperty("claimToken");

  const wide = await callOk(alice, "next_issue", { allLanes: true });
  expect(wide.identifier).toBe(forBob.identifier);
  await callOk(alice, "release_issue", { identifier: forBob.identifier, claimToken: wide.claimToken });
  expect((await callOk(bob, "next_issue")).identifier).toBe(forBob.identifier);
});

test("next_batch: a peek holds nothing and returns independent work; claim:true claims it all", async () => {
  const alice = await client("BAT", "alice");
  const a = await callOk(alice, "save_issue", newIssue("A", { priority: 1 }));
  const b = await callOk(alice, "save_issue", newIssue("B", { priority: 2 }));
  await callOk(alice, "add_relation", { sourceId: a.identifier, targetId: b.identifier, type: "related" });
  const c = await callOk(alice, "save_issue", newIssue("C", { priority: 3 }));
  const d = await callOk(alice, "save_issue", newIssue("D", { blockedBy: [c.identifier] }));

  const peek = await callOk(alice, "next_batch", { n: 5 });
  expect(peek.claimed).toBe(false);
  const peeked = peek.issues.map((i: { identifier: string }) => i.identifier);
  // A and B are related (only A goes out), D waits on C.
  expect(peeked).toEqual([a.identifier, c.identifier]);
  expect((await callOk(alice, "queue_status")).liveClaims).toEqual([]);
  expect(d.openBlockers).toEqual([c.identifier]);

  const batch = await callOk(alice, "next_batch", { n: 5, claim: true });
  expect(batch.claimed).toBe(true);
  expect(batch.claims.map((claim: { identifier: string }) => claim.identifier)).toEqual(peeked);
  for (const claim of batch.claims) {
    expect(claim.claimToken).toEqual(expect.any(String));
    expect(await callOk(alice, "check_claim", { identifier: claim.identifier })).toMatchObject({ youHold: true });
  }
  const status = await callOk(alice, "queue_status");
  expect(status.liveClaims.map((l: { identifier: string }) => l.identifier).sort()).toEqual([...peeked].sort());
  expect(status.blockedOn).toEqual([{ identifier: d.identifier, blockers: [{ identifier: c.identifier, status: "doing" }] }]);
});

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

describe("the HTTP edge of the built app", () => {
  const initialize = {
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
  };
  const post = (body: string, headers: Record<string, string> = {}) =>
    fetch(seeded.endpoint, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        authorization: `Bearer ${seeded.orgs.LOOP!.people.alice.key}`,
        ...headers,
      },
      body,
    });

  test("401 with WWW-Authenticate, 403 on a foreign Origin, 413 on an oversized body, 400 on malformed JSON, 405 on GET", async () => {
    const anonymous = await post(JSON.stringify(initialize), { authorization: "" });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("www-authenticate")).toMatch(/^Bearer realm="retasc"/);

    const foreign = await post(JSON.stringify(initialize), { origin: "https://attacker.example" });
    expect(foreign.status).toBe(403);

    const oversized = await post(JSON.stringify({ ...initialize, params: { ...initialize.params, pad: "x".repeat(1_100_000) } }));
    expect(oversized.status).toBe(413);

    const malformed = await post('{"jsonrpc": "2.0", "id": 1, "method": ');
    expect(malformed.status).toBe(400);
    expect((await malformed.json()).error.code).toBe(-32700);

    const get = await fetch(seeded.endpoint, { headers: { accept: "text/event-stream", authorization: `Bearer ${seeded.orgs.LOOP!.people.alice.key}` } });
    expect(get.status).toBe(405);

    for (const response of [anonymous, foreign, oversized, get]) {
      const text = await response.text().catch(() => "");
      expect(text).not.toMatch(/at .*\.(js|ts):\d+/);
    }
  });

  test("discovery: server card, RFC 9727 api-catalog, the landing page as Markdown", async () => {
    const card = await fetch(`${seeded.app.url}/.well-known/mcp.json`);
    expect(card.status).toBe(200);
    const cardJson = await card.json();
    expect(cardJson).toMatchObject({
      endpoint: seeded.endpoint,
      transport: { type: "streamable-http", url: seeded.endpoint },
      authentication: { type: "bearer", header: "Authorization" },
    });
    expect(cardJson.tools).toHaveLength(designTools.length);

    const catalog = await fetch(`${seeded.app.url}/.well-known/api-catalog`);
    expect(catalog.headers.get("content-type")).toMatch(/^application\/linkset\+json/);
    const linkset = (await catalog.json()).linkset;
    expect(linkset[0]).toMatchObject({ anchor: `${seeded.app.url}/.well-known/api-catalog`, item: [{ href: seeded.endpoint }] });
    expect(linkset[1]["service-desc"][0].href).toBe(`${seeded.app.url}/.well-known/mcp.json`);
    const head = await fetch(`${seeded.app.url}/.well-known/api-catalog`, { method: "HEAD" });
    expect(head.headers.get("link")).toMatch(/rel="api-catalog"/);

    const markdown = await fetch(`${seeded.app.url}/index.md`);
    expect(markdown.headers.get("content-type")).toMatch(/^text\/markdown/);
    const text = await markdown.text();
    expect(text).toContain(`${seeded.endpoint}`);
    for (const name of designTools) expect(text).toContain(`\`${name}\``);
    expect(text).toContain(`${seeded.app.url}/auth.md`);
  });

  test("serves this server's docs and its pages for agents: /docs with Markdown twins, /llms.txt, /auth.md", async () => {
    const base = seeded.app.url;
    const llms = await fetch(`${base}/llms.txt`);
    expect(llms.headers.get("content-type")).toMatch(/^text\/plain/);
    const llmsText = await llms.text();
    expect(llmsText).toMatch(/^# Retasc\n\n> /);
    expect(llmsText).toContain(`[How agents authenticate](${base}/auth.md)`);
    expect(llmsText).toContain(`(${base}/docs/security.md)`);
    const auth = await fetch(`${base}/auth.md`);
    expect(auth.headers.get("content-type")).toMatch(/^text\/markdown/);
    expect(await auth.text()).toContain("| `CLAIM_MISMATCH` |");

    const index = await (await fetch(`${base}/docs`)).text();
    expect(index).toContain('href="/docs/security"');
    expect(index).toContain('href="/docs/decisions/041-org-deletion-by-crypto-shredding"');
    const page = await fetch(`${base}/docs/security`);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain(`<link rel="canonical" href="${base}/docs/security">`);
    expect(html).toContain(`<link rel="alternate" type="text/markdown" href="/docs/security.md">`);
    expect(html).toContain('<h2 id="known-gaps">');
    expect(html).toContain('href="#known-gaps"');
    // Links between the docs point at the served pages, not their Markdown.
    expect(await (await fetch(`${base}/docs/architecture`)).text()).toContain('href="decisions/041-org-deletion-by-crypto-shredding"');
    const twin = await fetch(`${base}/docs/security.md`);
    expect(twin.headers.get("content-type")).toMatch(/^text\/markdown/);
    expect(await twin.text()).toBe(fs.readFileSync(path.resolve(import.meta.dirname, "../../docs/security.md"), "utf8"));
    const wire = await (await fetch(`${base}/wire`)).text();
    expect(wire).toContain(`claude mcp add --transport http retasc ${base}/mcp`);
    expect((await fetch(`${base}/wire.md`)).headers.get("content-type")).toMatch(/^text\/markdown/);
    // This app runs without billing, and its pricing page says so.
    expect(await (await fetch(`${base}/pricing.md`)).text()).toContain("**Free on this server.**");
    for (const missing of ["/docs/nothing-here", "/docs/..%2Fpackage.json", "/docs/decisions/..%2F..%2FREADME", "/docs/ops.md.md"]) {
      expect((await fetch(`${base}${missing}`)).status, missing).toBe(404);
    }
  });

  test("every public page is served with its Markdown twin and listed in /llms.txt, /index.md and the API catalog; no terms or privacy unless configured", async () => {
    const base = seeded.app.url;
    const llms = await (await fetch(`${base}/llms.txt`)).text();
    const landing = await (await fetch(`${base}/index.md`)).text();
    const catalog = JSON.stringify(await (await fetch(`${base}/.well-known/api-catalog`)).json());
    const pages = ["/product", "/compare", "/wire", "/pricing", "/connectors", "/migrate", "/guides", "/guides/github-issues-queue", "/guides/parallel-claude-code", "/guides/subagent-waves", "/guides/cursor-background-agents", "/guides/agent-swarm", "/guides/linear-vs-jira-vs-agent-first"];
    for (const page of pages) {
      const html = await fetch(`${base}${page}`);
      expect(html.status, page).toBe(200);
      expect(html.headers.get("content-type"), page).toMatch(/^text\/html/);
      const body = await html.text();
      expect(body, page).toContain(`<link rel="canonical" href="${base}${page}">`);
      expect(body, page).toMatch(/<meta name="description" content="[^"]{20,}">/);
      expect(body, page).not.toContain("{{");
      const twin = await fetch(`${base}${page}.md`);
      expect(twin.headers.get("content-type"), page).toMatch(/^text\/markdown/);
      expect(await twin.text(), page).toMatch(/^# /);
      expect(llms, page).toContain(`(${base}${page}.md)`);
      expect(landing, page).toContain(`(${base}${page})`);
      expect(catalog, page).toContain(`"${base}${page}"`);
    }
    for (const missing of ["/terms", "/privacy.md", "/guides/nothing-here", "/guides/..%2F..%2Fpackage"]) {
      expect((await fetch(`${base}${missing}`)).status, missing).toBe(404);
    }
  });
});
