/**
 * A swarm agent process: runs several agents, each with the official MCP SDK client over /mcp
 * against a random app instance, each in its own MCP session. Three kinds (decision 036):
 * - solo: its own key; loops next_issue → checkpoint/heartbeat → finish;
 * - shared: the same loop, on one key shared with other agents; now and then it also writes,
 *   without a token, to an issue a sibling holds (it must be refused CLAIM_MISMATCH);
 * - subagent: one of an orchestrator's team on the orchestrator's key; the orchestrator claims a
 *   wave with next_batch {claim:true} and hands each claim's token to a subagent, which works it
 *   from its own session. The orchestrator waits for its wave, so its calls renew nothing meanwhile.
 * Some go silent past their lease and then try their stale token; some release. Transport
 * failures, 5xx and UNAVAILABLE are retried (on another instance, in a new session). Everything
 * observed is appended to a log the invariant checker reads. Configured by SWARM_AGENT_CONFIG (JSON).
 * With verification on, every finish carries evidence: a commit of its own per claim. An agent
 * that takes a poison issue dies on it: nothing written, no further call of its session.
 * The session is swarm/agent-session.ts, what agents do with it swarm/agent-work.ts, the
 * configuration swarm/agent-spec.ts.
 */
import type { AgentProcessConfig } from "./agent-spec.ts";
import { Agent, Orchestrator } from "./agent-work.ts";

const config = JSON.parse(process.env.SWARM_AGENT_CONFIG ?? "null") as AgentProcessConfig | null;
if (!config) {
  process.stderr.write("swarm agent: SWARM_AGENT_CONFIG is not set\n");
  process.exit(2);
}
process.on("SIGTERM", () => process.exit(0));
const teams = new Map<number, Agent[]>();
for (const spec of config.agents) {
  const agent = new Agent(spec, config);
  if (spec.role !== "subagent") void agent.run();
  else teams.set(spec.team!, [...(teams.get(spec.team!) ?? []), agent]);
}
for (const [team, members] of teams) {
  const lead = members[0]!.spec;
  void new Orchestrator({ name: `swarm-orchestrator-${team}`, key: lead.key, userId: lead.userId, role: "subagent", team }, config, members).run();
}
