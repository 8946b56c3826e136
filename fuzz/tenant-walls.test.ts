import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { callError, callOk, connectClient } from "../server/mcp/testing.ts";
import { problemsWith } from "./hostile.ts";
import { cliPost, signUp, startWorld, type World } from "../server/testing/world.ts";

/**
 * The wall between tenants on the Dash and the CLI endpoints (the MCP tools have their own
 * walk in server/mcp/app-tenants.test.ts): person A, signed in, aims every loader and action at org B's
 * issues, members, keys, invites and org id. Each is refused as NOT_FOUND or FORBIDDEN (or
 * quietly falls back to A's own org), no reply carries B's data, and B's data is unchanged.
 */
let world: World;
beforeAll(async () => {
  world = await startWorld();
});
afterAll(async () => {
  await world?.close();
});

async function asA(path: string, init: { form?: Record<string, string>; json?: unknown; cookie?: string; bearer?: boolean } = {}) {
  const headers: Record<string, string> = { origin: world.url };
  if (init.bearer) headers.authorization = `Bearer ${world.a.token}`;
  else headers.cookie = init.cookie ?? world.a.cookie;
  let body: BodyInit | undefined;
  if (init.form) body = new URLSearchParams(init.form);
  if (init.json !== undefined) {
    body = JSON.stringify(init.json);
    headers["content-type"] = "application/json";
  }
  const response = await fetch(`${world.url}${path}`, { method: body ? "POST" : "GET", headers, body, redirect: "manual" });
  const text = await response.text();
  const problems = problemsWith(world, { status: response.status, body: text }, `${path} ${JSON.stringify(init.form ?? init.json ?? {})}`);
  expect(problems, `${path} ${JSON.stringify(init.form ?? init.json ?? {})}`).toEqual([]);
  return { status: response.status, text };
}

/** Refused: a 403/404, or an action result that names NOT_FOUND or FORBIDDEN. */
function expectRefused(reply: { status: number; text: string }, what: string) {
  const refused = reply.status === 403 || reply.status === 404 || /NOT_FOUND|FORBIDDEN/.test(reply.text);
  expect(refused, `${what}: ${reply.status} ${reply.text.slice(0, 300)}`).toBe(true);
}

describe("the Dash as another tenant", () => {
  test("loaders: B's issue is NOT_FOUND; every page A can open shows nothing of B", async () => {
    for (const identifier of world.bIds.issues) {
      for (const suffix of ["", ".data"]) {
        const reply = await asA(`/dash/issues/${identifier}${suffix}`);
        expect(reply.status, `${identifier}${suffix}`).toBe(404);
      }
    }
    for (const page of ["/dash", "/dash/queue", "/dash/queue?status=todo&runtime=claude-code", "/dash/settings/projects", "/dash/settings/members", "/dash/settings/keys"]) {
      const reply = await asA(page);
      expect(reply.status, page).toBe(200);
      for (const id of [...world.bIds.issues.map((i) => `>${i}<`), world.b.orgId, world.b.projectId, world.b.userId, world.b.email, ...world.bIds.memberIds]) {
        expect(reply.text, `${page} shows ${id}`).not.toContain(id);
      }
    }
  });

  test("a forged current-org cookie naming B's org falls back to A's own org", async () => {
    const forged = `${world.a.cookie}; retasc_org=${encodeURIComponent(Buffer.from(JSON.stringify(world.b.orgId)).toString("base64"))}`;
    for (const page of ["/dash", "/dash/queue", "/dash/settings/members", `/dash/issues/${world.bIds.issues[0]}`]) {
      const reply = await asA(page, { cookie: forged });
      expect(reply.text, page).not.toContain(world.b.orgId);
    }
    expect((await asA(`/dash/issues/${world.bIds.issues[0]}`, { cookie: forged })).status).toBe(404);
    // Switching to an org one is not a member of changes nothing.
    const switched = await asA("/dash/switch-org", { form: { orgId: world.b.orgId, next: "/dash/queue" } });
    expect(switched.status).toBe(302);
    expect((await asA("/dash/queue")).text).not.toContain(world.bIds.issues[0]);
  });

  test("actions on B's issues, members, keys and invites are refused, through documents and data requests", async () => {
    const [b1, b2] = world.bIds.issues;
    const own = `${world.a.prefix}-1`;
    const actions: [string, Record<string, string>][] = [
      [`/dash/issues/${b1}`, { intent: "edit", title: "pwned", "was.title": "x" }],
      [`/dash/issues/${b1}`, { intent: "reprioritize", priority: "1" }],
      [`/dash/issues/${b1}`, { intent: "comment", body: "hello" }],
      [`/dash/issues/${b1}`, { intent: "relate", other: own, type: "related" }],
      [`/dash/issues/${b1}`, { intent: "unrelate", other: own, type: "related" }],
      [`/dash/issues/${b1}`, { intent: "cancel", reason: "pwned" }],
      [`/dash/issues/${b2}`, { intent: "release", reason: "pwned" }],
      [`/dash/issues/${own}`, { intent: "relate", other: b1!, type: "blocks" }],
      ["/dash/issues/new", { title: "x", work: "work", dependency: "blockedBy", blockedBy: b1! }],
      ["/dash/issues/new", { title: "x", work: "work", dependency: "none", noDependency: "x", parent: b1! }],
      ...["suspend", "reactivate", "make-admin", "make-member", "make-owner"].flatMap((intent) =>
        world.bIds.memberIds.map((memberId) => ["/dash/settings/members", { intent, memberId }] as [string, Record<string, string>]),
      ),
      ["/dash/settings/members", { intent: "retire", memberId: world.bIds.agentMemberId }],
      ["/dash/settings/members", { intent: "revoke-invite", inviteId: world.bIds.inviteId }],
      ["/dash/settings/keys", { intent: "rotate", keyId: world.b.keyId }],
      ["/dash/settings/keys", { intent: "revoke", keyId: world.b.keyId }],
      ["/dash/settings/keys", { intent: "mint", projectId: world.b.projectId, runtime: "codex" }],
      ["/dash/settings/keys", { intent: "setup", projectId: world.b.projectId, runtime: "codex" }],
    ];
    for (const [path, form] of actions) {
      for (const suffix of ["", ".data"]) expectRefused(await asA(`${path}${suffix}`, { form }), `${path}${suffix} ${JSON.stringify(form)}`);
    }
  });
});

describe("the CLI endpoints as another tenant", () => {
  test("reads and writes naming B's org are refused", async () => {
    const orgId = world.b.orgId;
    for (const path of ["projects", "keys", "members", "triage"]) {
      expectRefused(await asA(`/api/cli/${path}?orgId=${orgId}`, { bearer: true }), `GET ${path}`);
    }
    const writes: [string, Record<string, unknown>][] = [
      ["projects", { orgId, name: "pwned", prefix: "PWN" }],
      ["keys", { orgId, action: "mint", projectId: world.b.projectId }],
      ["keys", { orgId, action: "revoke", keyId: world.b.keyId }],
      ["keys", { orgId: world.a.orgId, action: "revoke", keyId: world.b.keyId }],
      ["keys", { orgId: world.a.orgId, action: "rotate", keyId: world.b.keyId }],
      ["members", { orgId, action: "invite" }],
      ["members", { orgId, action: "suspend", memberId: world.bIds.memberIds[0] }],
      ["members", { orgId: world.a.orgId, action: "suspend", memberId: world.bIds.memberIds[0] }],
      ["members", { orgId: world.a.orgId, action: "revoke-invite", inviteId: world.bIds.inviteId }],
      ["triage", { orgId, action: "accept", identifier: world.bIds.issues[0], digest: "0".repeat(64) }],
      ["issues", { orgId, action: "unquarantine", identifier: world.bIds.issues[0] }],
      ["issues", { orgId: world.a.orgId, action: "unquarantine", identifier: world.bIds.issues[0] }],
    ];
    for (const [path, json] of writes) expectRefused(await asA(`/api/cli/${path}`, { json, bearer: true }), `POST ${path} ${JSON.stringify(json)}`);
  });
});

describe("people and agents taken out in the Dash", () => {
  // server/mcp/http.test.ts covers the MCP tools and direct revocation; this is the Dash's door, over HTTP.
  test("suspending a person or retiring an agent on the members page cuts its key off at the next call", async () => {
    const { code } = await cliPost(world.url, world.a.token, "members", { orgId: world.a.orgId, action: "invite" });
    const carl = await signUp(world.url, "Carl");
    const joined = await cliPost(world.url, carl.token, "join", { code });
    const mint = async () => (await cliPost(world.url, carl.token, "keys", { orgId: world.a.orgId, action: "mint", projectId: world.a.projectId })) as { key: string; keyId: string };
    const members = (intent: string, memberId: string) => asA("/dash/settings/members.data", { form: { intent, memberId } });

    const first = await mint();
    const agent = await connectClient(`${world.url}/mcp`, first.key, { name: "carl" });
    try {
      await callOk(agent, "whoami");
      expect((await members("suspend", joined.memberId)).text).toMatch(/Suspended; 1 agent retired/);
      await expect(agent.callTool({ name: "whoami", arguments: {} })).rejects.toThrow(/401|Unauthorized/);
      await members("reactivate", joined.memberId);
      // Reactivation does not bring retired keys back.
      await expect(agent.callTool({ name: "whoami", arguments: {} })).rejects.toThrow(/401|Unauthorized/);
    } finally {
      await agent.close();
    }

    const second = await mint();
    const again = await connectClient(`${world.url}/mcp`, second.key, { name: "carl-2" });
    try {
      await callOk(again, "whoami");
      expect((await members("retire", second.keyId)).text).toMatch(/Agent retired/);
      await expect(again.callTool({ name: "whoami", arguments: {} })).rejects.toThrow(/401|Unauthorized/);
    } finally {
      await again.close();
    }
  });
});

describe("ranks inside one tenant", () => {
  // server/orgs/keys.test.ts holds the rule itself; this is every door of it, over HTTP.
  test("an admin cannot act as the owner: no key minted for them, theirs not rotated, revoked or retired, on the CLI, the Dash or MCP", async () => {
    const { code } = await cliPost(world.url, world.a.token, "members", { orgId: world.a.orgId, action: "invite" });
    const dana = await signUp(world.url, "Dana");
    const joined = await cliPost(world.url, dana.token, "join", { code });
    expect((await asA("/dash/settings/members.data", { form: { intent: "make-admin", memberId: joined.memberId } })).text).toMatch(/Role changed to admin/);
    const orgId = world.a.orgId;
    const asDana = (path: string, json: unknown) =>
      fetch(`${world.url}/api/cli/${path}`, { method: "POST", headers: { authorization: `Bearer ${dana.token}`, "content-type": "application/json" }, body: JSON.stringify(json) });

    for (const json of [
      { orgId, action: "mint", userId: world.a.userId, projectId: world.a.projectId },
      { orgId, action: "rotate", keyId: world.a.keyId },
      { orgId, action: "revoke", keyId: world.a.keyId },
    ]) {
      const reply = await asDana("keys", json);
      expect(reply.status, JSON.stringify(json)).toBe(403);
      expect((await reply.json()).error.message).toMatch(/^An admin cannot (mint|rotate|revoke) a key (for|of) an owner$/);
    }
    for (const intent of ["rotate", "revoke"]) {
      const reply = await fetch(`${world.url}/dash/settings/keys.data`, {
        method: "POST",
        headers: { cookie: dana.cookie, origin: world.url },
        body: new URLSearchParams({ intent, keyId: world.a.keyId }),
      });
      expect(await reply.text(), intent).toMatch(/FORBIDDEN.*An admin cannot/);
    }
    const own = (await cliPost(world.url, dana.token, "keys", { orgId, action: "mint", projectId: world.a.projectId })) as { key: string };
    const agent = await connectClient(`${world.url}/mcp`, own.key, { name: "dana" });
    try {
      expect(await callError(agent, "retire_member", { memberId: world.a.keyId })).toMatchObject({
        code: "FORBIDDEN",
        message: "An admin cannot retire an agent of an owner",
      });
    } finally {
      await agent.close();
    }
    // The owner's key is untouched and still their only one.
    expect((await callOk(world.a.client, "whoami")).human.email).toBe(world.a.email);
    const keys = await fetch(`${world.url}/api/cli/keys?orgId=${orgId}`, { headers: { authorization: `Bearer ${world.a.token}` } });
    expect(((await keys.json()).keys as { userId: string }[]).filter((k) => k.userId === world.a.userId)).toHaveLength(1);
  });
});

test("after all of it, B's issues, people, key and invite are as they were", async () => {
  for (const identifier of world.bIds.issues) {
    const issue = await callOk(world.b.client, "get_issue", { identifier });
    expect(issue.title).toContain(world.marker);
    expect(issue.status).not.toBe("canceled");
  }
  expect((await callOk(world.b.client, "check_claim", { identifier: world.bIds.issues[1] })).fence).toBe(1);
  expect((await callOk(world.b.client, "list_comments", { issue: world.bIds.issues[0] })).comments).toHaveLength(1);
  const { members } = await callOk(world.b.client, "list_members");
  for (const member of members) expect(member.status, JSON.stringify(member)).toBe("active");
  expect((await callOk(world.b.client, "whoami")).orgId ?? world.b.orgId).toBe(world.b.orgId);
  const invites = await fetch(`${world.url}/api/cli/members?orgId=${world.b.orgId}`, { headers: { authorization: `Bearer ${world.b.token}` } });
  const pending = ((await invites.json()).invites as { inviteId: string; state: string }[]).find((i) => i.inviteId === world.bIds.inviteId);
  expect(pending?.state).toBe("pending");
});
