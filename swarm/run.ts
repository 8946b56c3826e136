import type { ChildProcess } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { sql } from "drizzle-orm";
import { query } from "../db/client.ts";
import { seededRandom } from "../bench/lib/stats.ts";
import { boot, type Booted } from "../server/boot.ts";
import { loadConfig } from "../server/config/index.ts";
import { mintAgentKey } from "../server/orgs/index.ts";
import { FakeCi } from "./fake-ci.ts";
import { freePort, startApp, type AppProcess } from "../server/testing/app-process.ts";
import { MetricsWatch } from "./metrics.ts";
import { PrivatePgBouncer } from "../server/testing/pgbouncer.ts";
import { PrivateRedis, redisServerAvailable } from "../server/testing/redis.ts";
import type { AgentProcessConfig } from "./agent-spec.ts";
import { checkInvariants } from "./checker.ts";
import { scheduleFaults } from "./faults.ts";
import { PrivatePostgres } from "./private-postgres.ts";
import { killHard, sleep, spawned, spawnEntry, stopGently } from "./processes.ts";
import { appendAfterKill, readRecords } from "./records.ts";
import { seedSwarm } from "./seed-swarm.ts";
import type { SwarmOptions, SwarmResult } from "./options.ts";
import { attributeTransportFailures, type Outage } from "./transport.ts";

/**
 * The swarm: N app instances (the built app, as tests start it) and worker processes on a
 * private PostgreSQL (and a private Redis), an org seeded with a random dependency graph, and
 * agent processes working it over /mcp while faults are injected: agent processes SIGKILLed
 * mid-lease and replaced, an app instance killed and restarted, PostgreSQL restarted, Redis
 * stopped and started. Faults are keyed to progress (share of issues finished) so they land
 * while work remains, however fast the machine is (swarm/faults.ts). Then the invariant checker
 * reads it all (swarm/checker.ts); swarm/format.ts prints the result.
 * A third of the agents share one key and another third are next_batch subagents working their
 * orchestrator's claims from their own sessions (decision 036): a key is never the holder.
 */
export async function runSwarm(options: SwarmOptions): Promise<SwarmResult> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const seed = options.seed ?? crypto.randomInt(2 ** 31);
  const random = seededRandom(seed);
  const ttlSeconds = options.leaseTtlSeconds ?? 3;
  const perProcess = options.agentsPerProcess ?? 8;
  const useRedis = (options.redis ?? true) && redisServerAvailable;
  const runDir = fs.mkdtempSync(path.join(os.tmpdir(), "retasc-swarm-"));
  const cleanups: (() => Promise<void> | void)[] = [];
  const faults = { agentKills: 0, appKills: 0, postgresRestarts: 0, redisRestarts: 0, faultErrors: [] as string[] };
  const outages: Outage[] = [];
  let apps: (AppProcess | null)[] = [];
  let booted: Booted | null = null;
  const agentProcs: { child: ChildProcess; output: () => string }[] = [];
  let postgres: PrivatePostgres | null = null;
  let redis: PrivateRedis | null = null;
  // Ctrl-C (or a SIGTERM) must not leave app instances, agents or the private servers behind.
  const abort = () => {
    for (const child of [...agentProcs.map((p) => p.child), ...apps.map((a) => a?.child), ...spawned]) child?.kill("SIGKILL");
    void redis?.stop();
    postgres?.close();
    process.exit(130);
  };
  process.once("SIGINT", abort);
  process.once("SIGTERM", abort);

  try {
    log(`swarm: seed ${seed}, ${options.agents} agents, ${options.issues} issues, ${options.instances} instances, lease ${ttlSeconds}s, ${useRedis ? "private Redis + worker processes" : "inline workers"}${options.pooler ? ", through PgBouncer (transaction mode)" : ""}; logs in ${runDir}`);
    postgres = await PrivatePostgres.start();
    const pg = postgres;
    cleanups.push(() => pg.close());
    const directUrl = await postgres.createDatabase("retasc_swarm");
    const bouncer = options.pooler ? await PrivatePgBouncer.start(pg.port) : null;
    if (bouncer) cleanups.push(() => bouncer.close());
    const databaseEnv: Record<string, string> = bouncer
      ? { DATABASE_URL: bouncer.url("retasc_swarm"), DATABASE_DIRECT_URL: directUrl }
      : { DATABASE_URL: directUrl };
    redis = useRedis ? await PrivateRedis.start() : null;
    const privateRedis = redis;
    if (privateRedis) cleanups.push(() => privateRedis.close());

    const metricsToken = crypto.randomBytes(24).toString("base64url");
    const env: Record<string, string> = {
      ...databaseEnv,
      METRICS_TOKEN: metricsToken,
      RETASC_MASTER_KEY: crypto.randomBytes(32).toString("base64"),
      LEASE_TTL_SECONDS: String(ttlSeconds),
      RECLAIM_SWEEP_MS: "1000",
      OUTBOX_POLL_MS: "1000",
      LOG_LEVEL: "warn",
      // One key is shared by a third of the agents, each holding one lease at a time, plus a killed process's until they lapse.
      CLAIM_CAP_DEFAULT: String(Math.max(7, 2 * Math.floor(options.agents / 3) + 1)),
      ...(redis ? { REDIS_URL: redis.url, BULLMQ_PREFIX: `swarm${seed}`, RETASC_WORKERS: "off" } : { RETASC_WORKERS: "inline" }),
    };

    // Seed the org, its keys and its graph (swarm/seed-swarm.ts).
    // The harness (seeding, the invariant check) reads the database directly; the apps and workers go through the pooler.
    booted = await boot(loadConfig({ ...env, DATABASE_URL: directUrl, DATABASE_DIRECT_URL: "", NODE_ENV: "test" }), { warn: () => {}, poolSize: 6 });
    const { services } = booted;
    const { org, groups, agents, seededPriority, poison, poisonCount, quarantineAfter } = await seedSwarm(services, options, perProcess, random, log);

    // App instances on fixed ports (a restarted instance comes back where agents expect it), then workers.
    const ports = await Promise.all(Array.from({ length: options.instances }, () => freePort()));
    apps = await Promise.all(ports.map((port) => startApp(env, { port, timeoutMs: 120_000 })));
    const endpoints = ports.map((port) => `http://127.0.0.1:${port}/mcp`);
    let ci: FakeCi | null = null;
    if (options.verify) {
      const { key } = await mintAgentKey(services.db, { orgId: org.orgId, userId: org.agents.alice.userId, runtime: "ci", projectId: org.projectId, ci: true });
      ci = new FakeCi({
        db: services.db,
        orgId: org.orgId,
        projectId: org.projectId,
        bases: ports.map((port) => `http://127.0.0.1:${port}`),
        ciKey: key,
        seed,
        failRate: options.verify.failRate ?? 0.2,
        maxFailures: options.verify.maxFailures ?? 2,
      });
    }
    // Job and sweep series live in the worker processes: each serves them on its own METRICS_PORT.
    const workerMetricsPorts = redis ? await Promise.all([freePort(), freePort()]) : [];
    const workers = workerMetricsPorts.map((port) => spawnEntry("workers/main.ts", { ...env, METRICS_PORT: String(port) }));
    const watch = new MetricsWatch(metricsToken);
    const metricsTargets = () => [
      ...ports.map((port, i) => ({ name: `app-${i}`, url: `http://127.0.0.1:${port}/metrics`, bearer: true })),
      ...workerMetricsPorts.map((port, i) => ({ name: `worker-${i}`, url: `http://127.0.0.1:${port}/metrics`, bearer: false })),
    ];
    await watch.checkRefusal(`http://127.0.0.1:${ports[0]}/metrics`);
    spawned.push(...workers.map((w) => w.child));
    cleanups.push(async () => {
      await Promise.all(workers.map((w) => stopGently(w.child)));
    });

    // Agent processes: slots in groups; a killed process is replaced by a new generation on the same keys.
    const logFiles: string[] = [];
    const logFileOf: string[] = [];
    let generation = 0;
    const launch = (group: number) => {
      const proc = `agents-${group}-${generation++}`;
      const logFile = path.join(runDir, `${proc}.jsonl`);
      logFiles.push(logFile);
      logFileOf[group] = logFile;
      const config: AgentProcessConfig = {
        endpoints,
        agents: groups[group]!,
        proc,
        logFile,
        ttlMs: ttlSeconds * 1000,
        silentRate: options.silentRate ?? 0.04,
        releaseRate: options.releaseRate ?? 0.03,
        probeRate: options.probeRate ?? 0.1,
        ...(options.verify ? { verify: { seed } } : {}),
        ...(poisonCount > 0 ? { poisonPrefix: "PSN-" } : {}),
      };
      agentProcs[group] = spawnEntry("swarm/agent.ts", { SWARM_AGENT_CONFIG: JSON.stringify(config) });
    };
    groups.forEach((_, g) => launch(g));
    /** Kills a group's process and writes down when: its sessions make no call after that. */
    const killAgents = async (group: number) => {
      await killHard(agentProcs[group]!.child);
      appendAfterKill(logFileOf[group]!, { t: "killed", proc: path.basename(logFileOf[group]!, ".jsonl"), at: Date.now() });
    };

    // Faults, keyed to progress.
    const schedule = scheduleFaults({
      options,
      random,
      groups: groups.length,
      killAgents,
      launch,
      apps,
      endpoints,
      env,
      pg,
      redis: privateRedis,
      faults,
      outages,
    });

    const started = Date.now();
    const deadline = started + options.minutes * 60_000;
    const running: Promise<void>[] = [];
    let done = 0;
    let lastReport = 0;
    let lastScrape = 0;
    let ciTick: Promise<void> | null = null;
    while (done < options.issues && Date.now() < deadline) {
      await sleep(250);
      if (ci && !ciTick) ciTick = ci.tick().finally(() => (ciTick = null));
      if (Date.now() - lastScrape > 3_000) {
        lastScrape = Date.now();
        running.push(watch.sample(metricsTargets()));
      }
      try {
        // Finished is done, and with verification on, passed: a pending or failed finish is work still to do.
        const rows = await query<{ n: number }>(
          services.db,
          sql`select count(*)::int as n from issues where org_id = ${org.orgId} and project_id = ${org.projectId} and status = 'done'
                and ${options.verify ? sql`verification = 'passed'` : sql`true`}`,
        );
        done = Number(rows[0]?.n ?? 0);
      } catch {
        continue; // PostgreSQL is restarting
      }
      while (schedule.length > 0 && done / options.issues >= schedule[0]!.at) {
        const fault = schedule.shift()!;
        log(`swarm: ${Math.round((100 * done) / options.issues)}% done: ${fault.name}`);
        running.push(fault.run().catch((error: unknown) => void faults.faultErrors.push(`${fault.name}: ${String(error).slice(0, 500)}`)));
      }
      if (Date.now() - lastReport > 10_000) {
        lastReport = Date.now();
        log(`swarm: ${done}/${options.issues} done after ${Math.round((Date.now() - started) / 1000)}s`);
      }
    }
    const seconds = (Date.now() - started) / 1000;
    log(`swarm: ${done}/${options.issues} done in ${seconds.toFixed(1)}s; stopping`);
    await Promise.all(running);
    await ciTick;
    await ci?.settle();
    await watch.probeWebhooks(ports.map((port) => `http://127.0.0.1:${port}`));
    // A silent agent writes with its stale token up to two lease lifetimes after its claim, maybe
    // after the last issue was finished: those writes must be refused too, so wait for them.
    await sleep(2 * ttlSeconds * 1000 + 500);
    await watch.sample(metricsTargets());
    await Promise.all(groups.map((_, g) => killAgents(g)));
    const appOutput = apps.map((a) => a?.output().slice(-6_000) ?? "").join("\n---\n");
    await Promise.all(apps.map((a) => a?.stop()));
    apps = [];

    const records = readRecords(logFiles);
    const check = await checkInvariants({ db: services.db, keyring: services.keyring, orgId: org.orgId, ttlMs: ttlSeconds * 1000, records, seededPriority, poison });
    if (done < options.issues) check.violations.unshift(`[time] only ${done} of ${options.issues} issues were finished within ${options.minutes} minutes`);
    for (const error of faults.faultErrors) check.violations.push(`[fault] fault injection failed: ${error}`);
    for (const refusal of ci?.report().refused ?? []) check.violations.push(`[fake-ci] an attestation was refused: ${refusal}`);
    const transport = attributeTransportFailures(records, outages);
    return {
      check,
      agents,
      seconds,
      issuesPerSecond: done / seconds,
      faults,
      seed,
      appOutput,
      metrics: watch.report(),
      transport,
      ...(ci ? { ci: ci.report() } : {}),
      ...(poisonCount > 0 ? { poison: { issues: poisonCount, quarantineAfter } } : {}),
    };
  } finally {
    process.off("SIGINT", abort);
    process.off("SIGTERM", abort);
    await Promise.all(agentProcs.map((p) => killHard(p.child)));
    await Promise.all(apps.map((a) => a?.stop()));
    await booted?.close().catch(() => {});
    for (const cleanup of cleanups.reverse()) await cleanup();
    if (!process.env.SWARM_KEEP_LOGS) fs.rmSync(runDir, { recursive: true, force: true });
  }
}
