import fs from "node:fs";
import path from "node:path";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, expect, it } from "vitest";
import { boundFolder, login, removeTemps, retasc, signUp, startServer, type BoundFolder, type Person, type Server } from "./testing.ts";

/**
 * `retasc project rename-prefix` against the real app (decision 089): an owner renames the folder's
 * project, every identifier reads the new prefix, the old ones still name the same issues through
 * the CLI, /mcp and the Dash's links; this machine's binding and the folder's .retasc.json follow;
 * a member is refused, and so is a prefix another project has now or had before.
 */
let server: Server;
let ada: BoundFolder;
let cy: Person;
let orgId: string;

beforeAll(async () => {
  server = await startServer();
  ada = await boundFolder(server, "Ada");
  cy = await signUp(server, "Cy");
  expect((await login(server, cy)).code).toBe(0);
  orgId = JSON.parse(fs.readFileSync(path.join(ada.repo, ".retasc.json"), "utf8")).orgId;
  const invite = await json(ada.person, ["members", "invite", "--org-id", orgId]);
  await json(cy, ["join", invite.link, "--no-bind"]);
  for (const title of ["Parser for the config grammar", "Document the flags table"]) {
    const filed = (await ada.client.callTool({ name: "save_issue", arguments: { title, work: true, changeType: "feat", noDependency: "none" } })) as CallToolResult;
    expect(filed.isError, JSON.stringify(filed.structuredContent)).toBeFalsy();
  }
}, 180_000);
afterAll(async () => {
  await ada?.client.close();
  await server?.close();
  removeTemps();
});

async function json(person: Person, args: string[], cwd?: string) {
  const run = await retasc(person, [...args, "--json"], cwd ? { cwd } : {});
  expect(run.code, `${args.join(" ")}: ${run.stderr}`).toBe(0);
  return JSON.parse(run.stdout);
}

it("has --help naming its argument and options", async () => {
  const help = await retasc(ada.person, ["project", "rename-prefix", "--help"]);
  expect(help.code).toBe(0);
  expect(help.stdout).toContain("Usage: retasc project rename-prefix <NEW> [--project <PFX|id>]");
  expect(help.stdout).toContain("still resolve");
});

it("renames the folder's project: new identifiers, old ones still resolve at every door, the folder's files follow", async () => {
  // A member may not; the project is untouched.
  const refused = await retasc(cy, ["project", "rename-prefix", "APP", "--project", "WEB", "--org-id", orgId]);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toMatch(/^✗ FORBIDDEN: renaming a project's prefix needs the owner or admin role/);

  const renamed = await json(ada.person, ["project", "rename-prefix", "app"], ada.repo);
  expect(renamed).toMatchObject({ prefix: "APP", previous: "WEB", renamed: 2, changed: true, oldPrefixes: ["WEB"], projectFile: path.join(ada.repo, ".retasc.json") });
  expect(JSON.parse(fs.readFileSync(path.join(ada.repo, ".retasc.json"), "utf8")).prefix).toBe("APP");
  const bindings = JSON.parse(fs.readFileSync(path.join(ada.person.retascDir, "bindings.json"), "utf8"));
  expect(Object.values(bindings.workspaces).map((w) => (w as { prefix: string }).prefix)).toEqual(["APP"]);

  // The CLI (an old identifier, a bare number), /mcp and the Dash's issue page.
  expect((await json(ada.person, ["issue", "show", "WEB-2"], ada.repo)).identifier).toBe("APP-2");
  expect((await json(ada.person, ["issue", "show", "1"], ada.repo)).identifier).toBe("APP-1");
  const read = (await ada.client.callTool({ name: "get_issue", arguments: { identifier: "web-1" } })) as CallToolResult;
  expect(read.structuredContent).toMatchObject({ identifier: "APP-1" });
  const page = await fetch(`${server.url}/dash/issues/WEB-2`, { headers: { cookie: ada.person.cookie } });
  expect(page.status).toBe(200);
  expect(await page.text()).toContain("APP-2");

  // Said in words at a terminal.
  const back = await retasc(ada.person, ["project", "rename-prefix", "WEB"], { cwd: ada.repo });
  expect(back.code, back.stderr).toBe(0);
  expect(back.stdout).toContain("Renamed APP to WEB: 2 issues now read WEB-N.");
  expect(back.stdout).toContain("APP-42");
  expect(back.stderr).toContain(".retasc.json now says WEB: commit it.");
  expect((await json(ada.person, ["issue", "show", "APP-1"], ada.repo)).identifier).toBe("WEB-1");
});

it("refuses a prefix another project has now or had before, and a malformed one, saying why", async () => {
  const docs = await json(ada.person, ["project", "create", "--name", "Docs", "--prefix", "DOC", "--org-id", orgId]);
  const inUse = await retasc(ada.person, ["project", "rename-prefix", "WEB", "--project", "DOC", "--org-id", orgId]);
  expect(inUse).toMatchObject({ code: 1, stdout: "" });
  expect(inUse.stderr).toContain("✗ CONFLICT: prefix WEB is already used in this org");
  const old = await retasc(ada.person, ["project", "rename-prefix", "APP", "--project", docs.projectId, "--org-id", orgId]);
  expect(old.code).toBe(1);
  expect(old.stderr).toContain("✗ CONFLICT: prefix APP is an old prefix of project WEB: APP-1, APP-2, … still name its issues");
  const malformed = await retasc(ada.person, ["project", "rename-prefix", "A", "--project", "DOC", "--org-id", orgId]);
  expect(malformed.code).toBe(1);
  expect(malformed.stderr).toMatch(/✗ INVALID_INPUT: .*2-10 letters or digits/);
  // The Dash's Projects page renames too, with the same rule: a member is refused, an owner renames.
  const post = (person: Person, prefix: string) =>
    fetch(`${server.url}/dash/settings/projects.data`, {
      method: "POST",
      headers: { cookie: person.cookie, origin: server.url },
      body: new URLSearchParams({ intent: "rename-prefix", projectId: docs.projectId, prefix }),
    });
  const byMember = await post(cy, "DOX");
  expect(await byMember.text()).toContain("FORBIDDEN");
  const byOwner = await post(ada.person, "dox");
  expect(byOwner.status).toBe(200);
  expect(await byOwner.text()).toContain("DOC is now DOX");
  const page = await (await fetch(`${server.url}/dash/settings/projects`, { headers: { cookie: ada.person.cookie } })).text();
  expect(page).toContain("Rename a prefix");
  expect(page).toContain(">DOX<");

  const none = await retasc(ada.person, ["project", "rename-prefix", "--org-id", orgId]);
  expect(none.code).toBe(1);
  expect(none.stderr).toContain("✗ INVALID_INPUT: project rename-prefix needs the new prefix");
});
