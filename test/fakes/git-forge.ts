import http from "node:http";
import type { AddressInfo } from "node:net";

/** What the GitHub and GitLab fakes share: a source issue's state and thread, the requests received, the refusals made. */
export interface ForgeIssue {
  state: "open" | "closed";
  comments: string[];
}

export interface ForgeRequest {
  method: string;
  path: string;
  body: unknown;
}

/** A pull (GitHub) or merge (GitLab) request: its repository, source branch, number and state. */
export interface ForgeRequestItem {
  repo: string;
  branch: string;
  number: number;
  state: "open" | "closed";
}

export interface FakeForge {
  url: string;
  /** Pull/merge requests a test seeds; listed by source branch and state. */
  pulls: ForgeRequestItem[];
  /** Issues by `<repo>#<number>`; an issue not seeded is created open on first use. */
  issues: Map<string, ForgeIssue>;
  requests: ForgeRequest[];
  /** Requests refused for a wrong token or a malformed call: a test asserts it stays empty. */
  problems: string[];
  /** Answer every request with this status instead (e.g. 401 for a revoked token); null to serve normally. */
  failWith: number | null;
  close(): Promise<void>;
}

export type ForgeRoute = (forge: FakeForge, req: { method: string; path: string; query: URLSearchParams; headers: http.IncomingHttpHeaders; body: unknown }) => { status: number; body: unknown } | null;

export async function startForge(route: ForgeRoute): Promise<FakeForge> {
  const forge: FakeForge = {
    url: "",
    pulls: [],
    issues: new Map(),
    requests: [],
    problems: [],
    failWith: null,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  const server = http.createServer(async (req, res) => {
    let raw = "";
    for await (const chunk of req) raw += chunk;
    let body: unknown = null;
    try {
      body = raw ? JSON.parse(raw) : null;
    } catch {
      forge.problems.push(`${req.method} ${req.url}: body is not JSON`);
    }
    const parsed = new URL(req.url!, "http://fake");
    const path = decodeURIComponent(parsed.pathname);
    forge.requests.push({ method: req.method!, path, body });
    const answer = forge.failWith ? { status: forge.failWith, body: { message: "refused" } } : route(forge, { method: req.method!, path, query: parsed.searchParams, headers: req.headers, body });
    const { status, body: out } = answer ?? { status: 404, body: { message: "Not Found" } };
    if (!answer) forge.problems.push(`${req.method} ${path}: no such endpoint`);
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(out));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  forge.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return forge;
}

export function issueOf(forge: FakeForge, key: string): ForgeIssue {
  let issue = forge.issues.get(key);
  if (!issue) forge.issues.set(key, (issue = { state: "open", comments: [] }));
  return issue;
}

/** The write-back calls that changed something: comments posted and closes made. */
export function writes(forge: FakeForge) {
  return forge.requests.filter((r) => r.method === "POST" || r.method === "PATCH" || r.method === "PUT");
}
