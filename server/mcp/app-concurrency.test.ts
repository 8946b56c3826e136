import postgres from "postgres";
import { expect, test } from "vitest";
import { testDriver } from "../testing/db.ts";
import { callOk, connectClient, useTwoInstances } from "./testing.ts";

/**
 * 200 MCP clients, each with its own session key, pulling from one project through two
 * app instances on one PostgreSQL: every issue is claimed exactly once.
 */
const CLIENTS = 200;
const ISSUES = 300;
const postgresOnly = testDriver !== "postgres";

// About 67 session keys per parent key: above the default cap, which is not under test here.
const sessionKeys = { SESSION_KEY_CAP: String(CLIENTS) };
const race = useTwoInstances(["SWM"], sessionKeys);

test.skipIf(postgresOnly)(`${CLIENTS} concurrent MCP clients over two app instances never claim an issue twice`, async () => {
  const endpoints = race.endpoints;
  const people = ["alice", "bob", "carol"] as const;
  const parents = await Promise.all(
    people.map((who, i) => connectClient(endpoints[i % 2]!, race.seeded.orgs.SWM!.people[who].key, { name: who })),
  );
  race.clients.push(...parents);

  for (let start = 0; start < ISSUES; start += 25) {
    await Promise.all(
      Array.from({ length: Math.min(25, ISSUES - start) }, (_, i) =>
        callOk(parents[(start + i) % 3]!, "save_issue", {
          title: `Swarm task ${start + i}`,
          work: true,
          changeType: "feat",
          noDependency: "independent",
          priority: ((start + i) % 4) + 1,
        }),
      ),
    );
  }

  const workers = await Promise.all(
    Array.from({ length: CLIENTS }, async (_, i) => {
      const { key } = await callOk(parents[i % 3]!, "mint_session_key");
      return connectClient(endpoints[i % 2]!, key, { name: `worker-${i}` });
    }),
  );
  race.clients.push(...workers);

  const claims: { identifier: string; fence: number; worker: number }[] = [];
  const refusals: string[] = [];
  await Promise.all(
    workers.map(async (worker, index) => {
      for (;;) {
        const reply = await callOk(worker, "next_issue");
        if (!reply.claimToken) {
          if (reply.ready === 0) return;
          continue;
        }
        claims.push({ identifier: reply.identifier, fence: reply.fence, worker: index });
        const finished = await worker.callTool({
          name: "save_issue",
          arguments: { identifier: reply.identifier, status: "done", claimToken: reply.claimToken },
        });
        if (finished.isError) refusals.push(JSON.stringify(finished.structuredContent));
      }
    }),
  );

  expect(refusals).toEqual([]);
  expect(claims).toHaveLength(ISSUES);
  expect(new Set(claims.map((c) => c.identifier)).size).toBe(ISSUES);
  expect(claims.every((c) => c.fence === 1)).toBe(true);
  expect(new Set(claims.map((c) => c.worker)).size).toBeGreaterThan(CLIENTS / 4);

  const status = await callOk(parents[0]!, "queue_status");
  expect(status.counts).toEqual({ done: ISSUES });
  expect(status.liveClaims).toEqual([]);

  const sql = postgres(race.seeded.env.DATABASE_DIRECT_URL ?? race.seeded.env.DATABASE_URL!, { max: 1, onnotice: () => {} });
  try {
    const doubled = await sql`select issue_id, count(*)::int as n from leases group by issue_id having count(*) > 1`;
    expect(doubled).toEqual([]);
    const [{ n }] = await sql`select count(*)::int as n from leases`;
    expect(n).toBe(ISSUES);
  } finally {
    await sql.end();
  }
});
