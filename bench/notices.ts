/**
 * `npx tsx bench/notices.ts [--clients 16] [--seconds 8]` (PostgreSQL; about a minute): the write
 * paths that publish a change event (heartbeat, checkpoint, a comment), 16 clients in a loop each
 * on an issue it holds, three ways in one run:
 *   - as shipped: the event leaves after commit (transactionWithNotices, decision of issue 36);
 *   - the baseline: the same transactions publishing nothing at all;
 *   - the old way, for comparison: NOTIFY inside the transaction (the global notify lock held
 *     through each commit's flush).
 * Target: as shipped at least 0.9x the baseline. Each figure is the mean of a run before and one
 * after the others, so drifting machine load favours none.
 */
import { sql } from "drizzle-orm";
import type { Ctx, EventPublisher } from "../server/context.ts";
import { EVENTS_CHANNEL, notifyPublisher } from "../server/events/index.ts";
import { saveComment } from "../server/issues/comments.ts";
import { saveIssue } from "../server/issues/index.ts";
import { checkpoint, claimIssue, heartbeat } from "../server/queue/index.ts";
import { wholeNumberOption } from "./lib/args.ts";
import { makeAgents, openBenchDatabase } from "./lib/env.ts";
import { useBenchPostgres } from "./lib/postgres-env.ts";
import { log, round } from "./lib/stats.ts";

const CLIENTS = wholeNumberOption("clients", 16);
const SECONDS = wholeNumberOption("seconds", 8);
const TARGET = 0.9;

useBenchPostgres();
const bench = await openBenchDatabase({ pools: 1, connectionsPerPool: CLIENTS + 2, prefix: "NTC" });

const silent: EventPublisher = { publish: async () => {} };
const inside: EventPublisher = {
  async publish(tx, event) {
    await tx.execute(sql`select pg_notify(${EVENTS_CHANNEL}, ${JSON.stringify(event)})`);
  },
};
const publishers = { "after commit (as shipped)": notifyPublisher, "no notice (baseline)": silent, "inside the transaction (old)": inside };
type Way = keyof typeof publishers;

try {
  const agents = await makeAgents(bench, CLIENTS);
  const held = await Promise.all(
    agents.map(async (agent, i) => {
      const issue = await saveIssue(agent, { title: `Notices ${i}`, work: true, changeType: "feat", noDependency: "bench" });
      const claim = await claimIssue(agent, { identifier: issue.identifier });
      return { agent, identifier: issue.identifier, claimToken: claim.claimToken };
    }),
  );
  const writes = {
    heartbeat: (ctx: Ctx, h: (typeof held)[number]) => heartbeat(ctx, { identifier: h.identifier, claimToken: h.claimToken }),
    checkpoint: (ctx: Ctx, h: (typeof held)[number], n: number) => checkpoint(ctx, { identifier: h.identifier, claimToken: h.claimToken, done: `step ${n}` }),
    comment: (ctx: Ctx, h: (typeof held)[number], n: number) => saveComment(ctx, { issue: h.identifier, body: `note ${n}` }),
  };
  type Write = keyof typeof writes;

  async function rate(way: Way, write: Write): Promise<number> {
    const until = performance.now() + SECONDS * 1000;
    let done = 0;
    await Promise.all(
      held.map(async (h) => {
        const ctx: Ctx = { ...h.agent, events: publishers[way] };
        for (let n = 0; performance.now() < until; n++) {
          await writes[write](ctx, h, n);
          done++;
        }
      }),
    );
    return done / SECONDS;
  }

  const rows: string[] = [];
  for (const write of Object.keys(writes) as Write[]) {
    const ways = Object.keys(publishers) as Way[];
    const first: Record<string, number> = {};
    for (const way of ways) first[way] = await rate(way, write);
    const figures: Record<string, number> = {};
    for (const way of [...ways].reverse()) figures[way] = (first[way]! + (await rate(way, write))) / 2;
    const base = figures["no notice (baseline)"]!;
    const shipped = figures["after commit (as shipped)"]!;
    const old = figures["inside the transaction (old)"]!;
    log(`notices: ${write} done`);
    rows.push(
      `| ${write} | ${round(shipped, 0)}/s | ${round(base, 0)}/s | ${round(old, 0)}/s | ${round(shipped / base, 2)}x: ${shipped / base >= TARGET ? "PASS" : "FAIL"} | ${round(old / base, 2)}x |`,
    );
  }
  process.stdout.write(
    [
      "",
      `| write (${CLIENTS} clients, ${SECONDS} s each way, twice) | after commit | no notice | inside the transaction | after commit / none (>= ${TARGET}x) | inside / none |`,
      "|---|---|---|---|---|---|",
      ...rows,
      "",
    ].join("\n"),
  );
} finally {
  await bench.close();
}
