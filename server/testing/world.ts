import crypto from "node:crypto";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { createTestDatabase, testDriver, type TestDatabase } from "./db.ts";
import { callOk, connectClient } from "../mcp/testing.ts";
import { startApp, type AppProcess } from "./app-process.ts";

/**
 * Two tenants on the built app, set up only through its doors (sign-up, the CLI endpoints,
 * /mcp): person A with org A, and person B with org B, whose content carries a marker string
 * that must never reach A. Everything B owns is listed, so tests can aim at it from A's side.
 */
export interface Tenant {
  email: string;
  /** Browser session (Dash). */
  cookie: string;
  /** The same session as a bearer token (/api/cli/*). */
  token: string;
  userId: string;
  orgId: string;
  projectId: string;
  prefix: string;
  key: string;
  keyId: string;
  client: Client;
}

export interface World {
  app: AppProcess;
  url: string;
  a: Tenant;
  b: Tenant;
  /** Appears in B's titles, bodies, comments and labels; must never appear in a reply to A. */
  marker: string;
  /** B's identifiers of every kind, for aiming requests at the other tenant. */
  bIds: {
    issues: string[];
    claimToken: string;
    commentId: string;
    attachmentId: string;
    memberIds: string[];
    agentMemberId: string;
    inviteId: string;
    label: string;
  };
  close(): Promise<void>;
}

async function json(response: Response): Promise<any> {
  const text = await response.text();
  if (!response.ok) throw new Error(`${response.url}: ${response.status} ${text.slice(0, 500)}`);
  return JSON.parse(text);
}

/** A person signed up over HTTP: their browser session (cookie) and the same session as a bearer token. */
export async function signUp(url: string, name: string): Promise<{ email: string; cookie: string; token: string; userId: string }> {
  const email = `${name.toLowerCase()}-${crypto.randomBytes(4).toString("hex")}@example.com`;
  const response = await fetch(`${url}/api/auth/sign-up/email`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: url },
    body: JSON.stringify({ email, password: "correct horse battery", name }),
  });
  const session = await json(response.clone());
  const cookie = response.headers.getSetCookie().map((c) => c.split(";")[0]).join("; ");
  return { email, cookie, token: response.headers.get("set-auth-token") ?? session.token, userId: session.user.id };
}

/** POST to /api/cli/* with a session token; the JSON reply, or an error naming the status. */
export async function cliPost(url: string, token: string, path: string, body: unknown): Promise<any> {
  return json(await fetch(`${url}/api/cli/${path}`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify(body) }));
}

async function tenant(url: string, name: string, prefix: string): Promise<Tenant> {
  const { email, cookie, token, userId } = await signUp(url, name);
  const post = (path: string, body: unknown) => cliPost(url, token, path, body);
  const org = await post("orgs", { name: `${name}'s org` });
  const orgId = org.orgId ?? org.id;
  const project = await post("projects", { orgId, name: `${name} project`, prefix });
  const projectId = project.projectId ?? project.id;
  const minted = await post("keys", { orgId, action: "mint", projectId, runtime: "claude-code" });
  const client = await connectClient(`${url}/mcp`, minted.key, { name });
  return { email, cookie, token, userId, orgId, projectId, prefix, key: minted.key, keyId: minted.keyId, client };
}

export async function startWorld(env: Record<string, string> = {}): Promise<World> {
  const database: TestDatabase | null = testDriver === "postgres" ? await createTestDatabase({ max: 2 }) : null;
  const app = await startApp({
    ...(database ? { DATABASE_URL: database.url! } : {}),
    RETASC_EMAIL_PASSWORD: "on",
    ...env,
  });
  const url = app.url;
  const a = await tenant(url, "Alma", "AAA");
  const b = await tenant(url, "Bert", "BBB");
  const marker = `ZQXMARK${crypto.randomBytes(5).toString("hex")}`;

  const issues: string[] = [];
  for (let i = 0; i < 4; i++) {
    const issue = await callOk(b.client, "save_issue", {
      title: `${marker} secret ${i}`,
      body: `body ${marker}`,
      work: true,
      changeType: "feat",
      noDependency: "planted",
      // Alike by design: each names the ones before it as read (the duplicate gate, decision 066).
      reviewedSimilar: [...issues],
      labels: [`${marker.toLowerCase()}-label`],
    });
    issues.push(issue.identifier);
  }
  const comment = await callOk(b.client, "save_comment", { issue: issues[0], body: `comment ${marker}` });
  const attachment = await callOk(b.client, "save_attachment", { issue: issues[0], url: `https://example.com/${marker}`, title: marker });
  const claim = await callOk(b.client, "claim_issue", { identifier: issues[1] });
  await callOk(b.client, "checkpoint", { identifier: issues[1], claimToken: claim.claimToken, done: `done ${marker}`, next: marker });
  const { members } = await callOk(b.client, "list_members");
  const invite = await cliPost(url, b.token, "members", { orgId: b.orgId, action: "invite" });
  // A has data of its own too, so its pages and lists are not empty.
  await callOk(a.client, "save_issue", { title: "Alma's own work", work: true, changeType: "feat", noDependency: "alone" });

  return {
    app,
    url,
    a,
    b,
    marker,
    bIds: {
      issues,
      claimToken: claim.claimToken,
      commentId: comment.id,
      attachmentId: attachment.id,
      memberIds: members.map((m: { memberId: string }) => m.memberId),
      agentMemberId: members.find((m: { kind: string }) => m.kind === "agent").memberId,
      inviteId: invite.inviteId,
      label: `${marker.toLowerCase()}-label`,
    },
    async close() {
      await Promise.all([a.client.close().catch(() => {}), b.client.close().catch(() => {})]);
      await app.stop();
      await database?.close();
    },
  };
}
