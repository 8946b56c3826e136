import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { query } from "../db/client.ts";
import { retascJobs } from "./catalog.ts";
import { startInlineRunner } from "./inline.ts";
import type { JobRunner } from "./runner.ts";
import { waitFor } from "../server/testing/wait.ts";
import type { Ctx, RetascEvent, Services } from "../server/context.ts";
import { withPrincipal } from "../server/with-principal.ts";
import { endOfDayIn } from "../server/issues/levels.ts";
import { saveIssue } from "../server/issues/index.ts";
import { createLogger } from "../server/log.ts";
import { humanPrincipal } from "../server/orgs/access.ts";
import { ensureMember, ensureUser, mintAgentKey } from "../server/orgs/index.ts";
import { callError, callOk, connectClient, inProcessFetch, inProcessOrigin } from "../server/mcp/testing.ts";
import { useTestServices } from "../server/testing/database.ts";
import { servicesFor, testConfig } from "../server/testing/db.ts";
import { type FakeLinear, startFakeLinear } from "../test/fakes/linear.ts";
import { seedOrg, type SeededOrg } from "../server/testing/fixtures.ts";
import { claimGhost, linearImportStatus, listGhosts, listLinearTeams, startLinearImport } from "../server/transfer/linear/index.ts";
import { expectedFrom, snapshotProject } from "../server/transfer/linear/testing.ts";

/**
 * The Linear import end to end in one process: the SDK against the local fake Linear API
 * (2,000 issues, rate-limit answers partway), pages staged and applied by the real outbox
 * runner, the result checked item by item against the fake's data.
 */
const log = createLogger("silent");
const env = useTestServices();
let services: Services;
let linear: FakeLinear;
let org: SeededOrg;
let runner: JobRunner;
let alice: Ctx;
let bob: Ctx;
const events: RetascEvent[] = [];

beforeAll(async () => {
  linear = await startFakeLinear();
  const base = servicesFor(env.tdb.database, { config: testConfig({ LINEAR_API_URL: "http://127.0.0.1:1/graphql", JOB_BACKOFF_MS: "50", OUTBOX_POLL_MS: "200" }) });
  services = {
    ...base,
    config: { ...base.config, LINEAR_API_URL: linear.apiUrl },
    events: { publish: async (tx, event) => { events.push(event); await base.events.publish(tx, event); } },
  };
  org = await seedOrg(services, { prefix: "INT" });
  alice = withPrincipal(services, humanPrincipal(org.orgId, org.agents.alice.userId, "cli"));
  bob = withPrincipal(services, humanPrincipal(org.orgId, org.agents.bob.userId, "cli"));
  runner = await startInlineRunner({ services, database: env.tdb.database, log, catalog: retascJobs, sweeps: [], exclusive: false });
}, 60_000);
afterAll(async () => {
  await runner?.stop();
  await linear?.close();
});

const finished = (ctx: Ctx, runId: string) =>
  waitFor(async () => {
    const s = await linearImportStatus(ctx, { runId });
    return s.phase === "done" || s.phase === "failed" ? s : null;
  }, 900_000, `import ${runId} to finish`, 200);

const endOfDay = (d: string) => endOfDayIn(d, "UTC").toISOString();

describe("the Linear import", () => {
  let projectId: string;
  let firstRunId: string;

  it("lists the key's teams for owners and admins only, and refuses a wrong key with a coded error", async () => {
    await expect(listLinearTeams(alice, { apiKey: "lin_api_wrong" })).rejects.toMatchObject({ code: "UNAUTHORIZED" });
    await expect(listLinearTeams(bob, { apiKey: linear.apiKey })).rejects.toMatchObject({ code: "FORBIDDEN" });
    await expect(listLinearTeams(alice, {} as never)).rejects.toThrow();
    const teams = await listLinearTeams(alice, { apiKey: linear.apiKey });
    expect(teams.map((t) => t.key)).toEqual(["ENG", "OPS"]);
    expect(teams[0]).toMatchObject({ id: linear.workspace.team.id, issueCount: 2000, lastImportAt: null });
  });

  it("imports 2,000 issues item by item as Linear has them, through rate-limit answers, with live progress", async () => {
    linear.rateLimitAt(3, { kind: "http429", retryAfterSeconds: 1 });
    linear.rateLimitAt(12, { kind: "graphql", resetInMs: 300 });
    const started = await startLinearImport(alice, { apiKey: linear.apiKey, teamId: linear.workspace.team.id, newProject: { name: "Engineering" } });
    firstRunId = started.runId;
    expect(started).toMatchObject({ teamKey: "ENG", total: 2000 });
    // One import per org at a time, by the database's unique index.
    await expect(startLinearImport(alice, { apiKey: linear.apiKey, teamId: linear.workspace.team.id, newProject: { name: "Again" } })).rejects.toMatchObject({ code: "CONFLICT" });
    const status = await finished(alice, started.runId);
    expect(status).toMatchObject({ phase: "done", error: null, done: 2000, total: 2000, counts: { created: 2000, updated: 0, unchanged: 0 } });
    projectId = status.projectId;
    expect(linear.rateLimited).toBe(2);
    const progress = events.filter((e) => e.kind === "import.progress" && e.runId === started.runId);
    expect(progress.some((e) => e.phase === "fetching" && Number(e.done) > 0 && Number(e.done) < 2000)).toBe(true);
    expect(progress.some((e) => e.phase === "applying" && Number(e.done) > 0 && Number(e.done) < 2000)).toBe(true);
    expect(progress.at(-1)).toMatchObject({ phase: "done", done: 2000, total: 2000 });

    const got = await snapshotProject(services, org.orgId, "ENG");
    const want = expectedFrom(linear.workspace, endOfDay);
    expect(got.size).toBe(2000);
    for (const [identifier, issue] of want) expect(got.get(identifier), identifier).toEqual(issue);
    // The workspace really has what the checks claim to cover.
    const w = linear.workspace;
    const all = [...want.values()];
    expect(all.filter((i) => i.comments.some((c) => c.parent)).length).toBeGreaterThan(100);
    expect(all.some((i) => i.comments.length === 60)).toBe(true);
    expect(new Set(w.relations.map((r) => r.type))).toEqual(new Set(["blocks", "related", "duplicate"]));
    expect(w.issues.filter((i) => i.archivedAt).length).toBeGreaterThan(10);
    const depth = (id: string | null): number => (id ? 1 + depth(w.issues.find((i) => i.id === id)!.parentId) : 0);
    expect(Math.max(...w.issues.map((i) => depth(i.parentId)))).toBeGreaterThanOrEqual(3);
    expect(new Set(all.map((i) => i.status))).toEqual(new Set(["todo", "doing", "done", "canceled"]));
  }, 900_000);

  it("keeps identifiers: the project takes the team key, and a new issue continues after the highest number", async () => {
    const highest = Math.max(...linear.workspace.issues.map((i) => i.number));
    const created = await saveIssue(alice, { project: "ENG", title: "After the import", work: true, noDependency: "new work" });
    expect(created.identifier).toBe(`ENG-${highest + 1}`);
  });

  it("a started issue is doing with no lease: available work, not a fake claim", async () => {
    const rows = await query<{ n: number; leased: number }>(services.db, sql`select count(*)::int as n, count(lease_id)::int as leased from issues where project_id = ${projectId} and status = 'doing'`);
    expect(rows[0]!.n).toBeGreaterThan(100);
    expect(rows[0]!.leased).toBe(0);
    const leases = await query<{ n: number }>(services.db, sql`select count(*)::int as n from leases where org_id = ${org.orgId}`);
    expect(leases[0]!.n).toBe(0);
  });

  it("keeps the source's emails encrypted, and the key nowhere: not in any table, outbox payload or event", async () => {
    const tables = await query<{ table_name: string }>(services.db, sql`select table_name from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE'`);
    for (const { table_name } of tables) {
      const [row] = await query<{ dump: string | null }>(services.db, sql`select string_agg(t::text, '') as dump from ${sql.identifier(table_name)} t`);
      expect(row!.dump ?? "", table_name).not.toContain(linear.apiKey);
      expect((row!.dump ?? "").toLowerCase(), table_name).not.toContain("linear-customer.example");
    }
    expect(JSON.stringify(events)).not.toContain(linear.apiKey);
  });

  it("a placeholder is claimed once, by the person whose verified email the source gave; its history becomes theirs", async () => {
    const person = linear.workspace.users[2]!;
    const ghosts = await listGhosts(alice);
    const ghost = ghosts.find((g) => g.email === person.email)!;
    expect(ghost).toMatchObject({ name: person.name, claimable: false, claimedBy: null });
    const authored = linear.workspace.issues.filter((i) => i.creatorId === person.id).length;
    const commented = linear.workspace.issues.flatMap((i) => i.comments).filter((c) => c.userId === person.id).length;
    expect(authored).toBeGreaterThan(0);

    await expect(claimGhost(bob, { ghostId: ghost.ghostId })).rejects.toMatchObject({ code: "FORBIDDEN", details: { reason: "email_mismatch" } });
    const claimerId = await ensureUser(services.db, person.email.toLowerCase(), "The Real Person 3");
    await ensureMember(services.db, org.orgId, claimerId);
    const claimer = withPrincipal(services, humanPrincipal(org.orgId, claimerId, "cli"));
    expect((await listGhosts(claimer)).find((g) => g.ghostId === ghost.ghostId)!.claimable).toBe(true);
    await claimGhost(claimer, { ghostId: ghost.ghostId });
    await expect(claimGhost(claimer, { ghostId: ghost.ghostId })).rejects.toMatchObject({ code: "CONFLICT" });
    const [counts] = await query<{ issues: number; comments: number; history: number }>(
      services.db,
      sql`select (select count(*)::int from issues where org_id = ${org.orgId} and author_id = ${claimerId}) as issues,
                 (select count(*)::int from comments where org_id = ${org.orgId} and author_id = ${claimerId}) as comments,
                 (select count(*)::int from activity where org_id = ${org.orgId} and actor_id = ${claimerId} and kind = 'created') as history`,
    );
    expect(counts).toEqual({ issues: authored, comments: commented, history: authored });
  });

  it("claim_ghost over /mcp, from the person's own agent: without a ghostId it claims the placeholders carrying their verified email, once", async () => {
    const person = linear.workspace.users[3]!;
    const ghost = (await listGhosts(alice)).find((g) => g.email === person.email)!;
    const claimerId = await ensureUser(services.db, person.email.toLowerCase(), "The Real Person 4");
    await ensureMember(services.db, org.orgId, claimerId);
    const { key } = await mintAgentKey(services.db, { orgId: org.orgId, userId: claimerId, runtime: "claude-code", projectId: null, claimCap: null });
    const agent = await connectClient(`${inProcessOrigin}/mcp`, key, { fetch: inProcessFetch(services) });
    const bobs = await connectClient(`${inProcessOrigin}/mcp`, org.agents.bob.key, { fetch: inProcessFetch(services) });
    try {
      expect(await callError(bobs, "claim_ghost", {})).toMatchObject({ code: "NOT_FOUND" });
      expect(await callError(bobs, "claim_ghost", { ghostId: ghost.ghostId })).toMatchObject({ code: "FORBIDDEN" });
      expect(await callOk(agent, "claim_ghost", {})).toEqual({ claimed: [ghost.ghostId], claimedBy: claimerId });
      expect(await callError(agent, "claim_ghost", {})).toMatchObject({ code: "NOT_FOUND" });
      expect(await callError(agent, "claim_ghost", { ghostId: ghost.ghostId })).toMatchObject({ code: "CONFLICT" });
      const [{ n }] = (await query<{ n: number }>(services.db, sql`select count(*)::int as n from issues where org_id = ${org.orgId} and author_id = ${claimerId}`)) as [{ n: number }];
      expect(n).toBe(linear.workspace.issues.filter((i) => i.creatorId === person.id).length);
    } finally {
      await agent.close();
      await bobs.close();
    }
  });

  it("a re-import with nothing changed changes nothing: no activity, no updated_at, no new rows", async () => {
    const before = await fingerprint();
    const { runId } = await startLinearImport(alice, { apiKey: linear.apiKey, teamId: linear.workspace.team.id, projectId });
    const status = await finished(alice, runId);
    expect(status).toMatchObject({ phase: "done", counts: { created: 0, updated: 0, unchanged: 2000 } });
    expect(status.lastImportAt).not.toBeNull();
    expect(status.lastImportAt).toBe((await linearImportStatus(alice, { runId: firstRunId })).finishedAt);
    expect(await fingerprint()).toEqual(before);
  }, 900_000);

  it("a re-import with changes updates in place, attributed to the claimer, and duplicates nothing", async () => {
    const w = linear.workspace;
    const changed = w.issues[10]!;
    changed.title = "Renamed in Linear";
    changed.updatedAt = "2026-06-01T10:00:00.000Z";
    const commented = w.issues[11]!;
    commented.comments.push({ id: "c0ffee00-0000-4000-8000-000000000001", body: "A new reply", createdAt: "2026-06-01T11:00:00.000Z", updatedAt: "2026-06-01T11:00:00.000Z", archivedAt: null, parentId: commented.comments[0]?.id ?? null, userId: w.users[2]!.id });
    const dropped = w.relations.shift()!;
    const before = await fingerprint();
    const { runId } = await startLinearImport(alice, { apiKey: linear.apiKey, teamId: w.team.id, projectId });
    expect(await finished(alice, runId)).toMatchObject({ phase: "done", counts: { created: 0, updated: 1, unchanged: 1999 } });
    const after = await fingerprint();
    expect(after.issues).toBe(before.issues);
    expect(after.comments).toBe(before.comments + 1);
    expect(after.relations).toBe(before.relations - 1);
    const got = await snapshotProject(services, org.orgId, "ENG");
    const renamed = got.get(`ENG-${changed.number}`)!;
    expect(renamed).toMatchObject({ title: "Renamed in Linear", updatedAt: "2026-06-01T10:00:00.000Z" });
    expect(got.get(`ENG-${commented.number}`)!.comments.at(-1)).toMatchObject({ body: "A new reply", author: "The Real Person 3" });
    const source = w.issues.find((i) => i.id === dropped.issueId)!;
    expect(got.get(`ENG-${source.number}`)!.relations).not.toContain(`${dropped.type}:ENG-${w.issues.find((i) => i.id === dropped.relatedIssueId)!.number}`);
    // Only the changed issue moved: every other updated_at is as it was.
    const moved = Object.entries(after.updated).filter(([id, at]) => before.updated[id] !== at).map(([id]) => id);
    expect(moved).toHaveLength(1);
  }, 900_000);

  it("a Linear number already taken here by a Retasc issue fails the run with a code and frees the org", async () => {
    const w = linear.workspace;
    const highest = Math.max(...w.issues.map((i) => i.number));
    w.issues.push({ ...structuredClone(w.issues[0]!), id: "0badc0de-0000-4000-8000-000000000001", number: highest + 1, parentId: null, comments: [], attachments: [] });
    const { runId } = await startLinearImport(alice, { apiKey: linear.apiKey, teamId: w.team.id, projectId });
    expect(await finished(alice, runId)).toMatchObject({ phase: "failed", error: "NUMBER_TAKEN" });
    const [staged] = await query<{ n: number }>(services.db, sql`select count(*)::int as n from linear_import_pages where run_id = ${runId}`);
    expect(staged!.n).toBe(0);
    w.issues.pop();
    const again = await startLinearImport(alice, { apiKey: linear.apiKey, teamId: w.team.id, projectId });
    expect(await finished(alice, again.runId)).toMatchObject({ phase: "done", counts: { created: 0, updated: 0 } });
  }, 900_000);
});

/** Row counts, the last activity id and every issue's updated_at: what a no-op re-import must leave alone. */
async function fingerprint() {
  const [c] = await query<{ issues: number; comments: number; relations: number; attachments: number; labels: number; activity: number }>(
    services.db,
    sql`select (select count(*)::int from issues where org_id = ${org.orgId}) as issues,
               (select count(*)::int from comments where org_id = ${org.orgId}) as comments,
               (select count(*)::int from relations where org_id = ${org.orgId}) as relations,
               (select count(*)::int from attachments where org_id = ${org.orgId}) as attachments,
               (select count(*)::int from labels where org_id = ${org.orgId}) as labels,
               (select count(*)::int from activity where org_id = ${org.orgId} and kind <> 'ghost_claimed') as activity`,
  );
  const rows = await query<{ id: string; updated_at: string; effective_level: number; open_blocker_count: number }>(services.db, sql`select id, updated_at, effective_level, open_blocker_count from issues where org_id = ${org.orgId}`);
  return {
    ...c!,
    updated: Object.fromEntries(rows.map((r) => [r.id, new Date(r.updated_at).toISOString()])),
    ranking: Object.fromEntries(rows.map((r) => [r.id, `${r.effective_level}/${r.open_blocker_count}`])),
  };
}
