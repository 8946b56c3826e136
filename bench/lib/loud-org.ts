/**
 * The loud org of bench/tenants.ts, in a process of its own so its clients' work never delays the
 * quiet org's timings: `clients` official MCP SDK clients calling next_issue in a tight loop over
 * its keys. A refused call (429) waits its Retry-After, as the agent pages tell agents to, unless
 * `honourRetryAfter` is off (a loop that ignores it). Prints "ready" once connected; on SIGTERM
 * prints its counts as one JSON line and exits.
 */
import { setMaxListeners } from "node:events";
import { connectClient } from "../../server/mcp/testing.ts";

interface LoudOptions {
  endpoint: string;
  keys: string[];
  clients: number;
  honourRetryAfter: boolean;
}

const options = JSON.parse(process.env.TENANTS_LOUD ?? "{}") as LoudOptions;
setMaxListeners(50_000);
const counts = { ok: 0, refused: 0, failed: 0 };
let running = true;
process.on("SIGTERM", () => {
  running = false;
  process.stdout.write(`${JSON.stringify(counts)}\n`);
  process.exit(0);
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const agents = await Promise.all(
  Array.from({ length: options.clients }, async (_, i) => {
    const agent = { retryAfter: 0, client: undefined as unknown as Awaited<ReturnType<typeof connectClient>> };
    // The SDK's transport throws on a 429 without its headers: the Retry-After is read here.
    const watching: typeof fetch = async (url, init) => {
      const response = await fetch(url, init);
      if (response.status === 429) agent.retryAfter = Number(response.headers.get("retry-after") ?? 1);
      return response;
    };
    // Connecting is a call too: refused while the org's bucket is empty, it waits and tries again.
    for (;;) {
      try {
        agent.client = await connectClient(options.endpoint, options.keys[i % options.keys.length]!, { name: `loud-${i}`, fetch: watching });
        return agent;
      } catch (error) {
        if (agent.retryAfter === 0) throw error;
        await sleep(agent.retryAfter * 1000);
        agent.retryAfter = 0;
      }
    }
  }),
);
process.stdout.write("ready\n");
await Promise.all(
  agents.map(async (agent) => {
    while (running) {
      try {
        await agent.client.callTool({ name: "next_issue", arguments: {} });
        counts.ok++;
      } catch {
        if (agent.retryAfter > 0) {
          counts.refused++;
          if (options.honourRetryAfter) await sleep(agent.retryAfter * 1000);
          agent.retryAfter = 0;
        } else {
          counts.failed++;
          await sleep(10);
        }
      }
    }
  }),
);
