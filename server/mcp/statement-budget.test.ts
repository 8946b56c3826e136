import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { openPostgres, type Database } from "../../db/client.ts";
import type { Services } from "../context.ts";
import { forgetCachedKeys, KEY_CACHE_MS } from "../orgs/key-cache.ts";
import { renewalIntervalMs } from "../queue/session-renewal.ts";
import { createTestDatabase, servicesFor, TestClock, testConfig, testDriver, type TestDatabase } from "../testing/db.ts";
import { seedOrg, type SeededOrg } from "../testing/fixtures.ts";
import { callOk, connectClient, inProcessFetch, inProcessOrigin } from "./testing.ts";

/**
 * What one agent call costs PostgreSQL, held to a budget (issue 30; docs/operations.md, "Statements
 * per call"): every statement the call sends, from the key's lookup to the notices sent after
 * its commit, BEGIN and COMMIT included, counted on the wire as postgres.js sends them. Named
 * prepared statements make each one round trip once warm (db/client.ts), so on a warm
 * connection statements are round trips. A feature that adds a statement to the hot path fails
 * here until the budget below is raised on purpose, with docs/operations.md.
 */
const budget = {
  // The key's lookup, retasc_next_issues() (the claim with its wave and the session's other claims,
  // decision 080), the notices after commit.
  next_issue: 3,
  // The key's lookup, the one statement that renews the lease and logs it (decision 072), the
  // notices. It was 8 with a transaction of four statements (the issue read, two updates, an insert).
  heartbeat: 3,
  // The key's lookup, the finishing function, the notices after commit.
  finish: 3,
  // The key's lookup and the issue view's statements.
  read: 3,
  // The read, plus the renewal of the session's leases in a transaction of its own (decision 036).
  renewingRead: 7,
};

/**
 * save_issue {priority} (issue 30): the key's lookup, BEGIN, the graph lock, the issue's locked read
 * with the re-rank's read beside it, the issue's one write (its ranking in it, returned for the
 * reply), the activity entry, the view's reads, COMMIT, the notices. An issue blocking others adds
 * the one write of its blockers' ranking. It was 11 without the key's lookup: the issue was written
 * twice and read back.
 */
const priorityBudget = { standalone: 10, blocking: 11 };

const LEASE_SECONDS = 600;
const clock = new TestClock();
let testDb: TestDatabase;
let counted: Database;
let services: Services;
let org: SeededOrg;
let agent: Client;
let sent: string[] = [];

beforeAll(async () => {
  if (testDriver !== "postgres") return;
  testDb = await createTestDatabase();
  counted = await openPostgres(testDb.url!, { max: 10, directUrl: testDb.directUrl, onStatement: (text) => sent.push(text) });
  services = servicesFor(counted, { clock, config: testConfig({ LEASE_TTL_SECONDS: String(LEASE_SECONDS) }) });
  org = await seedOrg(services, { prefix: "STMT" });
  agent = await connectClient(`${inProcessOrigin}/mcp`, org.agents.alice.key, { fetch: inProcessFetch(services) });
});
afterAll(async () => {
  await agent?.close().catch(() => {});
  await counted?.close();
  await testDb?.close();
});

/** The statements one call sends, its after-commit notices included (they leave within a tick or two). */
async function statementsOf(call: () => Promise<unknown>, { keyCached = false } = {}): Promise<string[]> {
  await settle();
  // Measured cold unless asked: the key's lookup is in every budget (decision 078).
  if (!keyCached) forgetCachedKeys();
  sent = [];
  await call();
  await settle();
  return sent;
}
// A fixed wait past the notices' batching (20 ms) and their statement: a call may send none, so
// there is nothing to wait for.
const settle = () => new Promise((resolve) => setTimeout(resolve, 150));
const task = (title: string) => ({ title, work: true, changeType: "feat", noDependency: "statement budget" });

/** One claim, heartbeat, renewing read and finish, each measured; the first round warms the prepared statements. */
async function cycle(n: number) {
  const issue = await callOk(agent, "save_issue", task(`cycle ${n}`));
  const costs: Record<keyof typeof budget, string[]> = { next_issue: [], heartbeat: [], finish: [], renewingRead: [], read: [] };
  let claim: Record<string, any> = {};
  costs.next_issue = await statementsOf(async () => (claim = await callOk(agent, "next_issue")));
  expect(claim.issue?.identifier ?? claim.identifier).toBe(issue.identifier);
  costs.heartbeat = await statementsOf(() => callOk(agent, "heartbeat", { identifier: issue.identifier, claimToken: claim.claimToken }));
  costs.read = await statementsOf(() => callOk(agent, "get_issue", { identifier: issue.identifier }));
  // Past the renewal interval this session's next call renews its leases (decision 036).
  clock.advance(renewalIntervalMs(LEASE_SECONDS * 1000) + 1);
  costs.renewingRead = await statementsOf(() => callOk(agent, "get_issue", { identifier: issue.identifier }));
  costs.finish = await statementsOf(() => callOk(agent, "save_issue", { identifier: issue.identifier, status: "done", claimToken: claim.claimToken }));
  return costs;
}

describe.skipIf(testDriver !== "postgres")("statements per agent call (needs TEST_DATABASE_URL)", () => {
  test("next_issue, heartbeat, a read, a session-renewing read and the finish each stay within their budget", async () => {
    await cycle(0);
    const costs = await cycle(1);
    const counts = Object.fromEntries(Object.entries(costs).map(([call, statements]) => [call, statements.length]));
    process.stdout.write(`statements per call: ${JSON.stringify(counts)}\n`);
    for (const [call, statements] of Object.entries(costs)) {
      expect(statements.length, `${call} sent:\n${statements.map((s) => `  ${s.replace(/\s+/g, " ").slice(0, 160)}`).join("\n")}`).toBeLessThanOrEqual(budget[call as keyof typeof budget]);
    }
    // A renewing read costs the read and the renewal's own statement(s), not every read.
    expect(costs.renewingRead.length).toBeGreaterThan(costs.read.length);
  });

  test("next_issue while the session holds another claim: its activeClaims and wave come in the claim's statement", async () => {
    const held = await callOk(agent, "save_issue", task("held first"));
    const next = await callOk(agent, "save_issue", task("claimed beside it"));
    const holding = await callOk(agent, "claim_issue", { identifier: held.identifier });
    let claim: Record<string, any> = {};
    // It was 4: the session's other claims were read by a statement of their own.
    const statements = await statementsOf(async () => (claim = await callOk(agent, "next_issue")));
    expect(claim).toMatchObject({ identifier: next.identifier, otherClaims: 1, activeClaims: [held.identifier], wave: [] });
    expect(statements.length).toBeLessThanOrEqual(budget.next_issue);
    for (const [identifier, claimToken] of [[held.identifier, holding.claimToken], [next.identifier, claim.claimToken]]) {
      await callOk(agent, "save_issue", { identifier, status: "done", claimToken });
    }
  });

  test("save_issue {priority}, on an issue alone and on one with a blocker, stays within its budget", async () => {
    const alone = await callOk(agent, "save_issue", task("priority alone"));
    const top = await callOk(agent, "save_issue", task("blocks the bottom"));
    const bottom = await callOk(agent, "save_issue", { title: "blocked by the top", work: true, changeType: "feat", blockedBy: [top.identifier] });
    for (const priority of [1, 4]) await callOk(agent, "save_issue", { identifier: bottom.identifier, priority });
    const standalone = await statementsOf(() => callOk(agent, "save_issue", { identifier: alone.identifier, priority: 1 }));
    let changed: Record<string, any> = {};
    const blocking = await statementsOf(async () => (changed = await callOk(agent, "save_issue", { identifier: bottom.identifier, priority: 1 })));
    const list = (statements: string[]) => statements.map((s) => `  ${s.replace(/\s+/g, " ").slice(0, 160)}`).join("\n");
    expect(standalone.length, `sent:\n${list(standalone)}`).toBeLessThanOrEqual(priorityBudget.standalone);
    expect(blocking.length, `sent:\n${list(blocking)}`).toBeLessThanOrEqual(priorityBudget.blocking);
    // Its blocker was re-ranked with it: the urgency flowed up.
    expect(changed.priority).toBe(1);
    expect((await callOk(agent, "get_issue", { identifier: top.identifier })).effectiveLevel).toBe(changed.effectiveLevel);
  });

  test("a call within KEY_CACHE_MS of the key's last lookup sends no lookup of its own", async () => {
    const issue = await callOk(agent, "save_issue", task("cached key"));
    const cold = await statementsOf(() => callOk(agent, "get_issue", { identifier: issue.identifier }));
    // The test's clock stands still, so the lookup just made is fresh.
    const warm = await statementsOf(() => callOk(agent, "get_issue", { identifier: issue.identifier }), { keyCached: true });
    const lookups = (statements: string[]) => statements.filter((s) => /from "agent_keys"/.test(s)).length;
    expect(lookups(cold)).toBe(1);
    expect(lookups(warm)).toBe(0);
    expect(warm.length).toBe(cold.length - 1);
    clock.advance(KEY_CACHE_MS);
    expect(lookups(await statementsOf(() => callOk(agent, "get_issue", { identifier: issue.identifier }), { keyCached: true }))).toBe(1);
  });
});
