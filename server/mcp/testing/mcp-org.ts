import { beforeAll } from "vitest";
import type { Services } from "../../context.ts";
import type { SeededOrg } from "../../testing/fixtures.ts";
import { inProcessFetch, inProcessOrigin, jsonHeaders, useMcpServices } from "../testing.ts";

/** For http*.test.ts: the file's database with one seeded org, and its /mcp in process (bodies up to 4 KiB). */
export const endpoint = `${inProcessOrigin}/mcp`;

export interface McpOrg {
  services: Services;
  org: SeededOrg;
  mcpFetch: typeof fetch;
}

/** Seeds the org before the file's tests (no issue: the projects test counts none open). Read its fields inside tests only. */
export function useMcpOrg() {
  const world = useMcpServices({ issue: false, env: { PUBLIC_URL: "https://retasc.example.com" } });
  const s = {} as McpOrg;
  beforeAll(() => {
    Object.assign(s, { services: world.services, org: world.org, mcpFetch: inProcessFetch(world.services) });
  });

  /** A raw POST to /mcp with Alice's key (the org's owner), headers added or overridden. */
  function post(body: string, headers: Record<string, string> = {}) {
    return s.mcpFetch(endpoint, {
      method: "POST",
      headers: { ...jsonHeaders, authorization: `Bearer ${s.org.agents.alice.key}`, ...headers },
      body,
    });
  }
  return { mcp: s, post };
}
