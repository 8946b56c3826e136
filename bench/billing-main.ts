/**
 * `npx tsx bench/billing-main.ts [--jobs N] [--agents N]`: claim + fenced finish per second with
 * billing on beside billing off, in one run (bench/billing.ts); exits 1 below the 0.85x target.
 */
import { useBenchPostgres } from "./lib/postgres-env.ts";
import { log, round } from "./lib/stats.ts";
import { wholeNumberOption } from "./lib/args.ts";

const option = (name: string, fallback: number) => wholeNumberOption(name, fallback);
useBenchPostgres();
// Imported once the database is chosen: server/testing/db.ts reads it at import.
const { billingThroughput, BILLING_TARGET } = await import("./billing.ts");
const result = await billingThroughput({ jobs: option("jobs", 2_000), agents: option("agents", 32) });
const ratio = result.on / result.off;
log(
  `claim + fenced finish, ${result.agents} agents, ${result.jobs} issues a round: billing off ${round(result.off, 1)}/s, ` +
    `on ${round(result.on, 1)}/s: ${round(ratio, 2)}x (target >= ${BILLING_TARGET}x) ${ratio >= BILLING_TARGET ? "PASS" : "FAIL"}`,
);
log(`rounds: off ${result.rates.off.map((r) => round(r, 1)).join(", ")}; on ${result.rates.on.map((r) => round(r, 1)).join(", ")}`);
process.exit(ratio >= BILLING_TARGET ? 0 : 1);
