import { beforeAll, describe, expect, test } from "vitest";
import { callError, callOk } from "./testing.ts";
import { useScopedOrg, type ScopedOrg } from "./testing/scoped-org.ts";

/**
 * Project scoping (decision 042) on the built app's other doors (server/mcp/testing/scoped-org.ts):
 * a key is bound only inside the scope, Mia's Dash and CLI endpoints answer as her tools do, the
 * owner, unscoped, sees everything, and a scope change applies on the next request.
 */
const { org, post, hiddenMarks } = useScopedOrg();
let { app, owner, mia, orgId, see, hid, miaMemberId, ownerAgent, miaAgent, hidden, visible } = {} as ScopedOrg;
beforeAll(() => ({ app, owner, mia, orgId, see, hid, miaMemberId, ownerAgent, miaAgent, hidden, visible } = org));

describe("a member scoped to one project", () => {
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

  test("the owner, unscoped, sees every project", async () => {
    expect((await callOk(ownerAgent, "list_projects")).projects.map((p: { prefix: string }) => p.prefix)).toEqual(["HID", "SEE"]);
    const listed = await callOk(ownerAgent, "list_issues", { status: ["todo", "doing", "review"] });
    expect(listed.issues.map((i: { identifier: string }) => i.identifier)).toContain(hidden.identifier);
  });
});
