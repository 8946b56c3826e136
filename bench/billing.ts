/**
 * Run by bench/billing-main.ts. Claim + fenced finish per second through
 * the service layer (as bench/throughput.ts) with billing off and with billing on, in the same
 * run, on the same database, alternating off / on / off / on so drifting machine load favours
 * neither. Billing on charges every claim (dispatch) and every finish (bookkeeping) inside its
 * statement (retasc_charge); the target is at least 0.85x of off.
 */
import { sql } from "drizzle-orm";
import { query } from "../db/client.ts";
import type { Ctx } from "../server/context.ts";
import { withPrincipal } from "../server/with-principal.ts";
import { saveIssue } from "../server/issues/index.ts";
import { nextIssue } from "../server/queue/index.ts";
import { billingOnConfig } from "../server/usage/testing.ts";
import { makeAgents, openBenchDatabase, type BenchDatabase } from "./lib/env.ts";
import { seedGraph } from "./lib/seed.ts";
import { log } from "./lib/stats.ts";

export const BILLING_TARGET = 0.85;

async function agent(ctx: Ctx): Promise<number> {
  let finished = 0;
  for (;;) {
    const reply = await nextIssue(ctx, {});
    if (!("claimToken" in reply)) {
      if (reply.ready === 0) return finished;
      continue;
    }
    await saveIssue(ctx, { identifier: reply.identifier, status: "done", claimToken: reply.claimToken });
    finished++;
  }
}

async function run(bench: BenchDatabase, agents: Ctx[], jobs: number, label: string) {
  const start = Date.now() - jobs * 1000;
  await seedGraph(
    bench.pools[0]!,
    { ...bench.org, authorId: bench.org.agents.alice.userId },
    {
      issues: Array.from({ length: jobs }, (_, i) => ({
        title: `Billing bench ${label} ${i}`,
        priority: i % 5,
        dueAt: null,
        assigneeId: null,
        createdAt: new Date(start + i * 1000),
      })),
      edges: [],
    },
    new Date(),
  );
  const t0 = performance.now();
  const counts = await Promise.all(agents.map(agent));
  const ms = performance.now() - t0;
  const finished = counts.reduce((a, b) => a + b, 0);
  if (finished !== jobs) throw new Error(`${label}: finished ${finished} of ${jobs}`);
  // The next round numbers its issues from 1 again (leases, checkpoints and the rest cascade).
  await query(bench.pools[0]!.db, sql`delete from issues where org_id = ${bench.org.orgId}`);
  return (jobs / ms) * 1000;
}

export async function billingThroughput(options: { jobs: number; agents: number }) {
  const bench = await openBenchDatabase({ pools: 2, connectionsPerPool: Math.ceil(options.agents / 2), prefix: "BILL" });
  try {
    const off = await makeAgents(bench, options.agents);
    const onConfig = billingOnConfig();
    const on = off.map((ctx) => withPrincipal({ ...ctx, config: onConfig }, ctx.principal));
    // Enough credit that no claim is refused: the bench measures charging, not refusals.
    await query(
      bench.pools[0]!.db,
      sql`select retasc_add_credit(${bench.org.orgId}::text, 'given', ${1_000_000_000_000}::bigint, 'bench', 'bench', null, now())`,
    );
    const warm = Math.max(options.agents * 2, 64);
    await run(bench, off, warm, "warm-off");
    await run(bench, on, warm, "warm-on");
    const rates = { off: [] as number[], on: [] as number[] };
    for (const pass of [1, 2]) {
      log(`billing: off, round ${pass}`);
      rates.off.push(await run(bench, off, options.jobs, `off-${pass}`));
      log(`billing: on, round ${pass}`);
      rates.on.push(await run(bench, on, options.jobs, `on-${pass}`));
    }
    const [charges] = await query<{ n: number }>(bench.pools[0]!.db, sql`select count(*)::int as n from billing_charges`);
    // Two charges per claim and finish with billing on (warm-up included), none with it off.
    if (charges!.n !== 2 * (warm + 2 * options.jobs)) throw new Error(`expected ${2 * (warm + 2 * options.jobs)} charges, found ${charges!.n}`);
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    return { jobs: options.jobs, agents: options.agents, off: mean(rates.off), on: mean(rates.on), rates };
  } finally {
    await bench.close();
  }
}
