import { spawn, type ChildProcess } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { sql } from "drizzle-orm";
import { query } from "../db/client.ts";
import { seedGraph, type SeedGraph } from "../bench/lib/seed.ts";
import { seededRandom } from "../bench/lib/stats.ts";
import { boot, type Booted } from "../server/boot.ts";
import { loadConfig } from "../server/config/index.ts";
import { seedOrg } from "../server/testing/fixtures.ts";
import { createProject, mintAgentKey } from "../server/orgs/index.ts";
import { setVerificationCommand } from "../server/verification/settings.ts";
import { FakeCi, type FakeCiFigures } from "./fake-ci.ts";
import { cleanEnv, freePort, startApp, type AppProcess } from "../server/testing/app-process.ts";
import { entryArgs, type Entry } from "../server/testing/entry-bundle.ts";
import { MetricsWatch, type MetricsReport } from "./metrics.ts";
import { PrivatePgBouncer } from "../server/testing/pgbouncer.ts";
import { PrivateRedis, redisServerAvailable } from "../server/testing/redis.ts";
import type { AgentProcessConfig, AgentSpec, Role } from "./agent.ts";
import { checkInvariants, type CheckResult } from "./checker.ts";
import { PrivatePostgres } from "./private-postgres.ts";
import { appendAfterKill, readRecords } from "./records.ts";
import { attributeTransportFailures, type Outage, type TransportFigures } from "./transport.ts";

/**
 * The swarm: N app instances (the built app, as tests start it) and worker processes on a
 * private PostgreSQL (and a private Redis), an org seeded with a random dependency graph, and
 * agent processes working it over /mcp while faults are injected: agent processes SIGKILLed
 * mid-lease and replaced, an app instance killed and restarted, PostgreSQL restarted, Redis
 * stopped and started. Faults are keyed to progress (share of issues finished) so they land
 * while work remains, however fast the machine is. Then the invariant checker reads it all.
 * A third of the agents share one key and another third are next_batch subagents working their
 * orchestrator's claims from their own sessions (decision 036): a key is never the holder.
 */
export interface SwarmOptions {
  agents: number;
  issues: number;
  instances: number;
  /** Time budget: the run fails if the issues are not all finished by then. */
  minutes: number;
  agentsPerProcess?: number;
  leaseTtlSeconds?: number;
  /** SIGKILLs of agent processes, spread over the run. */
  agentKills?: number;
  appRestarts?: number;
  postgresRestarts?: number;
  /** Use a private Redis (BullMQ, separate worker processes) and restart it; else inline workers. */
  redis?: boolean;
  redisRestarts?: number;
  silentRate?: number;
  releaseRate?: number;
  /** Share of a shared-key agent's pulls preceded by a tokenless write to a sibling's live lease. */
  probeRate?: number;
  /**
   * Through a PgBouncer in transaction mode in front of the private PostgreSQL (DATABASE_URL
   * pooled, DATABASE_DIRECT_URL direct), as on a managed PostgreSQL.
   */
  pooler?: boolean;
  /**
   * Verification on (decision 045): the project verifies finishes in CI (mode ci, required check
   * `test`), every finish carries its claim's commit, and a fake CI (swarm/fake-ci.ts) attests
   * each pending finish over HTTP with a CI key, failing a seeded share of commits (failRate,
   * default 0.2) and passing an issue's commits after maxFailures (default 2) red runs.
   */
  verify?: { failRate?: number; maxFailures?: number };
  /**
   * Poison issues: every agent that takes one dies on it (writes nothing, its session makes no
   * further call). They live in a project of their own whose quarantine_after is K (default 3),
   * and must be quarantined after exactly K abandoned claims (decision 055). The keys are then
   * org-wide, so agents are dispatched from both projects.
   */
  poison?: { issues: number; quarantineAfter?: number };
  seed?: number;
  log?: (line: string) => void;
}

export interface SwarmResult {
  check: CheckResult;
  /** Agents by kind; orchestrators are extra sessions, one per team of subagents. */
  agents: Record<Role | "orchestrator", number>;
  seconds: number;
  issuesPerSecond: number;
  faults: { agentKills: number; appKills: number; postgresRestarts: number; redisRestarts: number; faultErrors: string[] };
  seed: number;
  /** The app instances' output when something failed. */
  appOutput: string;
  /** /metrics of the apps and workers, scraped during the run (swarm/metrics.ts). */
  metrics: MetricsReport;
  /** The agents' transport failures (ECONNRESET and the rest), each explained by a fault or not (swarm/transport.ts). */
  transport: TransportFigures;
  /** The fake CI's figures, with verification on. */
  ci?: FakeCiFigures;
  /** Poison issues and their project's threshold. */
  poison?: { issues: number; quarantineAfter: number };
}

const root = path.resolve(import.meta.dirname, "..");
/** Every worker process a run started, for a Ctrl-C to end. */
const spawned: ChildProcess[] = [];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** The most subagents one orchestrator claims for at once (under the key's claim cap, killed predecessors' leases included). */
const TEAM = 3;

/**
 * The agents' roles in slot order, then split into processes of `perProcess`: a third shared
 * (one key), a third subagents (in teams of up to TEAM within a process, each team on its own
 * key), the rest solo (a key each). Slots of one role are contiguous so a process's shared agents
 * probe each other and a team never straddles two processes.
 */
export function planAgents(agents: number, perProcess: number): { role: Role; team?: number }[][] {
  const third = Math.floor(agents / 3);
  const roles: Role[] = [...Array<Role>(agents - 2 * third).fill("solo"), ...Array<Role>(third).fill("shared"), ...Array<Role>(third).fill("subagent")];
  const groups: { role: Role; team?: number }[][] = [];
  let team = 0;
  for (let i = 0; i < roles.length; i += perProcess) {
    let inTeam = TEAM;
    groups.push(
      roles.slice(i, i + perProcess).map((role) => {
        if (role !== "subagent") return { role };
        if (inTeam === TEAM) (team++, (inTeam = 0));
        inTeam++;
        return { role, team };
      }),
    );
  }
  return groups;
}

/**
 * A random DAG with chains: each issue picks up to three blockers among the sixty before it,
 * a random priority, and one in eight sits in bob's lane, one in sixteen in carol's.
 */
function randomGraph(count: number, random: () => number, lanes: { bob: string; carol: string }): SeedGraph {
  const base = Date.now() - count - 60_000;
  const issues: SeedGraph["issues"] = [];
  const edges: [number, number][] = [];
  for (let i = 0; i < count; i++) {
    const lane = random();
    issues.push({
      title: `Swarm issue ${i + 1}`,
      priority: Math.floor(random() * 5),
      dueAt: null,
      assigneeId: lane < 0.125 ? lanes.bob : lane < 0.1875 ? lanes.carol : null,
      createdAt: new Date(base + i),
    });
    if (i === 0 || random() < 0.4) continue;
    const picks = 1 + Math.floor(random() * 3);
    const blockers = new Set<number>();
    for (let k = 0; k < picks; k++) blockers.add(Math.max(0, i - 1 - Math.floor(random() * Math.min(i, 60))));
    for (const b of blockers) edges.push([b, i]);
  }
  return { issues, edges };
}

function spawnEntry(entry: Entry, env: Record<string, string>): { child: ChildProcess; output: () => string } {
  const child = spawn(process.execPath, entryArgs(entry), { cwd: root, env: { ...cleanEnv(), ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const keep = (d: Buffer) => {
    output = (output + d.toString()).slice(-20_000);
  };
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  return { child, output: () => output };
}

async function killHard(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGKILL");
  await exited;
}

async function stopGently(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
  await exited;
  clearTimeout(timer);
}

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

    // Seed: the org and the keys: one per solo agent (spread over three people), one shared, one per team.
    // The harness (seeding, the invariant check) reads the database directly; the apps and workers go through the pooler.
    booted = await boot(loadConfig({ ...env, DATABASE_URL: directUrl, DATABASE_DIRECT_URL: "", NODE_ENV: "test" }), { warn: () => {}, poolSize: 6 });
    const { services } = booted;
    const org = await seedOrg(services, { prefix: "SWM", name: "Swarm" });
    // Its silent and releasing agents are chance, not an issue that kills them: none is quarantined (decision 055).
    // Quarantine is shown on poison issues of a project of their own with a threshold of K (options.poison):
    // a kill, a silent agent or a release without a checkpoint is abandoned too, and three of those
    // in a row on one ordinary issue happen by chance in a long run, which the checker could not tell
    // from a defect. A project's threshold is the one knob, so the two kinds of issue are two projects.
    await query(services.db, sql`update projects set quarantine_after = 100 where id = ${org.projectId}`);
    const poisonCount = options.poison?.issues ?? 0;
    const quarantineAfter = options.poison?.quarantineAfter ?? 3;
    if (options.verify) await setVerificationCommand(services, { project: org.projectId, mode: "ci", checks: "test" });
    const humans = ["alice", "bob", "carol"] as const;
    const plan = planAgents(options.agents, perProcess);
    const keyFor = new Map<string, { key: string; userId: string }>();
    const mint = async (label: string, who: (typeof humans)[number]) => {
      if (!keyFor.has(label)) {
        if (poisonCount > 0) {
          // Org-wide keys: dispatched from the swarm's project and the poison project alike.
          const userId = org.agents[who].userId;
          const { key } = await mintAgentKey(services.db, { orgId: org.orgId, userId, runtime: label, projectId: null });
          keyFor.set(label, { key, userId });
        } else {
          const agent = await org.agentFor(who, label);
          keyFor.set(label, { key: agent.key, userId: agent.principal.userId! });
        }
      }
      return keyFor.get(label)!;
    };
    const groups: AgentSpec[][] = [];
    const agents = { solo: 0, shared: 0, subagent: 0, orchestrator: 0 };
    let slot = 0;
    for (const group of plan) {
      const specs: AgentSpec[] = [];
      for (const { role, team } of group) {
        const name = `swarm-${slot}`;
        const who = humans[slot++ % humans.length]!;
        // A solo agent's name is its key's runtime label; shared and team keys are labelled by what shares them.
        const { key, userId } = await mint(role === "solo" ? name : role === "shared" ? "swarm-shared" : `swarm-team-${team}`, role === "solo" ? who : humans[(team ?? 0) % humans.length]!);
        specs.push({ name, key, userId, role, ...(team === undefined ? {} : { team }) });
        agents[role]++;
      }
      groups.push(specs);
    }
    agents.orchestrator = new Set(groups.flat().flatMap((s) => (s.team === undefined ? [] : [s.team]))).size;
    const graph = randomGraph(options.issues, random, { bob: org.agents.bob.userId, carol: org.agents.carol.userId });
    await seedGraph(services, { orgId: org.orgId, projectId: org.projectId, prefix: org.prefix, authorId: org.agents.alice.userId }, graph, new Date());
    const seededPriority = new Map(graph.issues.map((issue, i) => [`${org.prefix}-${i + 1}`, issue.priority]));
    log(`swarm: seeded ${graph.issues.length} issues, ${graph.edges.length} dependency edges`);
    const poison: string[] = [];
    if (poisonCount > 0) {
      const project = await createProject(services.db, { orgId: org.orgId, name: "Poison", prefix: "PSN" });
      await query(services.db, sql`update projects set quarantine_after = ${quarantineAfter} where id = ${project.id}`);
      // Urgent and older than every swarm issue: taken first, and no tie with them in the order.
      const base = Date.now() - options.issues - 120_000;
      const poisonGraph: SeedGraph = {
        issues: Array.from({ length: poisonCount }, (_, i) => ({ title: `Poison issue ${i + 1}`, priority: 1, dueAt: null, assigneeId: null, createdAt: new Date(base + i) })),
        edges: [],
      };
      for (const seeded of await seedGraph(services, { orgId: org.orgId, projectId: project.id, prefix: "PSN", authorId: org.agents.alice.userId }, poisonGraph, new Date())) {
        poison.push(seeded.identifier);
        seededPriority.set(seeded.identifier, 1);
      }
      log(`swarm: seeded ${poisonCount} poison issues (quarantine after ${quarantineAfter})`);
    }

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
    type Fault = { at: number; name: string; run: () => Promise<void> };
    const schedule: Fault[] = [];
    const agentKills = options.agentKills ?? 6;
    for (let k = 1; k <= agentKills; k++) {
      schedule.push({
        at: k / (agentKills + 1),
        name: "kill an agent process",
        run: async () => {
          const group = Math.floor(random() * groups.length);
          await killAgents(group);
          faults.agentKills++;
          launch(group);
        },
      });
    }
    const appRestarts = options.appRestarts ?? 1;
    for (let k = 1; k <= appRestarts; k++) {
      schedule.push({
        at: (0.3 * k) / appRestarts,
        name: "kill and restart an app instance",
        run: async () => {
          const index = Math.floor(random() * apps.length);
          const app = apps[index]!;
          apps[index] = null;
          const outage: Outage = { endpoint: endpoints[index], what: "app instance killed", from: Date.now(), to: Infinity };
          outages.push(outage);
          await killHard(app.child);
          faults.appKills++;
          await sleep(1_000);
          // As a supervisor would: an app that exits while starting (PostgreSQL restarting under it
          // when the faults overlap on a slow machine) is started again.
          for (let attempt = 1; ; attempt++) {
            try {
              apps[index] = await startApp(env, { port: app.port, timeoutMs: 120_000 });
              break;
            } catch (error) {
              if (attempt >= 5) throw error;
              await sleep(1_000);
            }
          }
          outage.to = Date.now();
        },
      });
    }
    const pgRestarts = options.postgresRestarts ?? 1;
    for (let k = 1; k <= pgRestarts; k++) {
      schedule.push({
        at: 0.5 + (0.4 * (k - 1)) / pgRestarts,
        name: "restart PostgreSQL",
        run: async () => {
          const outage: Outage = { what: "PostgreSQL restart", from: Date.now(), to: Infinity };
          outages.push(outage);
          pg.restart();
          outage.to = Date.now();
          faults.postgresRestarts++;
        },
      });
    }
    const redisRestarts = redis ? (options.redisRestarts ?? 1) : 0;
    for (let k = 1; k <= redisRestarts; k++) {
      schedule.push({
        at: 0.7 + (0.2 * (k - 1)) / redisRestarts,
        name: "stop and start Redis",
        run: async () => {
          await privateRedis!.stop();
          faults.redisRestarts++;
          await sleep(2_000);
          await privateRedis!.start();
        },
      });
    }
    schedule.sort((a, b) => a.at - b.at);

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

export function formatSwarm(result: SwarmResult): string {
  const f = result.check.figures;
  const lines = [
    `issues finished     ${f.finished}/${f.issues - f.quarantine.poison} in ${result.seconds.toFixed(1)} s (${result.issuesPerSecond.toFixed(1)} issues/s)`,
    `agents              ${result.agents.solo} solo (a key each), ${result.agents.shared} on one shared key, ${result.agents.subagent} subagents of ${result.agents.orchestrator} orchestrators (next_batch)`,
    `claims              ${f.claims} (reclaims after expiry ${f.reclaims}, releases ${f.releases}, by next_batch ${f.batchClaims})`,
    `refusals            ${Object.entries(f.refusals).map(([code, n]) => `${code} ${n}`).join(", ") || "none"}`,
    `siblings            ${f.siblingProbes} tokenless writes to a sibling session's lease: ${f.siblingMismatches} refused CLAIM_MISMATCH while it was live, ${f.siblingProbesAccepted} accepted`,
    `finishes            ${f.toldFinished} agents told they finished (${f.alreadyFinishedReplies} retries told alreadyFinished); superseded writes accepted ${f.supersededAccepted}`,
    `stale writes        ${f.staleWritesRefused} refused, ${f.staleWritesAccepted} accepted`,
    `dispatches checked  ${f.dispatchesChecked} against the order (near misses inside the in-flight window: ${f.orderNearMisses})`,
    `resumed claims      ${f.resumedClaimsChecked} carried the last checkpoint check (${f.resumedAfterExpiry} after an expiry)`,
    `faults              ${result.faults.agentKills} agent processes SIGKILLed, ${result.faults.appKills} app instance kills, ${result.faults.postgresRestarts} PostgreSQL restarts, ${result.faults.redisRestarts} Redis restarts`,
    `agent retries       ${f.agentRetries} (transport errors, 5xx, UNAVAILABLE); claims with no agent record (killed): ${f.claimsWithoutAgentRecord}`,
    `  by cause          ${Object.entries(result.transport.byCode).map(([code, n]) => `${code} ${n.failures} (${n.expected} in a fault)`).join(", ") || "none"}; unexpected ${result.transport.unexpected.length}`,
    ...result.transport.unexpected.slice(0, 20).map((u) => `  ? ${u}`),
    ...(result.ci
      ? [
          `verification        ${f.verification.finishes} finishes with evidence, attested by the fake CI over POST /api/ci/verify: ${result.ci.failed} red (${Object.keys(result.ci.failuresByIssue).length} issues reopened, ${f.verification.redispatched} failures dispatched again, ${f.verification.reopenedWithGotchas} next claims handed the failing check as gotchas), ${result.ci.passed} green; ${result.ci.resent} attestations resent; finish to verdict median ${median(result.ci.finishToVerdictMs)} ms`,
          `  gating            ${f.verification.gatedClaims} claims of issues with blockers, each committed after every blocker's pass; on a pending or failed blocker: ${f.verification.claimsOnUnverifiedBlocker}; ${f.verification.passed} of ${f.issues - f.quarantine.poison} issues done and passed`,
        ]
      : []),
    ...(result.poison
      ? [
          `quarantine          ${f.quarantine.quarantined} of ${f.quarantine.poison} poison issues quarantined after exactly ${result.poison.quarantineAfter} abandoned claims (${f.quarantine.claims} claims, ${f.quarantine.died} agents died on them); claimed after quarantine: ${f.quarantine.claimedAfter}`,
        ]
      : []),
    `violations          ${Object.entries(result.check.violationCounts).map(([kind, n]) => `${kind} ${n}`).join(", ") || "none"}`,
    ...result.check.violations.slice(0, 50).map((v) => `  ✗ ${v}`),
    `metrics             ${result.metrics.scrapes} scrapes (${result.metrics.failedScrapes} failed, during restarts); without the token: ${result.metrics.withoutToken}; an unsigned webhook delivery: ${result.metrics.webhookProbes.join(", ")}`,
    `  moved             ${result.metrics.moved.join(", ")}`,
    `  never moved       ${result.metrics.still.join(", ") || "none"}`,
    `seed                ${result.seed}`,
  ];
  return lines.join("\n");
}

function median(values: number[]): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return Math.round(sorted[Math.floor(sorted.length / 2)]!);
}
