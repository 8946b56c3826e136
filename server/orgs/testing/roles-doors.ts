import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import crypto from "node:crypto";
import { expect } from "vitest";
import { connectClient } from "../../mcp/testing.ts";
import { startApp, type AppProcess } from "../../testing/app-process.ts";
import { createTestDatabase, testDriver, type TestDatabase } from "../../testing/db.ts";
import { generateWorkspace } from "../../../test/fakes/linear-workspace.ts";
import { type FakeLinear, startFakeLinear } from "../../../test/fakes/linear.ts";
import { startFakeStripe, type FakeStripe } from "../../../test/fakes/stripe.ts";
import { cliPost, signUp } from "../../testing/world.ts";

/**
 * The world of server/orgs/roles-by-door.test.ts (issue 37, decision 043): the app, its org and
 * people, and the doors every row is tried through. The world is one object the test file owns
 * and passes in (test files share these modules: no state lives here).
 */
export type Role = "owner" | "admin" | "member";
export type Door = "Dash" | "CLI" | "MCP (agent key)" | "MCP (session key)";
export const roles: Role[] = ["owner", "admin", "member"];

export interface Person {
  name: string;
  email: string;
  cookie: string;
  token: string;
  userId: string;
  memberId: string;
}
export interface Actor extends Person {
  role: Role;
  agent: Client;
  session: Client;
}

export const OK = "✓";

/** One org with two owners, two admins and two members (one of each acts, the other is acted on), filled in by openRolesWorld. */
export interface RolesWorld {
  database: TestDatabase | null;
  app: AppProcess;
  stripe: FakeStripe;
  linear: FakeLinear;
  url: string;
  orgId: string;
  prefix: string;
  people: Record<"owner" | "owner2" | "admin" | "admin2" | "member" | "member2", Person>;
  actors: Record<Role, Actor>;
  /** What the import rows bring back: this org's own export, small. */
  exportFile: string;
  hook: string;
  hookSecret: string;
  /** A fresh number, for names that must not repeat. */
  next: () => number;
}

export const emptyRolesWorld = (): RolesWorld => {
  let counter = 0;
  return { database: null, people: {}, actors: {}, exportFile: "", hook: "", hookSecret: "", next: () => ++counter } as RolesWorld;
};

/** Boots the app and fills `w` step by step, so closeRolesWorld stops whatever started should a step fail. */
export async function openRolesWorld(w: RolesWorld): Promise<void> {
  const { people, actors } = w;
  const { dash, cliGet } = doorsOf(w);
  w.database = testDriver === "postgres" ? await createTestDatabase({ max: 2 }) : null;
  w.stripe = await startFakeStripe();
  w.linear = await startFakeLinear({ workspace: generateWorkspace({ issues: 1 }) });
  w.app = await startApp(
    {
      ...(w.database ? { DATABASE_URL: w.database.url! } : {}),
      RETASC_EMAIL_PASSWORD: "on",
      RETASC_WORKERS: "inline",
      RETASC_BILLING: "on",
      BILLING_SIGNUP_CREDIT: String(1_000 * 1_000_000),
      STRIPE_SECRET_KEY: w.stripe.secretKey,
      STRIPE_WEBHOOK_SECRET: w.stripe.webhookSecret,
      STRIPE_API_URL: w.stripe.url,
      LINEAR_API_URL: w.linear.apiUrl,
      SLACK_CLIENT_ID: "roles-test",
      SLACK_CLIENT_SECRET: "roles-test-secret",
      SLACK_SIGNING_SECRET: "roles-test-signing",
    },
    { timeoutMs: 240_000 },
  );
  const url = (w.url = w.app.url);
  const signed = async (name: string) => ({ name, ...(await signUp(url, name)), memberId: "" });
  people.owner = await signed("Olga");
  const orgName = `Roles ${crypto.randomBytes(3).toString("hex")}`;
  const orgId = (w.orgId = (await cliPost(url, people.owner.token, "orgs", { name: orgName })).orgId);
  const prefix = (w.prefix = "ROL");
  await cliPost(url, people.owner.token, "projects", { orgId, name: "Roles", prefix });
  for (const [who, name, role] of [["owner2", "Otto", "member"], ["admin", "Ada", "admin"], ["admin2", "Abe", "admin"], ["member", "Mia", "member"], ["member2", "Max", "member"]] as const) {
    people[who] = await signed(name);
    const { code } = await cliPost(url, people.owner.token, "members", { orgId, action: "invite", role });
    await cliPost(url, people[who].token, "join", { code });
  }
  const { members } = await cliGet(people.owner, "members");
  for (const person of Object.values(people)) person.memberId = members.find((m: any) => m.kind === "human" && m.userId === person.userId).memberId;
  expect(await dash(people.owner, "/dash/settings/members", { intent: "make-owner", memberId: people.owner2.memberId })).toBe(OK);
  for (const role of roles) {
    const person = people[role];
    const minted = await cliPost(url, person.token, "keys", { orgId, action: "mint", runtime: "codex" });
    const agent = await connectClient(`${url}/mcp`, minted.key, { name: `${role}-agent` });
    const sessionKey = await call(agent, "mint_session_key", {});
    const session = await connectClient(`${url}/mcp`, sessionKey.structuredContent.key, { name: `${role}-session` });
    actors[role] = { ...person, role, agent, session };
  }
  w.exportFile = await (await fetch(`${url}/api/cli/export?orgId=${orgId}&format=json`, { headers: { authorization: `Bearer ${people.owner.token}` } })).text();
  const connector = await cliPost(url, people.owner.token, "connectors", { orgId, action: "add", provider: "github", repo: "acme/outside", project: prefix });
  w.hook = `${url}${new URL(connector.webhookUrl).pathname}`;
  w.hookSecret = connector.secret;
}

export async function closeRolesWorld(w: RolesWorld): Promise<void> {
  for (const actor of Object.values(w.actors)) {
    await actor.agent?.close();
    await actor.session?.close();
  }
  await w.app?.stop();
  await w.stripe?.close();
  await w.linear?.close();
  await w.database?.close();
}

// ---------------------------------------------------------------------------------------------
// The doors. Each answers the outcome as the table shows it: ✓, or the refusal's code.

const codeIn = (text: string): string | null => /"(FORBIDDEN|NOT_FOUND|INVALID_INPUT|CONFLICT|UNAUTHORIZED|RATE_LIMITED|BILLING_INACTIVE|SPEND_CAP|UNAVAILABLE|[A-Z]+_[A-Z_]+)"/.exec(text)?.[1] ?? null;

/** The doors of the world's app, as its org: each reads the world when called, so they may be taken before it is open. */
export function doorsOf(w: RolesWorld) {
  const orgCookie = (person: Person) => `${person.cookie}; retasc_org=${encodeURIComponent(Buffer.from(JSON.stringify(w.orgId)).toString("base64"))}`;

  /** A form post to a Dash page's action, as React Router's data request sends it. */
  async function dash(person: Person, page: string, fields: Record<string, string> | FormData): Promise<string> {
    const response = await fetch(`${w.url}${page}.data`, {
      method: "POST",
      headers: { cookie: orgCookie(person), origin: w.url },
      body: fields instanceof FormData ? fields : new URLSearchParams(fields),
      redirect: "manual",
    });
    const text = await response.text();
    if (response.status >= 500) throw new Error(`${page}: ${response.status} ${text.slice(0, 300)}`);
    return codeIn(text) ?? (response.status < 400 ? OK : `HTTP ${response.status}`);
  }

  /** A Dash download (a loader answering a file, or a JSON refusal). */
  async function dashGet(person: Person, page: string): Promise<string> {
    const response = await fetch(`${w.url}${page}`, { headers: { cookie: orgCookie(person) }, redirect: "manual" });
    const text = await response.text();
    return response.ok ? OK : (codeIn(text) ?? `HTTP ${response.status}`);
  }

  async function cli(person: Person, endpoint: string, body: Record<string, unknown>): Promise<string> {
    const response = await fetch(`${w.url}/api/cli/${endpoint}`, {
      method: "POST",
      headers: { authorization: `Bearer ${person.token}`, "content-type": "application/json" },
      body: JSON.stringify({ orgId: w.orgId, ...body }),
    });
    const reply = await response.json();
    return response.ok ? OK : reply.error.code;
  }

  async function cliGet(person: Person, endpoint: string, query: Record<string, string> = {}): Promise<any> {
    const response = await fetch(`${w.url}/api/cli/${endpoint}?${new URLSearchParams({ orgId: w.orgId, ...query })}`, { headers: { authorization: `Bearer ${person.token}` } });
    const text = await response.text();
    return response.headers.get("content-type")?.includes("json") ? { ...JSON.parse(text), status: response.status } : { status: response.status };
  }

  /** A CLI post as the first owner, to make or restore what a row acts on. */
  const asOwner = (endpoint: string, body: Record<string, unknown>) => cliPost(w.url, w.people.owner.token, endpoint, { orgId: w.orgId, ...body });
  return { dash, dashGet, cli, cliGet, asOwner };
}

export async function call(client: Client, name: string, args: Record<string, unknown>) {
  return (await client.callTool({ name, arguments: args })) as CallToolResult & { structuredContent: any };
}
export async function mcp(client: Client, name: string, args: Record<string, unknown>): Promise<string> {
  const result = await call(client, name, args);
  return result.isError ? result.structuredContent.error.code : OK;
}

// ---------------------------------------------------------------------------------------------
// The rows: who may, and how each door is tried.

export interface Row {
  action: string;
  /** The roles allowed; the others get `refusal`. */
  allowed: Role[];
  /** Per door, where it differs from `allowed`. */
  allowedOn?: Partial<Record<Door, Role[]>>;
  refusal?: string;
  /** A probe stops short of an act that cannot be undone: this outcome means the role check let it through. */
  probe?: string;
  /** What a role that may not do it sees instead of a refusal (a narrower view). */
  narrower?: string;
  before?: (actor: Actor) => Promise<unknown>;
  doors: Partial<Record<Door, (actor: Actor) => Promise<string>>>;
  after?: (actor: Actor, outcome: string) => Promise<unknown>;
}

export const everyone: Role[] = ["owner", "admin", "member"];
export const managers: Role[] = ["owner", "admin"];
export const owners: Role[] = ["owner"];
export const agentDoors = (run: (client: Client, actor: Actor) => Promise<string>) => ({
  "MCP (agent key)": (a: Actor) => run(a.agent, a),
  "MCP (session key)": (a: Actor) => run(a.session, a),
});
