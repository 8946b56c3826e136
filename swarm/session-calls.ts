import { push } from "./check-rows.ts";
import type { AgentRecord } from "./records.ts";

/**
 * When each MCP session had a call under way, as [start, end] in the agents' clock, sorted by
 * start. Each agent makes one call at a time: a write or probe from its send to its answer; a pull
 * from its send until the agent's next record (its answer came before that); after an agent's last
 * record, a call may have been under way until its process was killed (a replaced process's
 * agents start new sessions).
 */
export function sessionCalls(records: AgentRecord[]): Map<string, [number, number][]> {
  const killedAt = new Map<string, number>();
  const procOf = new Map<string, string>();
  const byAgent = new Map<string, AgentRecord[]>();
  for (const r of records) {
    if (r.t === "killed") killedAt.set(r.proc, r.at);
    else {
      if (r.t === "session") procOf.set(r.session, r.proc);
      // A replaced process's agents have the same names: their records follow the killed ones'.
      push(byAgent, r.agent, r);
    }
  }
  const startOf = (r: AgentRecord) => (r.t === "retry" || r.t === "session" || r.t === "killed" || r.t === "died" ? r.at : r.t === "claim" ? r.receivedAt : r.sentAt);
  const endOf = (r: AgentRecord) => (r.t === "write" || r.t === "probe" || r.t === "claim" ? r.receivedAt : startOf(r));
  const calls = new Map<string, [number, number][]>();
  for (const list of byAgent.values()) {
    list.forEach((r, index) => {
      const next = list[index + 1];
      if (r.t === "write" || r.t === "probe") {
        if (r.session) push(calls, r.session, [r.sentAt, r.receivedAt]);
      } else if (r.t === "pull" && r.session) push(calls, r.session, [r.sentAt, next ? startOf(next) : Infinity]);
      const session = "session" in r ? r.session : null;
      // An agent that died on a poison issue makes no call of that session after it (swarm/agent-work.ts).
      if (r.t === "died") return;
      if (session && (!next || ("session" in next && next.session !== session))) {
        // The session's last record: a call may have followed it until its process died.
        const proc = procOf.get(session);
        push(calls, session, [endOf(r), (proc && killedAt.get(proc)) ?? Infinity]);
      }
    });
  }
  for (const list of calls.values()) list.sort((a, b) => a[0] - b[0]);
  return calls;
}
