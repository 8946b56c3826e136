import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cliEnv, workspaceBin } from "./testing.ts";
import { cliPost, signUp, startWorld, type World } from "../../server/testing/world.ts";

/**
 * Deleting an org through its doors over real HTTP: the Dash's Settings action, the CLI endpoint
 * and `retasc org delete` at a terminal. The owner only; afterwards the org reads NOT_FOUND and
 * its keys 401 on every door, while the other tenant goes on.
 */
let world: World;
beforeAll(async () => {
  world = await startWorld();
}, 240_000);
afterAll(() => world?.close());

const dashDelete = (cookie: string, form: Record<string, string>) =>
  fetch(`${world.url}/dash/settings/delete-org?_data`, {
    method: "POST",
    redirect: "manual",
    headers: { cookie, origin: world.url, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(form),
  });

async function cli(token: string, method: string, pathAndQuery: string, body?: unknown) {
  const response = await fetch(`${world.url}/api/cli/${pathAndQuery}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

/** One tools/call over /mcp with a key, as an agent sends it. */
const mcpStatus = async (key: string) =>
  (
    await fetch(`${world.url}/mcp`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "whoami", arguments: {} } }),
    })
  ).status;

describe("deleting an org over its doors", () => {
  it("the Dash: a member is FORBIDDEN and a wrong name deletes nothing; the owner typing the name ends every key and session of it, and the other org goes on", async () => {
    const { b, a } = world;
    const mia = await signUp(world.url, "Mia");
    const invite = await cliPost(world.url, b.token, "members", { orgId: b.orgId, action: "invite" });
    await cliPost(world.url, mia.token, "join", { code: invite.code });
    const orgName = "Bert's org";

    const page = await fetch(`${world.url}/dash/settings/delete-org`, { headers: { cookie: b.cookie } });
    const html = await page.text();
    expect(html).toContain("/dash/settings/transfer/export?format=json");
    expect(html).toContain(`Type ${orgName.replace("'", "&#x27;")} to confirm`);

    // Mia's Dash opens Bert's org (her only one): a member is refused.
    const byMember = await cli(mia.token, "POST", "orgs/delete", { orgId: b.orgId, confirmName: orgName });
    expect(byMember).toMatchObject({ status: 403, body: { error: { code: "FORBIDDEN" } } });
    expect(await (await dashDelete(mia.cookie, { orgId: b.orgId, confirmName: orgName })).text()).toContain("FORBIDDEN");
    expect(await (await dashDelete(b.cookie, { orgId: b.orgId, confirmName: "Bert" })).text()).toContain("INVALID_INPUT");
    // Alma is no member of it: NOT_FOUND, like any other org's.
    expect(await cli(a.token, "POST", "orgs/delete", { orgId: b.orgId, confirmName: orgName })).toMatchObject({ status: 404 });
    expect(await mcpStatus(b.key)).toBe(200);

    const started = performance.now();
    const done = await dashDelete(b.cookie, { orgId: b.orgId, confirmName: orgName });
    console.log(`Dash deletion answered in ${(performance.now() - started).toFixed(0)} ms`);
    expect(done.status).toBe(302);
    expect(done.headers.get("set-cookie")).toMatch(/retasc_org=;.*Max-Age=0/i);

    expect(await mcpStatus(b.key)).toBe(401);
    for (const person of [b, mia]) {
      expect((await cli(person.token, "GET", "whoami")).body.orgs.map((o: { orgId: string }) => o.orgId)).not.toContain(b.orgId);
      expect(await cli(person.token, "GET", `keys?orgId=${b.orgId}`)).toMatchObject({ status: 404, body: { error: { code: "NOT_FOUND" } } });
    }
    // Bert's Dash has no org left to show: it offers to create one.
    const dash = await fetch(`${world.url}/dash`, { headers: { cookie: b.cookie }, redirect: "manual" });
    expect(dash.headers.get("location")).toBe("/dash/orgs/new");
    expect(await cli(b.token, "POST", "orgs/delete", { orgId: b.orgId, confirmName: orgName })).toMatchObject({ status: 404 });

    const saved = await a.client.callTool({ name: "save_issue", arguments: { title: "Alma goes on", work: true, changeType: "feat", noDependency: "after" } });
    const { identifier } = saved.structuredContent as { identifier: string };
    const read = await a.client.callTool({ name: "get_issue", arguments: { identifier } });
    expect(read.structuredContent).toMatchObject({ title: "Alma goes on" });
  });

  it("retasc org delete asks for the name at a terminal: without one it refuses, and no flag answers it", async () => {
    const { a } = world;
    const { orgId } = await cliPost(world.url, a.token, "orgs", { name: "Scratch" });
    const retascDir = fs.mkdtempSync(path.join(os.tmpdir(), "retasc-orgdelete-"));
    const session = { token: a.token, user: { id: a.userId, email: a.email, name: "Alma" }, signedInAt: new Date().toISOString() };
    fs.writeFileSync(path.join(retascDir, "config.json"), JSON.stringify({ sessions: { [world.url]: session }, defaultUrl: world.url }), { mode: 0o600 });
    const env = cliEnv({ retascDir }, { NO_COLOR: "1" });

    const run = (command: string, args: string[], input: string) =>
      new Promise<{ code: number | null; output: string }>((resolve) => {
        const child = spawn(command, args, { env, cwd: os.tmpdir() });
        let output = "";
        child.stdout.on("data", (d) => (output += d));
        child.stderr.on("data", (d) => (output += d));
        child.on("exit", (code) => resolve({ code, output }));
        child.stdin.end(input);
      });

    const piped = await run(workspaceBin, ["org", "delete", "--org-id", orgId], "Scratch\n");
    expect(piped.code).not.toBe(0);
    expect(piped.output).toContain("at a terminal");
    expect((await run(workspaceBin, ["org", "delete", "--org-id", orgId, "--yes"], "")).code).not.toBe(0);
    expect((await cli(a.token, "GET", "whoami")).body.orgs.map((o: { orgId: string }) => o.orgId)).toContain(orgId);

    // At a pseudo-terminal (script(1)), the person types the name.
    const typed = await run("script", ["-qec", `${workspaceBin} org delete --org-id ${orgId}`, "/dev/null"], "Scratch\n");
    expect(typed.output).toContain("Type the org's name (Scratch)");
    expect(typed.output).toContain("Deleted Scratch");
    expect(typed.code).toBe(0);
    expect((await cli(a.token, "GET", "whoami")).body.orgs.map((o: { orgId: string }) => o.orgId)).not.toContain(orgId);
  });
});
