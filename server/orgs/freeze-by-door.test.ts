import fs from "node:fs";
import path from "node:path";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { githubDelivery } from "../../test/fakes/github.ts";
import { testDriver } from "../testing/db.ts";
import { waitFor } from "../testing/wait.ts";
import { cliPost } from "../testing/world.ts";
import { FREEZE_RETRY_AFTER_SECONDS, FREEZE_SETTLES_MS } from "./freeze.ts";
import { KEY_CACHE_MS } from "./key-cache.ts";
import { call, closeRolesWorld, emptyRolesWorld, OK, openRolesWorld, type RolesWorld } from "./testing/roles-doors.ts";

/**
 * A frozen org writes nothing, whatever the door (decision 110): the real app (the world of
 * roles-by-door.test.ts), one org frozen as `org-freeze` freezes it, and every kind of write
 * tried through each door that offers it: /mcp with an agent key and with a session key (claims,
 * issue writes, comments, heartbeats, checkpoints, releases, relations, labels, keys, invites),
 * the Dash's forms and the CLI's endpoints as a person (issues, comments, relations, projects,
 * keys, invites, billing), GitHub's webhook, and the in-process job runner. Each answers
 * ORG_FROZEN (503 with Retry-After where the door speaks HTTP; GitHub's delivery 503, which it
 * delivers again), and every row of the org, in every table with an org_id, is as it was: its
 * count and its checksum. Reads go on. Unfrozen, the same doors write again.
 *
 * PostgreSQL only: the test freezes the org and reads its rows beside the running app, which an
 * embedded data directory does not allow (the data layer's freeze is the same on both drivers).
 */
const examples = JSON.parse(fs.readFileSync(path.resolve("node_modules/@octokit/webhooks-examples/api.github.com/index.json"), "utf8")) as { name: string; examples: Record<string, any>[] }[];

describe.runIf(testDriver === "postgres")("a frozen org, through every door", () => {
  const w: RolesWorld = emptyRolesWorld();
  let sql: postgres.Sql;
  /** Another org of the owner's, never frozen: its job shows the runner at work. */
  let otherOrgId: string;
  beforeAll(async () => {
    await openRolesWorld(w);
    otherOrgId = (await cliPost(w.url, w.people.owner.token, "orgs", { name: "Never frozen" })).orgId;
    sql = postgres(w.database!.directUrl ?? w.database!.url!, { max: 2, onnotice: () => {} });
  }, 300_000);
  afterAll(async () => {
    await sql?.end();
    await closeRolesWorld(w);
  });

  const orgCookie = (cookie: string) => `${cookie}; retasc_org=${encodeURIComponent(Buffer.from(JSON.stringify(w.orgId)).toString("base64"))}`;
  // A JSON reply's code, or the one a Dash action's data (React Router's turbo-stream) carries.
  const codeOf = (text: string) => /"code":\s*"([A-Z_]+)"/.exec(text)?.[1] ?? /"([A-Z]+_[A-Z_]+|FORBIDDEN|NOT_FOUND|CONFLICT)"/.exec(text)?.[1] ?? null;

  /** A Dash form post as the owner: its refusal's code, or ✓. */
  async function dash(page: string, fields: Record<string, string>): Promise<string> {
    const response = await fetch(`${w.url}${page}.data`, {
      method: "POST",
      headers: { cookie: orgCookie(w.people.owner.cookie), origin: w.url },
      body: new URLSearchParams(fields),
      redirect: "manual",
    });
    const text = await response.text();
    return codeOf(text) ?? (response.status < 400 ? OK : `HTTP ${response.status}`);
  }

  /** A CLI endpoint as the owner: its refusal's code (and Retry-After checked), or ✓. */
  async function cli(endpoint: string, body: Record<string, unknown>): Promise<string> {
    const response = await fetch(`${w.url}/api/cli/${endpoint}`, {
      method: "POST",
      headers: { authorization: `Bearer ${w.people.owner.token}`, "content-type": "application/json" },
      body: JSON.stringify({ orgId: w.orgId, ...body }),
    });
    const reply = await response.json();
    if (response.ok) return OK;
    if (reply.error.code === "ORG_FROZEN") {
      expect(response.status).toBe(503);
      expect(response.headers.get("retry-after")).toBe(String(FREEZE_RETRY_AFTER_SECONDS));
    }
    return reply.error.code;
  }

  /** An MCP tool call: its refusal's code (with retryAfter checked), or ✓. */
  async function mcp(who: "agent" | "session", name: string, args: Record<string, unknown>): Promise<string> {
    const result = await call(w.actors.owner[who], name, args);
    if (!result.isError) return OK;
    const error = result.structuredContent.error;
    if (error.code === "ORG_FROZEN") expect(error.details?.retryAfter).toBe(FREEZE_RETRY_AFTER_SECONDS);
    return error.code;
  }

  /** GitHub delivering an outsider's new issue: ✓ when recorded (202), else the refusal's code. */
  async function github(): Promise<string> {
    const id = 9_000_000 + w.next();
    const opened = structuredClone(examples.find((e) => e.name === "issues")!.examples.find((x) => x.action === "opened")!);
    Object.assign(opened.issue, { id, number: id % 100_000, title: `Outside ${id}`, body: "Please.", author_association: "NONE" });
    const response = await fetch(await githubDelivery(w.hook, w.hookSecret, "issues", opened));
    const text = await response.text();
    if (response.status === 202) return OK;
    if (response.status === 503 && codeOf(text) === "ORG_FROZEN") expect(response.headers.get("retry-after")).toBe(String(FREEZE_RETRY_AFTER_SECONDS));
    return codeOf(text) ?? `HTTP ${response.status}`;
  }

  /** Every table with an org_id: the org's row count and a checksum of its rows. */
  async function orgRows(): Promise<Record<string, string>> {
    const tables = await sql<{ relname: string }[]>`
      select c.relname from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = 'public' and c.relkind in ('r', 'p') and not c.relispartition
        and exists (select 1 from pg_attribute a where a.attrelid = c.oid and a.attname = 'org_id' and not a.attisdropped)
      order by 1`;
    const out: Record<string, string> = {};
    for (const { relname } of tables) {
      const [row] = await sql.unsafe(`select count(*)::int as n, md5(coalesce(string_agg(t::text, '|' order by t::text), '')) as sum from "${relname}" t where org_id = $1`, [w.orgId]);
      out[relname] = `${row!.n} ${row!.sum}`;
    }
    return out;
  }

  /** The org's background work all done: nothing in flight that could write during the freeze. */
  const settled = () =>
    waitFor(async () => ((await sql`select count(*)::int as n from outbox where org_id = ${w.orgId} and completed_at is null and failed_at is null`)[0]!.n === 0 ? true : undefined), 30_000, "the org's jobs");

  const freeze = async (frozen: boolean) => {
    await sql`update orgs set frozen_at = ${frozen ? sql`now()` : null} where id = ${w.orgId}`;
    // As org-freeze waits before printing its LSN: no instance's key cache still says otherwise.
    await new Promise((resolve) => setTimeout(resolve, frozen ? FREEZE_SETTLES_MS : KEY_CACHE_MS + 200));
  };

  test("every write door answers ORG_FROZEN and writes nothing; reads go on; unfrozen, they write again", async () => {
    const agent = (name: string, args: Record<string, unknown>) => mcp("agent", name, args);
    const create = async (title: string) => (await call(w.actors.owner.agent, "save_issue", { title, work: true, changeType: "feat", noDependency: "alone" })).structuredContent.identifier as string;
    // What the doors act on: a claimed issue (held), two open ones, and the org's jobs done.
    const held = await create(`held ${w.next()}`);
    const claim = await call(w.actors.owner.agent, "claim_issue", { identifier: held });
    const claimToken = claim.structuredContent.claimToken as string;
    const open = await create(`open ${w.next()}`);
    const other = await create(`other ${w.next()}`);
    await settled();

    /** Every write door, once; in an order that also works unfrozen (the release last). */
    const doors: [string, () => Promise<string>][] = [
      ["MCP next_issue", () => agent("next_issue", {})],
      ["MCP claim_issue", () => agent("claim_issue", { identifier: open })],
      ["MCP save_issue (create)", () => agent("save_issue", { title: `frozen ${w.next()}`, work: true, changeType: "feat", noDependency: "alone" })],
      ["MCP save_issue (update)", () => agent("save_issue", { identifier: other, priority: 1 })],
      ["MCP save_comment", () => agent("save_comment", { issue: other, body: "a comment" })],
      ["MCP (session key) save_comment", () => mcp("session", "save_comment", { issue: other, body: "a session's comment" })],
      ["MCP heartbeat", () => agent("heartbeat", { identifier: held, claimToken })],
      ["MCP checkpoint", () => agent("checkpoint", { identifier: held, claimToken, done: "the first half", next: "the second" })],
      ["MCP add_relation", () => agent("add_relation", { sourceId: other, targetId: held, type: "related" })],
      ["MCP save_label", () => agent("save_label", { name: `label-${w.next()}` })],
      ["MCP mint_session_key", () => agent("mint_session_key", {})],
      ["MCP invite_member", () => agent("invite_member", { role: "member", decided: true })],
      ["Dash new issue", () => dash("/dash/issues/new", { project: w.prefix, title: `dash ${w.next()}`, work: "work", changeType: "feat", dependency: "none", noDependency: "alone" })],
      ["Dash comment", () => dash(`/dash/issues/${other}`, { intent: "comment", body: "from the Dash" })],
      ["Dash edit", () => dash(`/dash/issues/${other}`, { intent: "reprioritize", priority: "2" })],
      ["Dash project", () => dash("/dash/settings/projects", { name: "Frozen", prefix: `F${w.next()}` })],
      ["Dash invite", () => dash("/dash/settings/members", { intent: "invite", role: "member" })],
      ["Dash mute", () => dash("/dash/settings/notifications", { intent: "mute", kind: "done" })],
      ["CLI project", () => cli("projects", { name: "Frozen", prefix: `C${w.next()}` })],
      ["CLI key", () => cli("keys", { action: "mint", runtime: "codex" })],
      ["CLI invite", () => cli("members", { action: "invite", role: "member" })],
      ["CLI connector", () => cli("connectors", { action: "add", provider: "github", repo: `acme/f${w.next()}`, project: w.prefix })],
      ["CLI billing cap", () => cli("billing", { action: "cap", monthlyUsd: 500 })],
      ["GitHub webhook", github],
      ["MCP release_issue", () => agent("release_issue", { identifier: held, claimToken })],
    ];

    await freeze(true);
    // A job of the org waiting in the outbox (a notification's test send): the runner leaves it.
    const [job] = await sql`insert into outbox (org_id, job, payload)
      values (${w.orgId}, 'notify.send', ${sql.json({ orgId: w.orgId, issueId: null, kind: "test", userId: w.people.owner.userId, channel: "email" })})
      returning id`;
    await sql`select pg_notify('retasc_outbox', '')`;
    const before = await orgRows();
    const refused: Record<string, string> = {};
    for (const [name, run] of doors) refused[name] = await run();
    expect(refused).toEqual(Object.fromEntries(doors.map(([name]) => [name, "ORG_FROZEN"])));
    // Reads go on.
    expect(await agent("get_issue", { identifier: held })).toBe(OK);
    expect(await agent("list_issues", {})).toBe(OK);
    expect((await fetch(`${w.url}/api/cli/members?orgId=${w.orgId}`, { headers: { authorization: `Bearer ${w.people.owner.token}` } })).status).toBe(200);
    // The runner looks for work meanwhile and takes nothing of the org's either: a job of another
    // org, queued after the frozen one, is taken, so a pass of the runner saw the frozen job and left it.
    const [sentinel] = await sql`insert into outbox (org_id, job, payload)
      values (${otherOrgId}, 'notify.send', ${sql.json({ orgId: otherOrgId, issueId: null, kind: "test", userId: w.people.owner.userId, channel: "email" })})
      returning id`;
    await sql`select pg_notify('retasc_outbox', '')`;
    await waitFor(async () => ((await sql`select 1 from outbox where id = ${sentinel!.id} and attempts > 0`).length ? true : undefined), 30_000, "the runner to take another org's job");
    expect(await orgRows()).toEqual(before);

    await freeze(false);
    const written: Record<string, string> = {};
    for (const [name, run] of doors) written[name] = await run();
    expect(written).toEqual(Object.fromEntries(doors.map(([name]) => [name, OK])));
    expect(await orgRows()).not.toEqual(before);
    // The job waited: it runs now (sent, or failed for want of an address: either way, run).
    await waitFor(async () => ((await sql`select 1 from outbox where id = ${job!.id} and (completed_at is not null or failed_at is not null)`).length ? true : undefined), 30_000, "the waiting job");
  }, 180_000);
});
