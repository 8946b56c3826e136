import { sign } from "@octokit/webhooks-methods";
import { afterAll, beforeAll, expect, it } from "vitest";
import { login, retasc, signUp, startServer, type Person, type Server } from "./testing.ts";

/**
 * `retasc connector add|list|revoke` against the built app over HTTP: the token from standard
 * input, the secret printed once, Pending until GitHub's signed ping, then revoked (410).
 */
let server: Server;
let person: Person;

beforeAll(async () => {
  server = await startServer();
  person = await signUp(server, "Conny");
  expect((await login(server, person)).code).toBe(0);
});
afterAll(() => server?.close());

it("adds a GitHub connector with the token on stdin, lists it Pending then Connected, revokes it", async () => {
  const org = JSON.parse((await retasc(person, ["org", "create", "--name", "Conny's org", "--url", server.url, "--json"])).stdout) as { orgId: string };
  const project = await retasc(person, ["project", "create", "--name", "Web", "--prefix", "WEB", "--org-id", org.orgId, "--url", server.url, "--json"]);
  expect(project.code, project.stderr).toBe(0);
  const added = await retasc(person, ["connector", "add", "github", "acme/web", "--project", "WEB", "--token-stdin", "--org-id", org.orgId, "--url", server.url], { input: "ghp_cli_token\n" });
  expect(added.code, added.stderr).toBe(0);
  const secret = /^(rwh_\S+)$/m.exec(added.stdout)?.[1];
  expect(secret).toBeDefined();
  const webhookUrl = /Webhook URL: (\S+)/.exec(added.stdout + added.stderr)?.[1];
  expect(webhookUrl).toMatch(/\/webhooks\/github\/[0-9a-f-]{36}$/);
  expect(added.stdout + added.stderr).toContain("https://github.com/acme/web/settings/hooks/new");
  expect(added.stdout + added.stderr).not.toContain("ghp_cli_token");

  const list = async () => JSON.parse((await retasc(person, ["connector", "list", "--org-id", org.orgId, "--url", server.url, "--json"])).stdout).connectors as { id: string; connection: string; status: string; tokenOnFile: boolean }[];
  const [pending] = await list();
  expect(pending).toMatchObject({ connection: "pending", status: "active", tokenOnFile: true });

  const body = JSON.stringify({ zen: "Keep it logically awesome.", hook_id: 1 });
  const ping = await fetch(`${server.url}/webhooks/github/${pending!.id}`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-github-event": "ping", "x-github-delivery": crypto.randomUUID(), "x-hub-signature-256": await sign(secret!, body) },
    body,
  });
  expect(ping.status).toBe(202);
  expect((await list())[0]!.connection).toBe("connected");

  const revoked = await retasc(person, ["connector", "revoke", pending!.id, "--org-id", org.orgId, "--url", server.url]);
  expect(revoked.code, revoked.stderr).toBe(0);
  expect((await list())[0]!.status).toBe("revoked");
  const after = await fetch(`${server.url}/webhooks/github/${pending!.id}`, { method: "POST", headers: { "x-hub-signature-256": await sign(secret!, body) }, body });
  expect(after.status).toBe(410);
});
