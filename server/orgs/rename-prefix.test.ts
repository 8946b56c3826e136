import fs from "node:fs";
import { sql } from "drizzle-orm";
import { ZodError } from "zod";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { query } from "../../db/client.ts";
import type { Ctx } from "../context.ts";
import { addRelation, getIssue, saveIssue } from "../issues/index.ts";
import { callOk, connectClient, inProcessFetch, inProcessOrigin } from "../mcp/testing.ts";
import { checkpoint, claimIssue, heartbeat, releaseIssue } from "../queue/index.ts";
import { useTestServices } from "../testing/database.ts";
import { testDriver } from "../testing/db.ts";
import { seedOrg, type SeededOrg } from "../testing/fixtures.ts";
import { addProject } from "./account.ts";
import { setMemberRole } from "./members.ts";
import { getProject } from "./projects.ts";
import { renamePrefixCommand, renameProjectPrefix } from "./rename-prefix.ts";
import { systemPrincipal } from "../context.ts";
import { withPrincipal } from "../with-principal.ts";
import { importExport } from "../transfer/import.ts";
import { writeExport } from "../transfer/testing.ts";
import { removeTemps, tempDir } from "../testing/temp-dirs.ts";
import { peopleOf, refusal, type Person } from "./testing.ts";

const env = useTestServices();
afterAll(removeTemps);

let org: SeededOrg;
let as: Record<Person, Ctx>;

beforeEach(async () => {
  org = await seedOrg(env.services, { prefix: "WEB" });
  ({ as } = await peopleOf(env.services, org));
});

const file = (ctx: Ctx, title: string, extra: Record<string, unknown> = {}) =>
  saveIssue(ctx, { title, work: true, changeType: "feat", ...("blockedBy" in extra ? {} : { noDependency: "none" }), ...extra });

const identifiersOf = async (projectId: string) =>
  (await query<{ identifier: string }>(env.services.db, sql`select identifier from issues where project_id = ${projectId} order by number`)).map((r) => r.identifier);

const current = async (identifier: string) =>
  (await query<{ current: string }>(env.services.db, sql`select retasc_identifier(${org.orgId}, ${identifier}) as current`))[0]!.current;

describe("renaming a project's prefix", () => {
  it("rewrites every identifier in one transaction, and the old ones name the same issues at every door", async () => {
    const { alice, bob } = org.agents;
    const one = await file(alice.ctx, "Parser for the config grammar");
    const two = await file(alice.ctx, "Lexer error recovery", { blockedBy: [one.identifier] });
    const three = await file(alice.ctx, "Document the flags table");
    expect([one.identifier, two.identifier, three.identifier]).toEqual(["WEB-1", "WEB-2", "WEB-3"]);
    const held = await claimIssue(bob.ctx, { identifier: "WEB-3" });

    const renamed = await renameProjectPrefix(as.alice, { prefix: "app" });
    expect(renamed).toMatchObject({ projectId: org.projectId, prefix: "APP", previous: "WEB", renamed: 3, changed: true, oldPrefixes: ["WEB"] });
    expect(await identifiersOf(org.projectId)).toEqual(["APP-1", "APP-2", "APP-3"]);

    // The SQL function every lookup reads through.
    expect(await current("WEB-2")).toBe("APP-2");
    expect(await current("APP-2")).toBe("APP-2");
    expect(await current("ZZZ-2")).toBe("ZZZ-2");

    // Reads, the lease's fenced writes (heartbeat's one-statement path, checkpoint) and the finish (retasc_finish's path).
    const read = await getIssue(alice.ctx, { identifier: "web-2" });
    expect(read).toMatchObject({ identifier: "APP-2", blockedBy: [{ identifier: "APP-1", status: "todo" }] });
    expect(await heartbeat(bob.ctx, { identifier: "WEB-3", claimToken: held.claimToken })).toMatchObject({ identifier: "APP-3" });
    expect(await checkpoint(bob.ctx, { identifier: "WEB-3", claimToken: held.claimToken, done: "half" })).toMatchObject({ identifier: "APP-3" });
    expect(await saveIssue(bob.ctx, { identifier: "WEB-3", status: "done", claimToken: held.claimToken })).toMatchObject({ identifier: "APP-3", status: "done" });

    // A claim and release by the old identifier; relations and a create's blockedBy name old ones.
    const claim = await claimIssue(bob.ctx, { identifier: "WEB-1" });
    expect(claim.identifier).toBe("APP-1");
    await releaseIssue(bob.ctx, { identifier: "WEB-1", claimToken: claim.claimToken! });
    expect(await addRelation(alice.ctx, { sourceId: "WEB-2", targetId: "APP-3", type: "related" })).toMatchObject({ sourceId: "APP-2", targetId: "APP-3", added: true });
    expect((await refusal(addRelation(alice.ctx, { sourceId: "WEB-1", targetId: "APP-1", type: "related" }))).code).toBe("INVALID_INPUT");
    const four = await file(alice.ctx, "Warn on deprecated keys", { blockedBy: ["WEB-1"] });
    expect(four).toMatchObject({ identifier: "APP-4", blockedBy: [{ identifier: "APP-1" }] });

    // The duplicate gate finds an old identifier mentioned in a body, and takes it back as read.
    const mention = { body: "Follow-up of WEB-2." };
    const gate = await refusal(file(alice.ctx, "Retry budget for uploads", mention));
    expect(gate.code).toBe("DUPLICATE_CHECK_REQUIRED");
    expect(gate.details!.similar).toEqual([expect.objectContaining({ identifier: "APP-2", mentioned: true })]);
    expect((await file(alice.ctx, "Retry budget for uploads", { ...mention, reviewedSimilar: ["WEB-2"] })).identifier).toBe("APP-5");

    // A project named by its old prefix; over MCP, as an agent sends it.
    expect(await getProject(alice.ctx, { prefix: "WEB" })).toMatchObject({ id: org.projectId, prefix: "APP" });
    const client = await connectClient(`${inProcessOrigin}/mcp`, alice.key, { fetch: inProcessFetch(env.services) });
    try {
      expect(await callOk(client, "get_issue", { identifier: "WEB-4" })).toMatchObject({ identifier: "APP-4" });
    } finally {
      await client.close();
    }
  });

  it("renames back, and every prefix the project had goes on naming its issues", async () => {
    await file(org.agents.alice.ctx, "Only issue");
    await renameProjectPrefix(as.alice, { prefix: "APP" });
    const back = await renameProjectPrefix(as.alice, { project: "APP", prefix: "WEB" });
    expect(back).toMatchObject({ prefix: "WEB", previous: "APP", oldPrefixes: ["APP"] });
    expect(await identifiersOf(org.projectId)).toEqual(["WEB-1"]);
    expect(await current("APP-1")).toBe("WEB-1");
    const third = await renameProjectPrefix(as.alice, { project: "APP", prefix: "OPS" });
    expect(third.oldPrefixes.sort()).toEqual(["APP", "WEB"]);
    for (const old of ["APP-1", "WEB-1", "ops-1"]) expect((await getIssue(org.agents.bob.ctx, { identifier: old })).identifier).toBe("OPS-1");
    expect((await file(org.agents.alice.ctx, "After the renames")).identifier).toBe("OPS-2");
    expect(await renameProjectPrefix(as.alice, { prefix: "OPS", project: org.projectId })).toMatchObject({ changed: false, renamed: 0 });
    // The operator's command (npm run admin -- rename-prefix), as the org's owner.
    expect(await renamePrefixCommand(env.services, { org: org.orgId, project: "WEB", prefix: "web" })).toMatchObject({ prefix: "WEB", previous: "OPS", renamed: 2 });
    expect((await refusal(renamePrefixCommand(env.services, { org: "nope", prefix: "WEB" }))).code).toBe("NOT_FOUND");
  });

  it("travels in an export: the imported org's old identifiers resolve too", async () => {
    await file(org.agents.alice.ctx, "Exported issue");
    await renameProjectPrefix(as.alice, { prefix: "APP" });
    const exported = await writeExport(withPrincipal(env.services, systemPrincipal(org.orgId)), tempDir("retasc-rename-"));
    const project = JSON.parse(fs.readFileSync(exported, "utf8")).projects[0];
    expect(project).toMatchObject({ prefix: "APP", oldPrefixes: ["WEB"] });
    const imported = await importExport(env.services, { file: exported, "org-name": "Restored" });
    const [row] = await query<{ current: string }>(env.services.db, sql`select retasc_identifier(${imported.orgId}, 'WEB-1') as current`);
    expect(row!.current).toBe("APP-1");
  });

  it("is for owners and admins; a prefix of another project, now or before, is refused clearly; the format is a create's", async () => {
    expect((await refusal(renameProjectPrefix(as.bob, { project: org.projectId, prefix: "APP" }))).code).toBe("FORBIDDEN");
    expect((await refusal(renameProjectPrefix(org.agents.bob.ctx, { prefix: "APP" }))).code).toBe("FORBIDDEN");
    await setMemberRole(as.alice, { memberId: (await peopleOf(env.services, org)).memberIds.carol, role: "admin" });
    expect(await renameProjectPrefix(as.carol, { project: "WEB", prefix: "APP" })).toMatchObject({ prefix: "APP" });
    expect(await renameProjectPrefix(org.agents.alice.ctx, { prefix: "WEB" })).toMatchObject({ prefix: "WEB", previous: "APP" });

    for (const bad of ["A", "1AB", "TOOLONGPREFIX", "WE-B"]) {
      await expect(renameProjectPrefix(as.alice, { prefix: bad })).rejects.toBeInstanceOf(ZodError);
    }
    const other = await addProject(as.alice, { name: "Docs", prefix: "DOC" });
    const taken = await refusal(renameProjectPrefix(as.alice, { project: "WEB", prefix: "doc" }));
    expect(taken).toMatchObject({ code: "CONFLICT", details: { reason: "prefix_in_use", prefix: "DOC", project: "DOC" } });
    // APP is WEB's old prefix: no other project takes it, by rename or by create.
    const old = await refusal(renameProjectPrefix(as.alice, { project: other.projectId, prefix: "APP" }));
    expect(old).toMatchObject({ code: "CONFLICT", details: { reason: "prefix_is_old", prefix: "APP", project: "WEB" } });
    expect(old.message).toContain("APP-1");
    expect((await refusal(addProject(as.alice, { name: "Apps", prefix: "APP" }))).details).toMatchObject({ reason: "prefix_is_old" });
    // Two projects: a person names which.
    expect((await refusal(renameProjectPrefix(as.alice, { prefix: "NEW" }))).code).toBe("INVALID_INPUT");
    expect((await refusal(renameProjectPrefix(as.alice, { project: "NOPE", prefix: "NEW" }))).code).toBe("NOT_FOUND");
  });

  it.runIf(testDriver === "postgres")("loses nothing to creates, claims and fenced writes racing it", async () => {
    const agents = [org.agents.alice, org.agents.bob, org.agents.carol];
    const before: { identifier: string; number: number }[] = [];
    for (let i = 0; i < 24; i++) before.push({ identifier: (await file(agents[i % 3]!.ctx, `Seeded work item ${i} quokka${i}`)).identifier, number: i + 1 });
    const held = await Promise.all(before.slice(0, 6).map((issue, i) => claimIssue(agents[i % 3]!.ctx, { identifier: issue.identifier })));
    for (let round = 0; round < 3; round++) {
      const [from, to] = round % 2 === 0 ? ["WEB", "APP"] : ["APP", "WEB"];
      const creates = Array.from({ length: 9 }, (_, i) => file(agents[i % 3]!.ctx, `Raced ${round} ${i} narwhal${round}x${i}`));
      // Claims, heartbeats and saves name issues by the prefix they had when the race began.
      const claims = before.slice(6 + round * 6, 12 + round * 6).map((issue, i) => claimIssue(agents[i % 3]!.ctx, { identifier: `${from}-${issue.number}` }));
      const beats = held.map((h, i) => heartbeat(agents[i % 3]!.ctx, { identifier: `${from}-${before[i]!.number}`, claimToken: h.claimToken! }));
      const saves = before.slice(18, 24).map((issue, i) => saveIssue(agents[i % 3]!.ctx, { identifier: `${from}-${issue.number}`, priority: 1 + ((round + i) % 4) }));
      const rename = new Promise((resolve) => setTimeout(resolve, 3)).then(() => renameProjectPrefix(as.alice, { prefix: to }));
      const settled = await Promise.allSettled([rename, ...creates, ...claims, ...beats, ...saves]);
      const failed = settled.filter((s) => s.status === "rejected").map((s) => { const e = (s as PromiseRejectedResult).reason; return `${String(e).slice(0, 80)} ${e?.cause ?? ""}`; });
      expect(failed).toEqual([]);
      const identifiers = await identifiersOf(org.projectId);
      expect(identifiers.every((id) => id.startsWith(`${to}-`))).toBe(true);
      expect(identifiers.map((id) => Number(id.split("-")[1]))).toEqual(identifiers.map((_, n) => n + 1));
      // Every create's reply names its issue, whichever side of the rename it landed on.
      for (const created of settled.slice(1, 10)) {
        const { identifier } = (created as PromiseFulfilledResult<{ identifier: string }>).value;
        expect((await getIssue(org.agents.alice.ctx, { identifier })).identifier.startsWith(`${to}-`)).toBe(true);
      }
      // Each claim holds its issue, and its token works after the rename, by the identifier it was claimed with.
      for (const [i, claimed] of settled.slice(10, 16).entries()) {
        const { claimToken, identifier } = (claimed as PromiseFulfilledResult<{ claimToken: string; identifier: string }>).value;
        await releaseIssue(agents[i % 3]!.ctx, { identifier: `${from}-${identifier.split("-")[1]}`, claimToken });
      }
    }
    expect((await getIssue(org.agents.alice.ctx, { identifier: `WEB-${before[0]!.number}` })).lease).toBeTruthy();
  });
});
