import type { AppProcess } from "../server/testing/app-process.ts";
import { startApp } from "../server/testing/app-process.ts";
import type { PrivateRedis } from "../server/testing/redis.ts";
import type { PrivatePostgres } from "./private-postgres.ts";
import { killHard, sleep } from "./processes.ts";
import type { SwarmOptions, SwarmResult } from "./options.ts";
import type { Outage } from "./transport.ts";

/**
 * The faults a swarm run (swarm/run.ts) injects, keyed to progress (the share of issues
 * finished), so they land while work remains however fast the machine is.
 */
export type Fault = { at: number; name: string; run: () => Promise<void> };

export interface FaultTargets {
  options: SwarmOptions;
  random: () => number;
  /** How many agent processes there are. */
  groups: number;
  /** Kills a group's agent process, writing down when. */
  killAgents: (group: number) => Promise<void>;
  /** Starts a group's next agent process, on the same keys. */
  launch: (group: number) => void;
  /** The running app instances, by endpoint: a restart replaces its entry. */
  apps: (AppProcess | null)[];
  endpoints: string[];
  env: Record<string, string>;
  pg: PrivatePostgres;
  redis: PrivateRedis | null;
  /** How many of each fault were done, and the errors of those that failed. */
  faults: SwarmResult["faults"];
  /** When an instance or PostgreSQL was down, appended as the faults run: the agents' transport failures are judged against them. */
  outages: Outage[];
}

/** The faults of a run, in the order they fall due. */
export function scheduleFaults(t: FaultTargets): Fault[] {
  const { options, random, killAgents, launch, apps, endpoints, env, pg, faults, outages } = t;
  const privateRedis = t.redis;
  const schedule: Fault[] = [];
  const agentKills = options.agentKills ?? 6;
  for (let k = 1; k <= agentKills; k++) {
    schedule.push({
      at: k / (agentKills + 1),
      name: "kill an agent process",
      run: async () => {
        const group = Math.floor(random() * t.groups);
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
  const redisRestarts = privateRedis ? (options.redisRestarts ?? 1) : 0;
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
  return schedule;
}
