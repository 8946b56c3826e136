import { afterAll, beforeAll } from "vitest";
import { createTestDatabase, servicesFor, testConfig, type TestDatabase } from "../../testing/db.ts";
import type { Services } from "../../context.ts";
import { seedOrg, type SeededOrg } from "../../testing/fixtures.ts";
import { inProcessFetch, inProcessOrigin, jsonHeaders } from "../testing.ts";

/** For http*.test.ts: the file's database with one seeded org, and its /mcp in process (bodies up to 4 KiB). */
export const endpoint = `${inProcessOrigin}/mcp`;

export interface McpOrg {
  services: Services;
  org: SeededOrg;
  mcpFetch: typeof fetch;
}

/** Seeds the org before the file's tests. Read its fields inside tests only. */
export function useMcpOrg() {
  const s = {} as McpOrg;
  let testDb: TestDatabase;
  beforeAll(async () => {
    testDb = await createTestDatabase();
    s.services = servicesFor(testDb.database, {
      config: testConfig({ MCP_MAX_BODY_BYTES: "4096", PUBLIC_URL: "https://retasc.example.com" }),
    });
    s.org = await seedOrg(s.services);
    s.mcpFetch = inProcessFetch(s.services);
  });
  afterAll(() => testDb?.close());

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
