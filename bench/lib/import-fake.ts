/**
 * `node --import tsx bench/lib/import-fake.ts <source> <size> [latencyMs]`: one tracker's local
 * server (test/fakes/) with a generated project of `size` issues, run as its own process so its
 * work is not the app's, for bench/imports.ts. With `latencyMs`, every request is answered that
 * much later, as a tracker across the internet answers, where the fakes answer at once. Prints one
 * line of JSON: the app's configuration for it, the host the outbound guard lets through, and the
 * source's dry-run input (credential and what to read). Then, for each line `change K` on its
 * stdin, changes K items at the source as a person would (see `changedTitle`) and prints one line
 * `{"changed":K}` when the fake serves the changes.
 */
import http from "node:http";
import readline from "node:readline";
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

/** The j-th changed item's new title and the comment added to it: what bench/imports.ts looks for after a re-import. */
export const changedTitle = (j: number) => `Changed at the source ${j}`;
export const lateComment = (j: number) => `A late comment ${j}`;

/** `k` of `items`, spread evenly over them, each with its index among the changed. */
function spread<T>(items: T[], k: number): [T, number][] {
  if (k > items.length) throw new Error(`cannot change ${k} of ${items.length} items`);
  return Array.from({ length: k }, (_, j) => [items[Math.floor((j * items.length) / k)]!, j]);
}

/** A started fake and how to change `k` of its items: each renamed, a comment added, its update time now. */
type Started = { fake: ImportFake; change(k: number): void };

const starts: Record<string, (size: number) => Promise<Started>> = {
  async linear(size) {
    const fake = await startFakeLinear({ workspace: generateWorkspace({ issues: size }) });
    const w = fake.workspace;
    return {
      fake: { config: { LINEAR_API_URL: fake.apiUrl }, host: new URL(fake.apiUrl).host, input: { apiKey: fake.apiKey, teamId: w.team.id } },
      change(k) {
        const now = new Date().toISOString();
        for (const [issue, j] of spread(w.issues.filter((i) => !i.archivedAt), k)) {
          Object.assign(issue, { title: changedTitle(j), updatedAt: now });
          issue.comments.push({ id: `c0ffee00-0000-4000-8000-${String(j).padStart(12, "0")}`, body: lateComment(j), createdAt: now, updatedAt: now, archivedAt: null, parentId: null, userId: w.users[0]!.id });
        }
      },
    };
  },
  jira: (size) => startJira(size, "BJ", "cloud"),
  "jira-dc": (size) => startJira(size, "BD", "dataCenter"),
  async asana(size) {
    // Tasks with their subtasks come to about 1.3 issues a task: size top-level tasks would overshoot.
    const fake = await startFakeAsana({ project: generateAsanaProject({ tasks: Math.round(size / 1.3) }) });
    const p = fake.project;
    return {
      fake: { config: { ASANA_API_URL: fake.url }, host: new URL(fake.url).host, input: { accessToken: fake.token, projectGid: p.gid } },
      change(k) {
        const now = new Date().toISOString();
        for (const [task, j] of spread(p.tasks, k)) {
          Object.assign(task, { name: changedTitle(j), modified_at: now });
          p.stories.get(task.gid)!.push({ gid: String(1_699_999_000_000_000 + j), type: "comment", resource_subtype: "comment_added", text: lateComment(j), created_at: now, created_by: p.users[0]! });
        }
      },
    };
  },
  async shortcut(size) {
    const fake = await startFakeShortcut({ workspace: generateShortcutWorkspace({ stories: size }) });
    const w = fake.workspace;
    return {
      fake: { config: { SHORTCUT_API_URL: fake.url }, host: new URL(fake.url).host, input: { apiToken: fake.token, team: "@mobile" } },
      change(k) {
        const now = new Date().toISOString();
        for (const [story, j] of spread(w.stories.filter((s) => s.group_id === w.team.id && !s.archived), k)) {
          Object.assign(story, { name: changedTitle(j), updated_at: now });
          story.comments!.push({ id: 990_000 + j, author_id: w.members[0]!.id, text: lateComment(j), created_at: now, updated_at: now, deleted: false, parent_id: null });
        }
      },
    };
  },
  async clickup(size) {
    const fake = await startFakeClickUp({ workspace: generateClickUpWorkspace({ tasks: size, inFolder: 0 }) });
    const w = fake.workspace;
    return {
      fake: { config: { CLICKUP_API_URL: fake.url }, host: new URL(fake.url).host, input: { apiToken: fake.token, location: `list:${w.list.id}` } },
      change(k) {
        const now = String(Date.now());
        for (const [task, j] of spread(w.tasks.filter((t) => t.list!.id === w.list.id), k)) {
          Object.assign(task, { name: changedTitle(j), date_updated: now });
          // ClickUp lists a task's comments newest first.
          w.comments.get(task.id)!.unshift({ id: String(99_000_000 + j), comment_text: lateComment(j), user: w.members[0]!, date: now, reply_count: 0 });
        }
      },
    };
  },
};

async function startJira(size: number, key: string, deployment: "cloud" | "dataCenter"): Promise<Started> {
  const fake = await startFakeJira({ project: generateJiraProject({ issues: size, key }), deployment });
  const credential: Record<string, string> = deployment === "cloud" ? { email: fake.email, apiToken: fake.apiToken } : { apiToken: fake.apiToken };
  return {
    fake: { config: {}, host: new URL(fake.url).host, input: { site: fake.url, ...credential, projectKey: key } },
    change(k) {
      // Jira's own format: `2026-06-01T10:00:00.000+0000`.
      const now = new Date().toISOString().replace("Z", "+0000");
      for (const [issue, j] of spread(fake.project.issues, k)) {
        Object.assign(issue.fields, { summary: changedTitle(j), updated: now });
        // Cloud's comment bodies are ADF documents, Data Center's wiki markup.
        const body = deployment === "cloud" ? { type: "doc", content: [{ type: "paragraph", content: [{ type: "text", text: lateComment(j) }] }] } : lateComment(j);
        issue.fields.comment!.comments.push({ id: String(999_000 + j), author: fake.project.users[0]!, body, created: now } as never);
      }
    },
  };
}
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
  const started = await starts[source!]!(Number(size));
  process.stdout.write(`${JSON.stringify(started.fake)}\n`);
  for await (const line of readline.createInterface({ input: process.stdin })) {
    const [command, k] = line.trim().split(" ");
    if (command !== "change") throw new Error(`unknown command ${line}`);
    started.change(Number(k));
    process.stdout.write(`${JSON.stringify({ changed: Number(k) })}\n`);
  }
}
