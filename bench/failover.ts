/**
 * `npm run bench:failover -- [--agents N] [--issues N] [--rounds N]`: the failover swarm of
 * server/queue/failover.test.ts at a larger size (issue 36 point 8, decision 095). Debian
 * PostgreSQL 15 clusters of its own (a primary and a synchronous streaming replica, behind
 * PgBouncer in transaction mode, on free ports of 127.0.0.1), agents claiming and finishing
 * through the service layer; each round stops the primary as in a crash when 40% of the issues
 * are finished, promotes the replica and repoints PgBouncer. Figures: violations (double claims,
 * lost finishes), the promotion's time and the first claim after the primary stopped. Beside
 * them, in the same run and at the same size, the baseline: the same swarm with no failover
 * (its wall time against the failover round's). Not in CI (the test runs a smaller one there).
 */
import { runFailover, type FailoverResult } from "../server/testing/failover.ts";
import { log, round } from "./lib/stats.ts";
import { wholeNumberOption } from "./lib/args.ts";

const option = (name: string, fallback: number) => wholeNumberOption(name, fallback);
const AGENTS = option("agents", 32);
const ISSUES = option("issues", 1_000);
const ROUNDS = option("rounds", 3);
const TTL = 4;

const line = (label: string, r: FailoverResult) =>
  log(
    `${label}: ${r.finishes} finishes, ${r.claims} claims, ${round(r.seconds, 1)} s; ` +
      (r.promotedMs ? `promoted in ${r.promotedMs} ms, first claim ${r.firstClaimMs} ms after the primary stopped, ${r.transportErrors} transport errors, ${r.unhandledConnectionErrors.length} connection errors postgres.js left unhandled; ` : "") +
      `violations ${r.violations.length}${r.violations.length ? `: ${r.violations.slice(0, 5).join("; ")}` : ""}`,
  );

log(`failover bench: ${AGENTS} agents, ${ISSUES} issues, lease ${TTL} s, ${ROUNDS} round(s)`);
const baseline = await runFailover({ agents: AGENTS, issues: ISSUES, failAt: null, leaseTtlSeconds: TTL });
line("baseline (no failover)", baseline);
let failed = baseline.violations.length > 0;
const firstClaims: number[] = [];
for (let i = 0; i < ROUNDS; i++) {
  const result = await runFailover({ agents: AGENTS, issues: ISSUES, failAt: 0.4, leaseTtlSeconds: TTL });
  line(`round ${i + 1} (failover at 40%)`, result);
  for (const e of new Set(result.unhandledConnectionErrors)) log(`  left unhandled by postgres.js: ${e}`);
  firstClaims.push(result.firstClaimMs);
  if (result.violations.length > 0 || result.firstClaimMs >= 30_000) failed = true;
}
log(`first claim after the primary stopped: ${firstClaims.join(", ")} ms (target under 30,000); baseline wall ${round(baseline.seconds, 1)} s`);
process.exit(failed ? 1 : 0);
