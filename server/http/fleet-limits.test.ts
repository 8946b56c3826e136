import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, expect, test } from "vitest";
import { testDriver } from "../testing/db.ts";
import { loadConfig } from "../config/index.ts";
import { callOk, connectClient, startSeededApp, type SeededApp } from "../mcp/testing.ts";
import { startApp, type AppProcess } from "../testing/app-process.ts";

/**
 * The default limits never stop a real fleet: 64 agents (official SDK clients), eight on each
 * of eight keys, all from one address and one org, poll next_issue in a tight loop against the built
 * app (two instances on PostgreSQL) with no limit configured. None may see a 429, and what they
 * reach must stay under the defaults: the key's and the address's with room for a machine twice as
 * fast; the org's, a fairness limit, only under it.
 */
const AGENTS = 64;
const KEYS = 8;
const SECONDS = 10;

let seeded: SeededApp;
let second: AppProcess | null = null;
const clients: Client[] = [];
beforeAll(async () => {
  seeded = await startSeededApp(["FLT"]);
  if (testDriver === "postgres") second = await startApp(seeded.env);
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => {})));
  await second?.stop();
  await seeded?.close();
});

test("64 agents polling next_issue in a tight loop, eight on one key, stay under the default limits", async () => {
  const defaults = loadConfig({});
  const people = seeded.orgs.FLT!.people;
  const owners = [people.alice, people.bob, people.carol];
  const keys: string[] = [];
  for (let k = 0; k < KEYS; k++) {
    const owner = await connectClient(seeded.endpoint, owners[k % owners.length]!.key);
    clients.push(owner);
    keys.push((await callOk(owner, "mint_session_key")).key);
  }
  const endpoints = [seeded.endpoint, ...(second ? [`${second.url}/mcp`] : [])];
  const agents = await Promise.all(
    Array.from({ length: AGENTS }, async (_, i) => {
      const client = await connectClient(endpoints[i % endpoints.length]!, keys[i % KEYS]!, { name: `fleet-${i}` });
      clients.push(client);
      return { client, key: i % KEYS };
    }),
  );

  const perKey = new Array<number>(KEYS).fill(0);
  const failures: string[] = [];
  const until = Date.now() + SECONDS * 1000;
  const started = Date.now();
  await Promise.all(
    agents.map(async ({ client, key }) => {
      while (Date.now() < until) {
        try {
          const result = await client.callTool({ name: "next_issue", arguments: {} });
          if (result.isError) failures.push(JSON.stringify(result.structuredContent).slice(0, 200));
          perKey[key]!++;
        } catch (error) {
          failures.push(String(error).slice(0, 200));
        }
      }
    }),
  );
  const minutes = (Date.now() - started) / 60_000;
  const busiestKeyPerMin = Math.max(...perKey) / minutes;
  const addressPerMin = perKey.reduce((a, b) => a + b, 0) / minutes;
  process.stderr.write(
    `fleet: ${perKey.reduce((a, b) => a + b, 0)} next_issue calls in ${(minutes * 60).toFixed(1)} s on ${endpoints.length} instance(s); ` +
      `busiest key ${Math.round(busiestKeyPerMin)}/min (limit ${defaults.RATE_LIMIT_KEY_PER_MIN}), ` +
      `one address ${Math.round(addressPerMin)}/min (limit ${defaults.RATE_LIMIT_IP_PER_MIN}), ` +
      `one org ${Math.round(addressPerMin / 60)}/s (limit ${defaults.RATE_LIMIT_ORG_PER_SEC}/s)\n`,
  );
  expect(failures).toEqual([]);
  // Headroom: a machine twice as fast still stays under the key's and the address's defaults.
  // The org's bucket is the fairness limit (decision 075): an org looping this tight on a faster
  // machine is the loud org it exists to slow, so here it need only not refuse. A real fleet
  // waits an empty poll's retryAfter (30 s) and calls far less than this loop (on a quiet
  // machine it reached 1,944 calls a second, 3,888 doubled, against the org's 3,000).
  expect(busiestKeyPerMin * 2).toBeLessThan(defaults.RATE_LIMIT_KEY_PER_MIN);
  expect(addressPerMin * 2).toBeLessThan(defaults.RATE_LIMIT_IP_PER_MIN);
  expect(addressPerMin / 60).toBeLessThan(defaults.RATE_LIMIT_ORG_PER_SEC);
}, 180_000);
