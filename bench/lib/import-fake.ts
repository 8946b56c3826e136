/**
 * `node --import tsx bench/lib/import-fake.ts <source> <size> [latencyMs]`: one tracker's local
 * server (test/fakes/) with a generated project of `size` issues, run as its own process so its
 * work is not the app's, for bench/imports.ts. With `latencyMs`, every request is answered that
 * much later, as a tracker across the internet answers, where the fakes answer at once. Prints one
 * line of JSON: the app's configuration for it, the host the outbound guard lets through, and the
 * source's dry-run input (credential and what to read).
 */
import http from "node:http";
import { generateAsanaProject, startFakeAsana } from "../../test/fakes/asana.ts";
import { generateClickUpWorkspace, startFakeClickUp } from "../../test/fakes/clickup.ts";
import { generateJiraProject, startFakeJira } from "../../test/fakes/jira.ts";
import { generateWorkspace } from "../../test/fakes/linear-workspace.ts";
import { startFakeLinear } from "../../test/fakes/linear.ts";
import { generateShortcutWorkspace, startFakeShortcut } from "../../test/fakes/shortcut.ts";

export interface ImportFake {
  config: Record<string, string>;
  host: string;
  input: Record<string, string>;
}

const starts: Record<string, (size: number) => Promise<ImportFake>> = {
  async linear(size) {
    const fake = await startFakeLinear({ workspace: generateWorkspace({ issues: size }) });
    return { config: { LINEAR_API_URL: fake.apiUrl }, host: new URL(fake.apiUrl).host, input: { apiKey: fake.apiKey, teamId: fake.workspace.team.id } };
  },
  async jira(size) {
    const fake = await startFakeJira({ project: generateJiraProject({ issues: size, key: "BJ" }) });
    return { config: {}, host: new URL(fake.url).host, input: { site: fake.url, email: fake.email, apiToken: fake.apiToken, projectKey: "BJ" } };
  },
  async "jira-dc"(size) {
    const fake = await startFakeJira({ project: generateJiraProject({ issues: size, key: "BD" }), deployment: "dataCenter" });
    return { config: {}, host: new URL(fake.url).host, input: { site: fake.url, apiToken: fake.apiToken, projectKey: "BD" } };
  },
  async asana(size) {
    // Tasks with their subtasks come to about 1.3 issues a task: size top-level tasks would overshoot.
    const fake = await startFakeAsana({ project: generateAsanaProject({ tasks: Math.round(size / 1.3) }) });
    return { config: { ASANA_API_URL: fake.url }, host: new URL(fake.url).host, input: { accessToken: fake.token, projectGid: fake.project.gid } };
  },
  async shortcut(size) {
    const fake = await startFakeShortcut({ workspace: generateShortcutWorkspace({ stories: size }) });
    return { config: { SHORTCUT_API_URL: fake.url }, host: new URL(fake.url).host, input: { apiToken: fake.token, team: "@mobile" } };
  },
  async clickup(size) {
    const fake = await startFakeClickUp({ workspace: generateClickUpWorkspace({ tasks: size, inFolder: 0 }) });
    return { config: { CLICKUP_API_URL: fake.url }, host: new URL(fake.url).host, input: { apiToken: fake.token, location: `list:${fake.workspace.list.id}` } };
  },
};
/**
 * Every server this process creates from now on answers each request `ms` later: its handler is
 * called after the delay (the request's body waits, unread, meanwhile). The fakes create theirs
 * with `http.createServer(handler)` when started, so none of them needs an option for it.
 */
function answerEveryRequestAfter(ms: number): void {
  const create = http.createServer;
  http.createServer = ((...args: Parameters<typeof http.createServer>) => {
    const server = create(...args);
    const handlers = server.listeners("request") as ((req: http.IncomingMessage, res: http.ServerResponse) => void)[];
    server.removeAllListeners("request");
    server.on("request", (req, res) => setTimeout(() => handlers.forEach((handler) => handler.call(server, req, res)), ms));
    return server;
  }) as typeof http.createServer;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [source, size, latencyMs = "0"] = process.argv.slice(2);
  if (Number(latencyMs) > 0) answerEveryRequestAfter(Number(latencyMs));
  process.stdout.write(`${JSON.stringify(await starts[source!]!(Number(size)))}\n`);
}
