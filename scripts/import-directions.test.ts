import fs from "node:fs";
import path from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

/**
 * Imports point down (docs/architecture.md, "Import directions"): app → server → db, workers →
 * server, and cli reaches the server only over the wire. This reads every import of every
 * .ts/.tsx/.mjs file in the tree (type-only and dynamic ones too) and fails on an edge the
 * table below does not allow.
 */
const root = path.resolve(import.meta.dirname, "..");
const skipped = new Set(["node_modules", "build", ".git", ".react-router", ".retasc", "results"]);

/** The part of the tree a file belongs to: its top folder, or the file itself at the root. */
export function partOf(file: string): string {
  const [top] = file.split("/");
  return file.includes("/") ? top! : file;
}

/** Which parts each part may import (its own files always). Tooling at the top reads what it measures. */
const tooling = ["constants", "db", "server", "workers", "test"];
export const allowed: Record<string, readonly string[]> = {
  constants: [],
  // Fakes of outside services (test/fakes/): test support, which may read the product's types.
  test: ["constants", "db", "server"],
  db: ["constants"],
  server: ["constants", "db"],
  workers: ["constants", "db", "server"],
  app: ["constants", "db", "server"],
  cli: [],
  "main.ts": ["constants", "db", "server", "workers", "app"],
  "vite.config.ts": ["scripts"],
  e2e: tooling,
  bench: tooling,
  swarm: [...tooling, "bench"],
  fuzz: tooling,
  // The mutation runs' Vitest config extends the project's, so a mutant runs under the same test settings.
  scripts: [...tooling, "vitest.config.ts"],
};

export const isTestFile = (file: string) => /\.test\.tsx?$/.test(file);
/** Test support: files under a testing/ folder or test/, a domain's testing.ts, the test suites themselves and their Vitest configs. */
export const isTestSupport = (file: string) =>
  isTestFile(file) || /(^|\/)testing(\/|\.ts$)/.test(file) || file.startsWith("test/") || /^vitest(\.\w+)?\.config\.ts$/.test(file);
const toolingPart = (part: string) => ["e2e", "bench", "swarm", "fuzz", "scripts"].includes(part);

export interface Edge {
  from: string;
  to: string;
}

function sourceFiles(dir = root): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (skipped.has(entry.name)) return [];
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return /\.(ts|tsx|mts|mjs|js)$/.test(entry.name) && !entry.name.endsWith(".d.ts") ? [path.relative(root, full)] : [];
  });
}

/** Our folders: an import that names one without a leading `.` goes through an alias, which the table cannot see. */
const aliased = /^(~|@\/|(app|server|db|workers|constants|cli|test)\/)/;

/** Every import of ours in the tree (relative specifiers: there is no path alias), as repository-relative paths. */
export function importEdges(): Edge[] {
  return sourceFiles().flatMap((from) => {
    const { importedFiles } = ts.preProcessFile(fs.readFileSync(path.join(root, from), "utf8"), true, true);
    return importedFiles.flatMap(({ fileName }) => {
      if (aliased.test(fileName)) return [{ from, to: `(alias) ${fileName}` }];
      if (!fileName.startsWith(".")) return [];
      const target = path.relative(root, path.resolve(root, path.dirname(from), fileName));
      return [{ from, to: target.split(path.sep).join("/") }];
    });
  });
}

/** The edges the table refuses, with the reason. */
export function violations(edges: Edge[]): string[] {
  const found: string[] = [];
  for (const { from, to } of edges) {
    if (to.startsWith("(alias) ")) {
      found.push(`${from} → ${to.slice(8)}: import it by a relative path`);
      continue;
    }
    const [a, b] = [partOf(from), partOf(to)];
    // Tests anywhere may use the shared test helpers and the fakes; production code never imports test support.
    if (isTestSupport(from) && (to.startsWith("server/testing/") || b === "test")) continue;
    if (!isTestSupport(from) && !toolingPart(a) && isTestSupport(to)) {
      found.push(`${from} → ${to}: production code imports test support`);
      continue;
    }
    if (a === b) continue;
    if (!(allowed[a] ?? []).includes(b)) found.push(`${from} → ${to}: ${a} may not import ${b}`);
  }
  return found;
}

/**
 * Cycles among server/<domain> folders and the files at server/'s top (context.ts, errors.ts, …),
 * production files only, as sorted lists: inside server/ imports point one way between floors as
 * they do between folders (docs/architecture.md, "Floors inside server/").
 */
export function domainCycles(edges: Edge[]): string[][] {
  const domainOf = (file: string) => {
    const parts = file.split("/");
    return parts[0] === "server" && parts.length > 1 ? parts[1]! : null;
  };
  const graph = new Map<string, Set<string>>();
  for (const { from, to } of edges) {
    const [a, b] = [domainOf(from), domainOf(to)];
    if (!a || !b || a === b || isTestSupport(from)) continue;
    if (!graph.has(a)) graph.set(a, new Set());
    graph.get(a)!.add(b);
  }
  return circles(graph).map((c) => c.sort());
}

/**
 * Cycles among files, anywhere in the tree, each printed as one loop of imports that closes it
 * (`a → b → c → a`) followed by every file of its knot. Type-only imports count: a type import
 * ties two files' designs as surely as a value import does, and a file cannot be understood
 * (or moved to another layer) without the files it names, whatever the compiler erases.
 */
export function fileCycles(edges: Edge[]): string[] {
  const graph = new Map<string, Set<string>>();
  for (const { from, to } of edges) {
    if (to.startsWith("(alias) ") || from === to) continue;
    if (!graph.has(from)) graph.set(from, new Set());
    graph.get(from)!.add(to);
  }
  return circles(graph)
    .map((knot) => {
      const members = new Set(knot);
      const start = [...members].sort()[0]!;
      const loop = shortestLoop(graph, members, start);
      return `${loop.join(" → ")}${members.size > loop.length - 1 ? `  (knot of ${members.size}: ${[...members].sort().join(", ")})` : ""}`;
    })
    .sort();
}

/** The shortest import path from `start` back to itself inside `members` (breadth first). */
function shortestLoop(graph: Map<string, Set<string>>, members: Set<string>, start: string): string[] {
  const cameFrom = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const v = queue.shift()!;
    for (const w of graph.get(v) ?? []) {
      if (!members.has(w)) continue;
      if (w === start) {
        const path = [v];
        while (path[0] !== start) path.unshift(cameFrom.get(path[0]!)!);
        return [...path, start];
      }
      if (!cameFrom.has(w)) {
        cameFrom.set(w, v);
        queue.push(w);
      }
    }
  }
  return [start, start];
}

/** Tarjan's strongly connected components of `graph`: each with more than one node is a circle. */
function circles(graph: Map<string, Set<string>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) found.push(component);
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

describe("import directions", () => {
  const edges = importEdges();

  it("reads the whole tree", () => {
    // A walk that silently found nothing would pass everything.
    for (const part of ["app", "server", "db", "workers", "cli", "test"]) expect(edges.some((e) => partOf(e.from) === part)).toBe(true);
  });

  it("every import points the way the table allows", () => {
    expect(violations(edges)).toEqual([]);
  });

  it("server/ domains and top files do not import each other in a cycle", () => {
    expect(domainCycles(edges).map((c) => c.join(" ↔ "))).toEqual([]);
  });

  it("no file imports itself back through others, anywhere in the tree (type-only imports too)", () => {
    expect(fileCycles(edges)).toEqual([]);
  });

  it("finds a planted circle of files and prints the loop", () => {
    expect(
      fileCycles([
        { from: "server/a/x.ts", to: "server/b/y.ts" },
        { from: "server/b/y.ts", to: "server/a/z.ts" },
        { from: "server/a/z.ts", to: "server/a/x.ts" },
        { from: "server/a/z.ts", to: "server/c/w.ts" },
        { from: "workers/catalog.ts", to: "workers/handlers/a.ts" },
        { from: "workers/handlers/a.ts", to: "workers/catalog.ts" },
      ]),
    ).toEqual(["server/a/x.ts → server/b/y.ts → server/a/z.ts → server/a/x.ts", "workers/catalog.ts → workers/handlers/a.ts → workers/catalog.ts"]);
  });

  it("refuses planted edges against the table", () => {
    expect(
      violations([
        { from: "db/client.ts", to: "server/config/index.ts" },
        { from: "server/outbox/index.ts", to: "workers/jobs.ts" },
        { from: "app/errors.server.ts", to: "workers/catalog.ts" },
        { from: "cli/src/api.ts", to: "server/errors.ts" },
        { from: "server/queue/index.ts", to: "server/testing/db.ts" },
        { from: "workers/runner.ts", to: "workers/testing/wait.ts" },
        { from: "app/root.tsx", to: "(alias) ~/components/ui.tsx" },
      ]),
    ).toHaveLength(7);
    expect(
      violations([
        { from: "db/postgres-driver.test.ts", to: "server/testing/db.ts" },
        { from: "workers/inline.test.ts", to: "workers/testing/wait.ts" },
        { from: "app/routes/dash.tsx", to: "server/orgs/account.ts" },
      ]),
    ).toEqual([]);
    expect(
      domainCycles([
        { from: "server/a/x.ts", to: "server/b/y.ts" },
        { from: "server/b/y.ts", to: "server/c/z.ts" },
        { from: "server/c/z.ts", to: "server/a/w.ts" },
        { from: "server/a/x.test.ts", to: "server/d/v.ts" },
        { from: "server/d/v.ts", to: "server/a/x.ts" },
        { from: "server/context.ts", to: "server/metrics/requests.ts" },
        { from: "server/metrics/health.ts", to: "server/outbox/index.ts" },
        { from: "server/outbox/index.ts", to: "server/events/index.ts" },
        { from: "server/events/index.ts", to: "server/context.ts" },
      ]),
    ).toEqual([["a", "b", "c"], ["context.ts", "events", "metrics", "outbox"]]);
  });

  it("only test support imports the fakes of outside services in test/", () => {
    // The product's code (server, workers, app, main.ts) never imports test/, even for a type.
    expect(
      violations([
        { from: "server/billing/stripe/client.ts", to: "test/fakes/stripe.ts" },
        { from: "workers/handlers/notify-delivery.ts", to: "test/fakes/slack.ts" },
        { from: "app/routes/dash.tsx", to: "test/fakes/linear.ts" },
        { from: "main.ts", to: "test/fakes/smtp.ts" },
        { from: "test/fakes/jira.ts", to: "workers/catalog.ts" },
        { from: "test/fakes/jira.ts", to: "app/root.tsx" },
      ]),
    ).toHaveLength(6);
    expect(
      violations([
        { from: "server/billing/stripe/webhook.test.ts", to: "test/fakes/stripe.ts" },
        { from: "server/testing/notify-env.ts", to: "test/fakes/slack.ts" },
        { from: "workers/testing/intake.ts", to: "test/fakes/github.ts" },
        { from: "cli/test/billing.test.ts", to: "test/fakes/stripe.ts" },
        { from: "e2e/billing.test.ts", to: "test/fakes/stripe.ts" },
        { from: "bench/notify.ts", to: "test/fakes/slack.ts" },
        { from: "test/fakes/jira.ts", to: "server/transfer/jira/fetch.ts" },
        { from: "test/fakes/github.ts", to: "test/fakes/git-forge.ts" },
      ]),
    ).toEqual([]);
    // The fakes live in test/ only: none is left under server/.
    expect(edges.filter((e) => /(^|\/)fake-[^/]*\.ts$/.test(e.to) && e.to.startsWith("server/"))).toEqual([]);
  });
});
