import { describe, expect, test } from "vitest";
import { testDirectUrl, testDriver } from "../server/testing/db.ts";
import { privatePostgresAvailable } from "./private-postgres.ts";
import { formatSwarm } from "./format.ts";
import { runSwarm } from "./run.ts";

/**
 * The swarm, small enough for CI: 12 agents in separate processes over /mcp on two app
 * instances (4 with a key each, 4 sharing one key, 4 subagents working the claims of their
 * orchestrators' next_batch from their own sessions), 150 issues in a random dependency graph, agent processes SIGKILLed mid-lease, an
 * app instance killed and restarted, PostgreSQL restarted, Redis stopped and started; then every
 * invariant of docs/reliability.md checked against the database. `npm run swarm` is the full size.
 */
describe.skipIf(testDriver !== "postgres" || !privatePostgresAvailable)("swarm (PostgreSQL)", () => {
  test("12 agents, 150 issues, 2 instances, kills and restarts: zero invariant violations", async () => {
    // Twice the default share of silent agents, so a small run still sees stale writes refused;
    // three times the default share of sibling probes, so some land while the sibling's lease is live.
    // When the suites run through a pooler (TEST_DATABASE_DIRECT_URL, .ci/run), so does the swarm.
    const pooler = testDirectUrl !== undefined;
    const result = await runSwarm({ agents: 12, issues: 150, instances: 2, minutes: 4, agentKills: 3, silentRate: 0.08, probeRate: 0.3, pooler, log: () => {} });
    process.stderr.write(`\n${formatSwarm(result)}\n`);
    if (result.check.violations.length > 0) process.stderr.write(`app output:\n${result.appOutput}\n`);
    expect(result.check.violations).toEqual([]);
    const f = result.check.figures;
    expect(f.finished).toBe(150);
    expect(result.faults).toMatchObject({ agentKills: 3, appKills: 1, postgresRestarts: 1 });
    // The run exercised what it claims to: expiries, stale writes, handoffs, the order check.
    expect(f.reclaims).toBeGreaterThan(0);
    expect(f.staleWritesRefused).toBeGreaterThan(0);
    expect(f.resumedAfterExpiry).toBeGreaterThan(0);
    expect(f.dispatchesChecked).toBe(f.claims);
    // Agents on one key are told apart by their sessions (decision 036): a third share a key, a
    // third work next_batch claims handed over by their orchestrators; siblings were refused.
    expect(result.agents).toEqual({ solo: 4, shared: 4, subagent: 4, orchestrator: 2 });
    expect(f.batchClaims).toBeGreaterThan(0);
    expect(f.siblingMismatches).toBeGreaterThan(0);
    expect(f).toMatchObject({ supersededAccepted: 0, siblingProbesAccepted: 0, staleWritesAccepted: 0 });
    // /metrics, scraped every few seconds from the apps (with the token; without it, 401) and the
    // workers (METRICS_PORT): every series the run exercises moved; not the gauges a scrape samples at
    // one instant, which a quick run can leave at 0 at every scrape: the outbox's depth (its jobs are
    // done within a second; server/metrics/outbox-gauges.test.ts counts it) and the pool's busy
    // connections (one batch of claims in flight per pool, decision 118; db/postgres-driver.test.ts
    // counts them). The webhook deliveries are an
    // outsider's unsigned one to each instance, refused (the intake's and billing's own tests
    // count accepted and duplicate ones).
    expect(result.metrics.withoutToken).toBe(401);
    expect(result.metrics.webhookProbes).toEqual([404, 404]);
    expect(result.metrics.moved).toEqual(
      expect.arrayContaining([
        "retasc_http_request_duration_seconds_count",
        "retasc_mcp_tool_duration_seconds_count",
        "retasc_mcp_tool_refusals_total",
        "retasc_claims_total",
        "retasc_stale_writes_refused_total",
        "retasc_dispatch_duration_seconds_count",
        "retasc_lease_expiries_recorded_total",
        "retasc_sweep_duration_seconds_count",
        "retasc_jobs_total",
        "retasc_issues",
        "retasc_webhook_deliveries_total",
      ]),
    );
  }, 420_000);

  test("verification on, a fake CI failing a seeded share of commits, poison issues: gated on passes, failures redone green, poison quarantined after K", async () => {
    // The project verifies finishes in CI: agents finish with a commit per claim, and the fake CI
    // attests each over POST /api/ci/verify with a CI key, red for a fifth of commits (at most two
    // per issue). Two poison issues, in a project of their own with quarantine_after 3, kill every
    // agent that takes them (swarm/agent-work.ts). Faults as above, fewer.
    const pooler = testDirectUrl !== undefined;
    const result = await runSwarm({
      agents: 9,
      issues: 80,
      instances: 2,
      minutes: 3,
      agentKills: 2,
      verify: { failRate: 0.2, maxFailures: 2 },
      poison: { issues: 2, quarantineAfter: 3 },
      pooler,
      log: () => {},
    });
    process.stderr.write(`\n${formatSwarm(result)}\n`);
    if (result.check.violations.length > 0) process.stderr.write(`app output:\n${result.appOutput}\n`);
    expect(result.check.violations).toEqual([]);
    const f = result.check.figures;
    // Every issue done and passed; each red run reopened its issue, which was dispatched again
    // (its next claim handed the failing check) and finished green in the end.
    expect(f.finished).toBe(80);
    expect(f.verification.passed).toBe(80);
    expect(result.ci!.failed).toBeGreaterThan(0);
    expect(f.verification.failed).toBe(f.verification.redispatched);
    expect(f.verification.failed).toBeGreaterThan(0);
    expect(f.verification.reopenedWithGotchas).toBeGreaterThan(0);
    expect(result.ci!.refused).toEqual([]);
    // No claim of an issue committed while a blocker was open, pending or failed.
    expect(f.verification.gatedClaims).toBeGreaterThan(0);
    expect(f.verification.claimsOnUnverifiedBlocker).toBe(0);
    // Each poison issue quarantined after exactly three abandoned claims, never claimed after.
    expect(f.quarantine).toMatchObject({ poison: 2, quarantined: 2, claims: 6, claimedAfter: 0 });
    expect(f.quarantine.died).toBeGreaterThan(0);
  }, 300_000);
});
