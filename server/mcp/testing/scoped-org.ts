import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, afterEach, beforeAll, expect } from "vitest";
import { createTestDatabase, testDriver, type TestDatabase } from "../../testing/db.ts";
import { startApp, type AppProcess } from "../../testing/app-process.ts";
import { cliPost, signUp } from "../../testing/world.ts";
import { callOk, connectClient, newIssue } from "../testing.ts";

/**
 * Project scoping (decision 042) on the built app, for app-scope*.test.ts: an owner with projects
 * SEE and HID invites Mia scoped to SEE, and made HID's issues (one claimed, with a comment, an
 * attachment and a relation) and a visible one in SEE.
 */
export interface ScopedOrg {
  app: AppProcess;
  owner: Awaited<ReturnType<typeof signUp>>;
  mia: Awaited<ReturnType<typeof signUp>>;
  orgId: string;
  see: { id: string; prefix: string };
  hid: { id: string; prefix: string };
  miaMemberId: string;
  ownerAgent: Client;
  miaAgent: Client;
  /** HID's issue, and what the owner made on it, for aiming at. */
  hidden: { identifier: string; claimToken: string; commentId: string; attachmentId: string; other: string; title: string };
  visible: string;
}

/** Starts the app and seeds the org before the file's tests. Read the org's fields inside tests only. */
export function useScopedOrg() {
  const s = {} as ScopedOrg;
  let database: TestDatabase | null = null;
  const clients: Client[] = [];
  const connect = async (key: string, name: string) => {
    const client = await connectClient(`${s.app.url}/mcp`, key, { name });
    clients.push(client);
    return client;
  };
  const post = (token: string, path: string, body: unknown) => cliPost(s.app.url, token, path, body);

  beforeAll(async () => {
    database = testDriver === "postgres" ? await createTestDatabase({ max: 2 }) : null;
    s.app = await startApp({ ...(database ? { DATABASE_URL: database.url! } : {}), RETASC_EMAIL_PASSWORD: "on" });
    s.owner = await signUp(s.app.url, "Olga");
    const org = await post(s.owner.token, "orgs", { name: "Scoped org" });
    s.orgId = org.orgId ?? org.id;
    const project = async (prefix: string) => {
      const made = await post(s.owner.token, "projects", { orgId: s.orgId, name: `${prefix} project`, prefix });
      return { id: (made.projectId ?? made.id) as string, prefix };
    };
    s.see = await project("SEE");
    s.hid = await project("HID");
    s.ownerAgent = await connect((await post(s.owner.token, "keys", { orgId: s.orgId, action: "mint" })).key, "owner");

    // HID's issues outrank SEE's, so a dispatch that ignored the scope would hand them out first.
    const secret = await callOk(s.ownerAgent, "save_issue", newIssue("Hidden roadmap", { project: "HID", priority: 1 }));
    const other = await callOk(s.ownerAgent, "save_issue", newIssue("Hidden second", { project: "HID", priority: 1 }));
    await callOk(s.ownerAgent, "save_issue", newIssue("Hidden third", { project: "HID", priority: 1 }));
    await callOk(s.ownerAgent, "add_relation", { sourceId: secret.identifier, targetId: other.identifier, type: "related" });
    const comment = await callOk(s.ownerAgent, "save_comment", { issue: secret.identifier, body: "hidden note" });
    const attachment = await callOk(s.ownerAgent, "save_attachment", { issue: secret.identifier, url: "https://example.com/hidden" });
    const claim = await callOk(s.ownerAgent, "claim_issue", { identifier: secret.identifier });
    s.hidden = { identifier: secret.identifier, claimToken: claim.claimToken, commentId: comment.id, attachmentId: attachment.id, other: other.identifier, title: "Hidden roadmap" };
    s.visible = (await callOk(s.ownerAgent, "save_issue", newIssue("Visible work", { project: "SEE", priority: 3 }))).identifier;

    const invite = await post(s.owner.token, "members", { orgId: s.orgId, action: "invite", projectIds: [s.see.id] });
    expect(invite.projectIds).toEqual([s.see.id]);
    s.mia = await signUp(s.app.url, "Mia");
    const joined = await post(s.mia.token, "join", { code: invite.code });
    expect(joined).toMatchObject({ role: "member", projectIds: [s.see.id] });
    expect(joined.projects.map((p: { prefix: string }) => p.prefix)).toEqual(["SEE"]);
    s.miaMemberId = joined.memberId;
    s.miaAgent = await connect((await post(s.mia.token, "keys", { orgId: s.orgId, action: "mint" })).key, "mia");
  });
  afterEach(({ task }) => {
    if (task.result?.state === "fail") process.stderr.write(`app output:\n${s.app?.output().slice(-8000)}\n`);
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => {})));
    await s.app?.stop();
    await database?.close();
  });

  /** Whatever names the hidden project or its issues. */
  const hiddenMarks = () => [s.hid.id, "HID-", s.hidden.title, "Hidden second", "Hidden third", "hidden note"];
  return { org: s, connect, post, hiddenMarks };
}
