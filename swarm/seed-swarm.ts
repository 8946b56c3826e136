import { sql } from "drizzle-orm";
import { query } from "../db/client.ts";
import { seedGraph, type SeedGraph } from "../bench/lib/seed.ts";
import type { Services } from "../server/context.ts";
import { seedOrg, type SeededOrg } from "../server/testing/fixtures.ts";
import { createProject, mintAgentKey } from "../server/orgs/index.ts";
import { setVerificationCommand } from "../server/verification/settings.ts";
import type { AgentSpec, Role } from "./agent-spec.ts";
import type { SwarmOptions } from "./options.ts";

/**
 * What a swarm run (swarm/run.ts) starts from: the org, its keys and the agents' specs, the
 * random dependency graph, and the poison issues in a project of their own.
 */

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

export interface SeededSwarm {
  org: SeededOrg;
  /** The agents' specs, one list per agent process. */
  groups: AgentSpec[][];
  /** Agents by kind; orchestrators are extra sessions, one per team of subagents. */
  agents: Record<Role | "orchestrator", number>;
  /** The priority each issue was seeded with, by identifier (the checker's seededPriority). */
  seededPriority: Map<string, number>;
  /** The poison issues' identifiers. */
  poison: string[];
  poisonCount: number;
  quarantineAfter: number;
}

/** Seeds the org and the keys: one per solo agent (spread over three people), one shared, one per team. */
export async function seedSwarm(services: Services, options: SwarmOptions, perProcess: number, random: () => number, log: (line: string) => void): Promise<SeededSwarm> {
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
  return { org, groups, agents, seededPriority, poison, poisonCount, quarantineAfter };
}
