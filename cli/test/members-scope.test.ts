import { afterAll, beforeAll, expect, it } from "vitest";
import { gitRepo, login, removeTemps, retasc, signUp, startServer, type Person, type Server } from "./testing.ts";

/**
 * Project scoping from the terminal (decision 042): `retasc members invite --project-id` makes a
 * scoped member, `retasc members list` shows the scope, `retasc members scope` changes it.
 */
let server: Server;
let ada: Person;
let cy: Person;

beforeAll(async () => {
  server = await startServer();
  [ada, cy] = await Promise.all([signUp(server, "Ada"), signUp(server, "Cy")]);
  expect((await login(server, ada)).code).toBe(0);
  expect((await login(server, cy)).code).toBe(0);
});
afterAll(async () => {
  await server?.close();
  removeTemps();
});

const json = async (person: Person, args: string[], cwd?: string) => {
  const run = await retasc(person, [...args, "--json"], cwd ? { cwd } : {});
  expect(run.code, `${args.join(" ")}: ${run.stderr}`).toBe(0);
  return JSON.parse(run.stdout);
};

it("an invite naming projects makes a member who sees only those; members scope widens and narrows it", async () => {
  const repo = gitRepo();
  const bound = await json(ada, ["bind", "--org-name", "Acme", "--project", "Web", "--prefix", "WEB"], repo);
  const ops = await json(ada, ["project", "create", "--name", "Ops", "--prefix", "OPS", "--org-id", bound.orgId]);

  const invite = await json(ada, ["members", "invite", "--org-id", bound.orgId, "--project-id", ` ${bound.projectId} ,`]);
  expect(invite.projectIds).toEqual([bound.projectId]);
  const joined = await json(cy, ["join", invite.link, "--no-bind"]);
  expect(joined).toMatchObject({ memberId: expect.any(String) });
  const memberId = joined.memberId as string;

  // Cy's CLI mints a key only for a project Cy reaches; the other reads NOT_FOUND.
  const reaches = async (projectId: string) => {
    const mint = await retasc(cy, ["key", "mint", "--org-id", bound.orgId, "--project-id", projectId, "--json"]);
    if (mint.code !== 0) expect(mint.stderr).toContain("NOT_FOUND");
    return mint.code === 0;
  };
  expect([await reaches(bound.projectId), await reaches(ops.projectId)]).toEqual([true, false]);
  const listed = await json(ada, ["members", "list", "--org-id", bound.orgId]);
  expect(listed.members.find((m: { memberId: string }) => m.memberId === memberId).projectIds).toEqual([bound.projectId]);
  const table = await retasc(ada, ["members", "list", "--org-id", bound.orgId]);
  expect(table.stdout).toMatch(/PROJECTS/);

  expect(await json(ada, ["members", "scope", "--org-id", bound.orgId, "--member-id", memberId, "--all"])).toEqual({ memberId, projectIds: null });
  expect(await reaches(ops.projectId)).toBe(true);
  expect(await json(ada, ["members", "scope", "--org-id", bound.orgId, "--member-id", memberId, "--project-id", ops.projectId])).toEqual({ memberId, projectIds: [ops.projectId] });
  expect([await reaches(bound.projectId), await reaches(ops.projectId)]).toEqual([false, true]);

  // Exactly one of --project-id and --all.
  const neither = await retasc(ada, ["members", "scope", "--org-id", bound.orgId, "--member-id", memberId]);
  expect(neither.code).not.toBe(0);
  expect(neither.stderr).toContain("--project-id <id[,id…]> or --all");
});
