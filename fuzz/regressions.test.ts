import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { callError, callOk } from "../server/mcp/testing.ts";
import { startWorld, type World } from "../server/testing/world.ts";

/**
 * What the fuzzers found, each as a plain test (fuzz/seeds.ts keeps the seed that found it), and
 * the rule behind the first of them for every kind of door: text no column can store (a NUL, an
 * unpaired UTF-16 surrogate) is INVALID_INPUT before any query, refused in one place per door
 * (the edge for paths and queries, the form parse, the CLI's JSON parse, /mcp's argument check,
 * better-auth's hook), so the answer names the text, never what the database made of it.
 */
let world: World;
beforeAll(async () => {
  world = await startWorld();
});
afterAll(async () => {
  await world?.close();
});

const UNSTORABLE = /contains a NUL character \(U\+0000\) or an unpaired UTF-16 surrogate/;
const form = (fields: Record<string, string>) => ({
  method: "POST",
  headers: { cookie: world.a.cookie, origin: world.url, "content-type": "application/x-www-form-urlencoded" },
  body: new URLSearchParams(fields).toString(),
  redirect: "manual" as const,
});

test("issue 37 finding 9 (form fuzz seed 1111086541): POST /dash/switch-org with orgId=%00 is a 400 INVALID_INPUT, not a 500", async () => {
  for (const path of ["/dash/switch-org", "/dash/switch-org.data"]) {
    const response = await fetch(`${world.url}${path}`, form({ orgId: "\u0000" }));
    expect(response.status, path).toBe(400);
    expect(await response.text(), path).toMatch(/INVALID_INPUT/);
  }
  // The Dash still switches to an org of one's own.
  const ok = await fetch(`${world.url}/dash/switch-org`, form({ orgId: world.a.orgId }));
  expect(ok.status).toBe(302);
});

describe("a NUL or an unpaired surrogate is refused before any query, at every door", () => {
  test("a page's form, any field of any action", async () => {
    for (const [path, fields] of [
      ["/dash/issues/new", { project: world.a.prefix, title: "nul\u0000title", noDependency: "x", dependency: "none" }],
      ["/dash/settings/projects", { intent: "create", name: "P\u0000", prefix: "ZZZ" }],
      ["/dash/orgs/new", { name: "org\u0000" }],
    ] as const) {
      const response = await fetch(`${world.url}${path}`, form(fields));
      expect(response.status, path).toBe(400);
      expect(await response.text(), path).toMatch(UNSTORABLE);
    }
  });

  test("a path or a query, on every route", async () => {
    for (const target of ["/dash/queue?runtime=%00", "/dash/issues/AAA-1%00", "/api/cli/members?orgId=%00", "/healthz?x=%00"]) {
      const response = await fetch(`${world.url}${target}`, { headers: { cookie: world.a.cookie } });
      expect(response.status, target).toBe(400);
      expect(await response.json(), target).toMatchObject({ error: { code: "INVALID_INPUT", message: expect.stringContaining("NUL") } });
    }
  });

  test("a CLI endpoint's JSON, however deep", async () => {
    for (const body of [{ orgId: world.a.orgId, name: "x\u0000" }, { orgId: world.a.orgId, name: "lone \ud800 surrogate" }, { orgId: world.a.orgId, deep: [{ "k\udc00": 1 }] }]) {
      const response = await fetch(`${world.url}/api/cli/projects`, {
        method: "POST",
        headers: { authorization: `Bearer ${world.a.token}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ error: { code: "INVALID_INPUT", message: expect.stringMatching(UNSTORABLE) } });
    }
  });

  test("an MCP tool's arguments, on every tool: nothing is stored", async () => {
    for (const title of ["a NUL \u0000 here", "a lone \ud83d surrogate", "\udc00 reversed"]) {
      const refused = await callError(world.a.client, "save_issue", { project: world.a.prefix, title, changeType: "fix", noDependency: "regression test" });
      expect(refused).toMatchObject({ code: "INVALID_INPUT", message: expect.stringMatching(/title: contains a NUL character/) });
    }
    const nested = await callError(world.a.client, "save_issue", { project: world.a.prefix, title: "ok", changeType: "fix", labels: ["fine", "bad\u0000"], noDependency: "regression test" });
    expect(nested).toMatchObject({ code: "INVALID_INPUT", message: expect.stringMatching(/labels\.1: contains/) });
    const listed = await callOk(world.a.client, "list_issues", { project: world.a.prefix, limit: 100 });
    expect(JSON.stringify(listed)).not.toMatch(/surrogate|NUL|\ufffd/);
  });

  test("better-auth's endpoints: sign-up, sign-in and OAuth registration", async () => {
    for (const [path, body] of [
      ["/api/auth/sign-up/email", { email: "nul@example.com", password: "correct horse battery", name: "nul\u0000name" }],
      ["/api/auth/sign-in/email", { email: "x\ud800@example.com", password: "whatever whatever" }],
      ["/api/auth/oauth2/register", { client_name: "n\u0000", redirect_uris: ["http://127.0.0.1:7777/callback"] }],
    ] as const) {
      const response = await fetch(`${world.url}${path}`, { method: "POST", headers: { "content-type": "application/json", origin: world.url }, body: JSON.stringify(body) });
      expect(response.status, path).toBe(400);
      expect(await response.text(), path).toMatch(UNSTORABLE);
    }
  });
});
