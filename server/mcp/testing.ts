import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import crypto from "node:crypto";
import { afterAll, afterEach, beforeAll } from "vitest";
import { createTestDatabase, servicesFor, testConfig, testDriver, type TestDatabase } from "../testing/db.ts";
import { runEntry, startApp, migratedDataDir, type AppProcess } from "../testing/app-process.ts";
import { seedOrg, type SeededOrg } from "../testing/fixtures.ts";
import type { SeededOrgJson } from "../testing/seed-orgs.ts";
import type { Services } from "../context.ts";
import { saveIssue } from "../issues/index.ts";
import { withPrincipal } from "../with-principal.ts";
import { createLogger } from "../log.ts";
import { handleMcpRequest } from "./http.ts";

/** Test helpers: the official SDK client talking to /mcp, in process or over real HTTP. */
export const inProcessOrigin = "http://retasc.test";

/** Sends requests straight to the /mcp handler: the whole protocol path without a socket. */
export function inProcessFetch(services: Services): typeof fetch {
  const log = createLogger("silent");
  // The client's abort signal is left out: a Request keeps a listener on it until collected.
  return async (url, init) => handleMcpRequest(new Request(url, { ...init, signal: undefined }), { services, log });
}

export async function connectClient(
  endpoint: string,
  key: string,
  options: { fetch?: typeof fetch; name?: string; sessionId?: string } = {},
): Promise<Client> {
  const client = new Client({ name: options.name ?? "retasc-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(endpoint), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
    ...(options.fetch ? { fetch: options.fetch } : {}),
    // Resuming a session (a restarted proxy that kept its Mcp-Session-Id): the SDK skips initialize.
    ...(options.sessionId ? { sessionId: options.sessionId } : {}),
  });
  await client.connect(transport);
  return client;
}

/** Calls a tool and returns its structuredContent, failing loudly on an error result. */
export async function callOk<T = Record<string, any>>(client: Client, name: string, args: Record<string, unknown> = {}): Promise<T> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  if (result.isError) throw new Error(`${name} failed: ${JSON.stringify(result.structuredContent)}`);
  return result.structuredContent as T;
}

/** Calls a tool expected to be refused and returns its error envelope. */
export async function callError(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<{ code: string; message: string; hint: string; tellHuman?: string; details?: Record<string, unknown> }> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  if (!result.isError) throw new Error(`${name} unexpectedly succeeded: ${JSON.stringify(result.structuredContent)}`);
  return (result.structuredContent as { error: any }).error;
}

export interface SeededApp {
  app: AppProcess;
  endpoint: string;
  orgs: Record<string, SeededOrgJson>;
  /** The environment the app runs with (database, master key), for a second instance. */
  env: Record<string, string>;
  close(): Promise<void>;
}

/**
 * The built app as a real HTTP server on a fresh database (its own PostgreSQL database
 * when TEST_DATABASE_URL is set, else an embedded data dir), seeded with one org per
 * prefix before it starts.
 */
export async function startSeededApp(prefixes: string[], env: Record<string, string> = {}): Promise<SeededApp> {
  const testDb = testDriver === "postgres" ? await createTestDatabase({ max: 2 }) : null;
  const databaseEnv: Record<string, string> = testDb
    ? {
        DATABASE_URL: testDb.url!,
        ...(testDb.directUrl ? { DATABASE_DIRECT_URL: testDb.directUrl } : {}),
        RETASC_MASTER_KEY: crypto.randomBytes(32).toString("base64"),
      }
    : { RETASC_DATA_DIR: migratedDataDir() };
  const seeded = runEntry("server/testing/seed-orgs.ts", prefixes, databaseEnv);
  if (seeded.status !== 0) throw new Error(`seeding failed:\n${seeded.stdout}\n${seeded.stderr}`);
  const orgs = Object.fromEntries(
    (JSON.parse(seeded.stdout.trim().split("\n").pop()!) as SeededOrgJson[]).map((org) => [org.prefix, org]),
  );
  const app = await startApp({ ...databaseEnv, ...env });
  return {
    app,
    endpoint: `${app.url}/mcp`,
    orgs,
    env: databaseEnv,
    async close() {
      await app.stop();
      await testDb?.close();
    },
  };
}

/** Every tool of the design, as tools/list must serve them (server/mcp/app.test.ts) and the server card and /index.md list them. */
export const designTools = [
  "whoami", "mint_session_key",
  "next_issue", "next_batch", "claim_issue", "check_claim", "heartbeat", "checkpoint", "release_issue",
  "save_issue", "get_issue", "list_issues",
  "add_relation", "remove_relation",
  "save_comment", "list_comments", "retract_comment", "save_label", "list_labels",
  "save_attachment", "list_attachments", "get_attachment", "obsolete_attachment",
  "save_attachment_file", "get_attachment_file",
  "list_members", "suspend_member", "reactivate_member", "retire_member", "list_claimable_ghosts", "claim_ghost", "dismiss_ghost_prompt", "list_connectors", "revoke_connector",
  "setup_status", "invite_member", "list_invites", "revoke_invite", "accept_invite",
  "queue_status", "get_project", "list_projects", "usage_summary", "billing_summary",
  "analytics_overview", "analytics_issues",
  "list_import_sources", "run_import", "latest_import", "import_history",
];

/** save_issue's arguments for a work issue; one without blockers declares that it has none. */
export const newIssue = (title: string, extra: Record<string, unknown> = {}) => ({
  title,
  work: true,
  changeType: "feat",
  ...(extra.blockedBy ? {} : { noDependency: "independent test work" }),
  ...extra,
});

/**
 * The built app seeded with one org per prefix (startSeededApp) for a test file's tests (call at
 * its top level): `seeded` is filled before them, `client` connects as a seeded person, every
 * client pushed to `clients` is closed afterwards, and a failed test's report carries the app's output.
 */
export function useSeededApp(prefixes: string[], env: Record<string, string> = {}) {
  const seeded = {} as SeededApp;
  const clients: Client[] = [];
  beforeAll(async () => {
    Object.assign(seeded, await startSeededApp(prefixes, env));
  });
  afterEach(({ task }) => {
    if (task.result?.state === "fail") process.stderr.write(`app output:\n${seeded.app?.output().slice(-8000)}\n`);
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => {})));
    await seeded.close?.();
  });
  /** An SDK client on the key of `who` in the org seeded for `prefix`. */
  async function client(prefix: string, who: "alice" | "bob" | "carol"): Promise<Client> {
    const c = await connectClient(seeded.endpoint, seeded.orgs[prefix]!.people[who].key, { name: `${prefix}-${who}` });
    clients.push(c);
    return c;
  }
  return { seeded, clients, client };
}

/** The headers of a JSON POST to /mcp as a client sends them. */
export const jsonHeaders = { "content-type": "application/json", accept: "application/json, text/event-stream" };
export const initialize = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
};
export const call = (name: string, args: unknown, id: unknown = 1) => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } });

/**
 * For raw requests to the /mcp handlers (server/mcp/protocol-*.test.ts, http*.test.ts; call at a
 * test file's top level): services on a database of the file's own with a 4 KiB body limit (and
 * `env`), a seeded org, and unless `issue` is false one issue of Alice's, all set before the file's tests.
 */
export function useMcpServices({ issue = true, env = {} }: { issue?: boolean; env?: Record<string, string> } = {}) {
  const world = { services: undefined as unknown as Services, org: undefined as unknown as SeededOrg, identifier: "" };
  let testDb: TestDatabase | undefined;
  beforeAll(async () => {
    testDb = await createTestDatabase();
    world.services = servicesFor(testDb.database, { config: testConfig({ MCP_MAX_BODY_BYTES: "4096", ...env }) });
    world.org = await seedOrg(world.services);
    if (!issue) return;
    const saved = await saveIssue(withPrincipal(world.services, world.org.agents.alice.principal), { title: "Parity", work: true, changeType: "feat", noDependency: "test" });
    world.identifier = (saved as { identifier: string }).identifier;
  });
  afterAll(() => testDb?.close());
  return world;
}

/**
 * Two app instances on one seeded database, for the races over /mcp (call at a test file's top
 * level). They start only on PostgreSQL, where instances can share a database. Clients pushed
 * to `clients` are closed afterwards; a failed test's report carries the first app's output.
 */
export function useTwoInstances(prefixes: string[], env: Record<string, string> = {}) {
  const race = {
    seeded: undefined as unknown as SeededApp,
    second: undefined as unknown as AppProcess,
    clients: [] as Client[],
    /** The two instances' /mcp endpoints. */
    get endpoints() {
      return [race.seeded.endpoint, `${race.second.url}/mcp`];
    },
  };
  beforeAll(async () => {
    if (testDriver !== "postgres") return;
    race.seeded = await startSeededApp(prefixes, env);
    race.second = await startApp({ ...race.seeded.env, ...env });
  });
  afterEach(({ task }) => {
    if (task.result?.state === "fail") process.stderr.write(`app output:\n${race.seeded?.app.output().slice(-8000)}\n`);
  });
  afterAll(async () => {
    await Promise.all(race.clients.map((c) => c.close().catch(() => {})));
    await race.second?.stop();
    await race.seeded?.close();
  });
  return race;
}
