import http from "node:http";
import type { AddressInfo } from "node:net";
import { buildSchema, graphql } from "graphql";

/**
 * A local stand-in for Linear's GraphQL API (LINEAR_API_URL = `<url>/graphql`). Queries are
 * executed by the `graphql` package against a subset of Linear's real schema (same type, field
 * and argument names), so a query the client sends that Linear would refuse is refused here too.
 * It checks the Authorization header is the key it was given (Linear takes a personal key bare),
 * pages connections by cursor (first/after, pageInfo, archived items only with includeArchived),
 * sends the X-RateLimit-* and X-Complexity headers Linear sends, and answers a scripted request
 * with a rate limit: HTTP 429 with Retry-After, or HTTP 200 with a RATELIMITED GraphQL error.
 * The workspace is generated from a seed and mutable, so a test can change it and re-import.
 */
export interface FakeUser { id: string; name: string; displayName: string; email: string; active: boolean }
export interface FakeLabel { id: string; name: string; color: string; createdAt: string; archivedAt: string | null }
export interface FakeState { id: string; name: string; type: "triage" | "backlog" | "unstarted" | "started" | "completed" | "canceled"; color: string }
export interface FakeComment { id: string; body: string; createdAt: string; updatedAt: string; archivedAt: string | null; parentId: string | null; userId: string | null }
export interface FakeAttachment { id: string; title: string; subtitle: string | null; url: string; createdAt: string; updatedAt: string; creatorId: string | null }
export interface FakeRelation { id: string; type: "blocks" | "related" | "duplicate"; issueId: string; relatedIssueId: string; createdAt: string }
export interface FakeIssue {
  id: string;
  number: number;
  title: string;
  description: string | null;
  priority: number;
  estimate: number | null;
  dueDate: string | null;
  createdAt: string;
  updatedAt: string;
  startedAt: string | null;
  completedAt: string | null;
  canceledAt: string | null;
  archivedAt: string | null;
  stateId: string;
  parentId: string | null;
  creatorId: string | null;
  assigneeId: string | null;
  labelIds: string[];
  comments: FakeComment[];
  attachments: FakeAttachment[];
}
export interface FakeWorkspace {
  team: { id: string; key: string; name: string };
  otherTeam: { id: string; key: string; name: string };
  users: FakeUser[];
  labels: FakeLabel[];
  states: FakeState[];
  issues: FakeIssue[];
  relations: FakeRelation[];
}

export type RateLimitReply = { kind: "http429"; retryAfterSeconds: number } | { kind: "graphql"; resetInMs: number };

export interface FakeLinear {
  url: string;
  apiUrl: string;
  apiKey: string;
  workspace: FakeWorkspace;
  /** Every request's query text and variables, in order (the Authorization header is checked, never kept). */
  requests: { query: string; variables: Record<string, unknown> }[];
  /** Requests answered with a rate limit. */
  rateLimited: number;
  /** Answer request number `n` (1-based, counting from now) with a rate limit. */
  rateLimitAt(n: number, reply: RateLimitReply): void;
  /**
   * Uploads `bytes` as Linear does (served from `<url>/uploads/…`, LINEAR_UPLOADS_URL = `url`, to
   * the key as Authorization) and attaches it to `issue`. `host` names the server another way
   * (`localhost`): a file on a host other than the uploads one. `chunked` sends it without a
   * length, in pieces, as far as the reader keeps reading.
   */
  addFile(issue: FakeIssue, file: { title: string; bytes: Buffer; host?: string; chunked?: boolean }): FakeAttachment;
  /** Uploads `bytes` as `addFile` does, but pastes it into the description (or `comment`'s body) as Markdown, as Linear's editor does, with no attachment. Answers its url. */
  pasteFile(issue: FakeIssue, file: { title: string; bytes: Buffer; comment?: FakeComment }): string;
  /** Requests for uploaded files: path, whether they carried the key, bytes sent before the response ended or was dropped. */
  fileRequests: { path: string; host: string; withKey: boolean; sent: number }[];
  close(): Promise<void>;
}

const schema = buildSchema(/* GraphQL */ `
  scalar DateTime
  scalar TimelessDate
  enum PaginationOrderBy { createdAt updatedAt }
  type PageInfo { hasNextPage: Boolean!, hasPreviousPage: Boolean!, startCursor: String, endCursor: String }
  type User { id: ID!, name: String!, displayName: String!, email: String!, active: Boolean! }
  type WorkflowState { id: ID!, name: String!, type: String!, color: String! }
  type IssueLabel { id: ID!, name: String!, color: String!, createdAt: DateTime!, archivedAt: DateTime }
  type IssueLabelConnection { nodes: [IssueLabel!]!, pageInfo: PageInfo! }
  type Comment { id: ID!, body: String!, createdAt: DateTime!, updatedAt: DateTime!, archivedAt: DateTime, parent: Comment, user: User }
  type CommentConnection { nodes: [Comment!]!, pageInfo: PageInfo! }
  type Attachment { id: ID!, title: String!, subtitle: String, url: String!, createdAt: DateTime!, updatedAt: DateTime!, creator: User }
  type AttachmentConnection { nodes: [Attachment!]!, pageInfo: PageInfo! }
  type IssueRelation { id: ID!, type: String!, issue: Issue!, relatedIssue: Issue!, createdAt: DateTime! }
  type IssueRelationConnection { nodes: [IssueRelation!]!, pageInfo: PageInfo! }
  type Issue {
    id: ID!, identifier: String!, number: Float!, title: String!, description: String, priority: Float!, estimate: Float,
    dueDate: TimelessDate, createdAt: DateTime!, updatedAt: DateTime!, startedAt: DateTime, completedAt: DateTime,
    canceledAt: DateTime, archivedAt: DateTime, state: WorkflowState!, parent: Issue, creator: User, assignee: User, team: Team!,
    labels(first: Int, after: String, includeArchived: Boolean): IssueLabelConnection!
    comments(first: Int, after: String, includeArchived: Boolean): CommentConnection!
    attachments(first: Int, after: String, includeArchived: Boolean): AttachmentConnection!
    relations(first: Int, after: String, includeArchived: Boolean): IssueRelationConnection!
    inverseRelations(first: Int, after: String, includeArchived: Boolean): IssueRelationConnection!
    children(first: Int, after: String, includeArchived: Boolean): IssueConnection!
  }
  type IssueConnection { nodes: [Issue!]!, pageInfo: PageInfo! }
  type Team {
    id: ID!, key: String!, name: String!, issueCount(includeArchived: Boolean): Int!
    issues(first: Int, after: String, includeArchived: Boolean, orderBy: PaginationOrderBy): IssueConnection!
  }
  type TeamConnection { nodes: [Team!]!, pageInfo: PageInfo! }
  type Query {
    viewer: User!
    teams(first: Int, after: String, includeArchived: Boolean): TeamConnection!
    team(id: String!): Team!
    issue(id: String!): Issue!
  }
`);

/** Linear's cap on `first`. */
const MAX_PAGE = 250;

type PageArgs = { first?: number | null; after?: string | null; includeArchived?: boolean | null };

function connection<T extends { id: string; archivedAt?: string | null }>(all: T[], args: PageArgs, wrap: (item: T) => unknown) {
  const first = Math.min(args.first ?? 50, MAX_PAGE);
  const visible = args.includeArchived ? all : all.filter((x) => !x.archivedAt);
  const start = args.after ? visible.findIndex((x) => x.id === args.after) + 1 : 0;
  if (args.after && start === 0) throw new Error("Invalid cursor");
  const page = visible.slice(start, start + first);
  return {
    nodes: page.map(wrap),
    pageInfo: {
      hasNextPage: start + first < visible.length,
      hasPreviousPage: start > 0,
      startCursor: page[0]?.id ?? null,
      endCursor: page.at(-1)?.id ?? null,
    },
  };
}

/** A small deterministic generator (mulberry32), so a seed gives the same workspace every time. */
function random(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, int: (n: number) => Math.floor(next() * n), pick: <T>(xs: readonly T[]) => xs[Math.floor(next() * xs.length)]! };
}

const uuid = (kind: number, n: number) => `${kind.toString(16).padStart(8, "0")}-0000-4000-8000-${n.toString(16).padStart(12, "0")}`;

/**
 * A realistic workspace: `issues` issues in team ENG (numbers with gaps, as deleted issues
 * leave), sub-issues up to five levels deep, threaded comments (one issue has a thread longer
 * than a nested page), every relation type, archived issues, comments and labels, link
 * attachments, and every workflow state type.
 */
export function generateWorkspace(options: { issues?: number; seed?: number } = {}): FakeWorkspace {
  const count = options.issues ?? 2000;
  const r = random(options.seed ?? 16);
  const base = Date.parse("2025-01-06T09:00:00.000Z");
  const at = (ms: number) => new Date(ms).toISOString();
  const users: FakeUser[] = Array.from({ length: 12 }, (_, i) => ({
    id: uuid(1, i + 1),
    name: `Person ${i + 1}`,
    displayName: `p${i + 1}`,
    email: `Person.${i + 1}@Linear-Customer.example`,
    active: i !== 11,
  }));
  const labelNames = ["Bug", "Feature", "Improvement", "Design", "Infra", "Docs", "Security", "Old"];
  const labels: FakeLabel[] = labelNames.map((name, i) => ({
    id: uuid(2, i + 1),
    name,
    color: `#${(0x4e5ba6 + i * 0x151515).toString(16).slice(-6)}`,
    createdAt: at(base - 86_400_000 * (10 - i)),
    archivedAt: name === "Old" ? at(base) : null,
  }));
  const states: FakeState[] = [
    { id: uuid(3, 1), name: "Backlog", type: "backlog", color: "#bec2c8" },
    { id: uuid(3, 2), name: "Todo", type: "unstarted", color: "#e2e2e2" },
    { id: uuid(3, 3), name: "In Progress", type: "started", color: "#f2c94c" },
    { id: uuid(3, 4), name: "In Review", type: "started", color: "#0f783c" },
    { id: uuid(3, 5), name: "Done", type: "completed", color: "#5e6ad2" },
    { id: uuid(3, 6), name: "Canceled", type: "canceled", color: "#95a2b3" },
  ];
  const issues: FakeIssue[] = [];
  const depth = new Map<string, number>();
  let number = 0;
  let commentN = 0;
  let attachmentN = 0;
  for (let i = 0; i < count; i++) {
    number += r.next() < 0.05 ? 2 : 1;
    const id = uuid(4, i + 1);
    const created = base + i * 3_600_000 + r.int(3_000_000);
    const state = r.pick(states);
    const started = state.type === "started" || state.type === "completed" ? created + 3_600_000 + r.int(86_400_000) : null;
    const completed = state.type === "completed" ? started! + r.int(3 * 86_400_000) + 1000 : null;
    const canceled = state.type === "canceled" ? created + r.int(5 * 86_400_000) + 1000 : null;
    const updated = Math.max(created, started ?? 0, completed ?? 0, canceled ?? 0) + r.int(86_400_000);
    let parentId: string | null = null;
    if (i > 0 && r.next() < 0.3) {
      const candidate = issues[i - 1 - r.int(Math.min(i, 40))]!;
      if ((depth.get(candidate.id) ?? 0) < 4) parentId = candidate.id;
    }
    depth.set(id, parentId ? depth.get(parentId)! + 1 : 0);
    const comments: FakeComment[] = [];
    const thread = i === 7 ? 60 : r.int(5);
    for (let c = 0; c < thread; c++) {
      const cAt = created + (c + 1) * 600_000;
      const parent = comments.length > 0 && r.next() < 0.5 ? r.pick(comments) : null;
      comments.push({
        id: uuid(5, ++commentN),
        body: `Comment ${c + 1} on ENG-${number}: ${r.next() < 0.2 ? "see **this** & <that>" : "looks good"}`,
        createdAt: at(cAt),
        updatedAt: at(cAt + r.int(60_000)),
        archivedAt: r.next() < 0.03 ? at(cAt + 1000) : null,
        parentId: parent?.id ?? null,
        userId: r.next() < 0.05 ? null : r.pick(users).id,
      });
    }
    const attachments: FakeAttachment[] = Array.from({ length: r.int(3) }, (_, a) => ({
      id: uuid(6, ++attachmentN),
      title: `Link ${a + 1}`,
      subtitle: a === 0 ? "GitHub" : null,
      url: `https://github.example/acme/app/pull/${attachmentN}`,
      createdAt: at(created + 120_000 * (a + 1)),
      updatedAt: at(created + 120_000 * (a + 1)),
      creatorId: r.pick(users).id,
    }));
    const labelIds = [...new Set(Array.from({ length: r.int(3) }, () => r.pick(labels).id))];
    issues.push({
      id,
      number,
      title: `Issue ${number}: ${r.pick(["fix", "add", "remove", "rework"])} the ${r.pick(["login", "billing", "queue", "export", "search"])} flow`,
      description: r.next() < 0.8 ? `## Context\n\nIssue ${number} body with *markdown*.\n\n- one\n- two` : null,
      priority: r.int(5),
      estimate: r.next() < 0.6 ? r.pick([1, 2, 3, 5, 8]) : null,
      dueDate: r.next() < 0.2 ? at(created + r.int(60) * 86_400_000).slice(0, 10) : null,
      createdAt: at(created),
      updatedAt: at(updated),
      startedAt: started ? at(started) : null,
      completedAt: completed ? at(completed) : null,
      canceledAt: canceled ? at(canceled) : null,
      archivedAt: (state.type === "completed" || state.type === "canceled") && r.next() < 0.1 ? at(updated + 1000) : null,
      stateId: state.id,
      parentId,
      creatorId: r.pick(users).id,
      assigneeId: r.next() < 0.7 ? r.pick(users).id : null,
      labelIds,
      comments,
      attachments,
    });
  }
  const relations: FakeRelation[] = [];
  const seen = new Set<string>();
  const types = ["blocks", "related", "duplicate"] as const;
  for (let n = 0; n < Math.floor(count / 4); n++) {
    const a = r.int(count);
    const b = r.int(count);
    const type = types[n % 3]!;
    const edge = `${Math.min(a, b)}:${Math.max(a, b)}`;
    if (a === b || seen.has(edge)) continue;
    seen.add(edge);
    // A blocks edge always runs from the older issue to the newer, so the generated graph has no cycle.
    const [from, to] = type === "blocks" && a > b ? [b, a] : [a, b];
    relations.push({ id: uuid(7, n + 1), type, issueId: issues[from]!.id, relatedIssueId: issues[to]!.id, createdAt: issues[Math.max(from, to)]!.createdAt });
  }
  return {
    team: { id: uuid(8, 1), key: "ENG", name: "Engineering" },
    otherTeam: { id: uuid(8, 2), key: "OPS", name: "Operations" },
    users,
    labels,
    states,
    issues,
    relations,
  };
}

/** The issue's Retasc status, as the import maps Linear's state types: for the tests' item-by-item checks. */
export const stateTypeOf = (w: FakeWorkspace, issue: FakeIssue) => w.states.find((s) => s.id === issue.stateId)!.type;

function resolvers(w: FakeWorkspace) {
  const userById = (id: string | null) => (id ? (w.users.find((u) => u.id === id) ?? null) : null);
  const issueIndex = () => new Map(w.issues.map((i) => [i.id, i]));
  let index = issueIndex();
  let indexedLength = -1;
  const byId = (id: string) => {
    if (indexedLength !== w.issues.length) {
      index = issueIndex();
      indexedLength = w.issues.length;
    }
    return index.get(id);
  };
  const comment = (issue: FakeIssue) => (c: FakeComment): unknown => ({
    ...c,
    user: userById(c.userId),
    parent: c.parentId ? comment(issue)(issue.comments.find((p) => p.id === c.parentId)!) : null,
  });
  const relation = (rel: FakeRelation) => ({ ...rel, issue: () => wrapIssue(byId(rel.issueId)!), relatedIssue: () => wrapIssue(byId(rel.relatedIssueId)!) });
  const wrapIssue = (i: FakeIssue): unknown => ({
    ...i,
    identifier: `${w.team.key}-${i.number}`,
    state: w.states.find((s) => s.id === i.stateId),
    parent: () => (i.parentId ? wrapIssue(byId(i.parentId)!) : null),
    creator: () => userById(i.creatorId),
    assignee: () => userById(i.assigneeId),
    team: () => wrapTeam(w.team),
    labels: (args: PageArgs) => connection(w.labels.filter((l) => i.labelIds.includes(l.id)), args, (l) => l),
    comments: (args: PageArgs) => connection(i.comments, args, comment(i)),
    attachments: (args: PageArgs) => connection(i.attachments as (FakeAttachment & { archivedAt?: null })[], args, (a) => ({ ...a, creator: userById(a.creatorId) })),
    relations: (args: PageArgs) => connection(w.relations.filter((x) => x.issueId === i.id), args, relation),
    inverseRelations: (args: PageArgs) => connection(w.relations.filter((x) => x.relatedIssueId === i.id), args, relation),
    children: (args: PageArgs) => connection(w.issues.filter((x) => x.parentId === i.id), args, wrapIssue),
  });
  const wrapTeam = (t: FakeWorkspace["team"]) => ({
    ...t,
    issueCount: (args: { includeArchived?: boolean }) => (t.id === w.team.id ? w.issues.filter((i) => args.includeArchived || !i.archivedAt).length : 0),
    issues: (args: PageArgs) => connection(t.id === w.team.id ? w.issues : [], args, wrapIssue),
  });
  const teams = () => [w.team, w.otherTeam];
  return {
    viewer: () => w.users[0],
    teams: (args: PageArgs) => connection(teams(), args, wrapTeam),
    team: ({ id }: { id: string }) => {
      const t = teams().find((x) => x.id === id);
      if (!t) throw new Error("Entity not found: Team");
      return wrapTeam(t);
    },
    issue: ({ id }: { id: string }) => {
      const i = byId(id);
      if (!i) throw new Error("Entity not found: Issue");
      return wrapIssue(i);
    },
  };
}

export async function startFakeLinear(options: { apiKey?: string; workspace?: FakeWorkspace } = {}): Promise<FakeLinear> {
  const apiKey = options.apiKey ?? `lin_api_${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
  const workspace = options.workspace ?? generateWorkspace();
  const root = resolvers(workspace);
  const requests: FakeLinear["requests"] = [];
  const scripted = new Map<number, RateLimitReply>();
  let served = 0;
  const limit = 1500;
  const complexityLimit = 3_000_000;
  const files = new Map<string, { bytes: Buffer; chunked: boolean }>();
  const fileRequests: FakeLinear["fileRequests"] = [];
  const serveFile = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const path = (req.url ?? "/").split("?")[0]!;
    const seen = { path, host: req.headers.host ?? "", withKey: req.headers.authorization === apiKey, sent: 0 };
    fileRequests.push(seen);
    const file = files.get(path);
    if (req.headers.authorization !== apiKey) return void res.writeHead(401).end("Unauthorized");
    if (!file) return void res.writeHead(404).end("Not found");
    if (!file.chunked) {
      res.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(file.bytes.length) });
      seen.sent = file.bytes.length;
      return void res.end(file.bytes);
    }
    res.writeHead(200, { "content-type": "application/octet-stream" });
    const write = () => {
      while (seen.sent < file.bytes.length && !res.destroyed) {
        const piece = file.bytes.subarray(seen.sent, seen.sent + 64 * 1024);
        seen.sent += piece.length;
        if (!res.write(piece)) return void res.once("drain", write);
      }
      if (!res.destroyed) res.end();
    };
    write();
  };
  const server = http.createServer((req, res) => {
    if (req.method === "GET" && req.url?.startsWith("/uploads/")) return serveFile(req, res);
    let raw = "";
    req.on("data", (d: Buffer) => (raw += d.toString()));
    req.on("end", async () => {
      const reply = (status: number, body: unknown, headers: Record<string, string> = {}) => {
        res.writeHead(status, { "content-type": "application/json; charset=utf-8", ...headers });
        res.end(JSON.stringify(body));
      };
      if (req.method !== "POST" || req.url !== "/graphql") return reply(404, { error: "not found" });
      if (req.headers.authorization !== apiKey) {
        return reply(400, { errors: [{ message: "Authentication required, not authenticated", extensions: { type: "authentication error", code: "AUTHENTICATION_ERROR", userError: true } }] });
      }
      served++;
      const resetAt = Date.now() + 60 * 60_000;
      const rate = {
        "x-ratelimit-requests-limit": String(limit),
        "x-ratelimit-requests-remaining": String(Math.max(0, limit - served)),
        "x-ratelimit-requests-reset": String(resetAt),
        "x-ratelimit-complexity-limit": String(complexityLimit),
      };
      const scriptedReply = scripted.get(served);
      if (scriptedReply) {
        scripted.delete(served);
        fake.rateLimited++;
        const limited = { errors: [{ message: "Rate limit exceeded", extensions: { code: "RATELIMITED", type: "ratelimited", userError: true } }] };
        if (scriptedReply.kind === "http429") return reply(429, limited, { ...rate, "retry-after": String(scriptedReply.retryAfterSeconds), "x-ratelimit-requests-remaining": "0" });
        return reply(200, limited, { ...rate, "x-ratelimit-complexity-remaining": "0", "x-ratelimit-complexity-reset": String(Date.now() + scriptedReply.resetInMs) });
      }
      let body: { query?: string; variables?: Record<string, unknown> };
      try {
        body = JSON.parse(raw);
      } catch {
        return reply(400, { errors: [{ message: "Invalid JSON" }] });
      }
      requests.push({ query: body.query ?? "", variables: body.variables ?? {} });
      const result = await graphql({ schema, source: body.query ?? "", rootValue: root, variableValues: body.variables });
      // Linear's complexity: roughly one point per node a query may return; a flat estimate from the answer's size is enough here.
      const complexity = Math.ceil(JSON.stringify(result.data ?? {}).length / 100);
      reply(result.errors ? 400 : 200, result.errors ? { errors: result.errors.map((e) => ({ message: e.message, extensions: { code: "GRAPHQL_VALIDATION_FAILED", type: "graphql error" } })) } : result, {
        ...rate,
        "x-complexity": String(complexity),
        "x-ratelimit-complexity-remaining": String(complexityLimit - complexity),
        "x-ratelimit-complexity-reset": String(resetAt),
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const fake: FakeLinear = {
    url,
    apiUrl: `${url}/graphql`,
    apiKey,
    workspace,
    requests,
    rateLimited: 0,
    rateLimitAt(n, reply) {
      scripted.set(served + n, reply);
    },
    fileRequests,
    addFile(issue, file) {
      const n = files.size + 1;
      const path = `/uploads/${uuid(9, 1)}/${uuid(10, n)}/${encodeURIComponent(file.title)}`;
      files.set(path, { bytes: file.bytes, chunked: file.chunked ?? false });
      const origin = file.host ? url.replace("127.0.0.1", file.host) : url;
      const at = new Date(Date.parse(issue.createdAt) + 7_000 + n).toISOString();
      const attachment: FakeAttachment = { id: uuid(11, n), title: file.title, subtitle: null, url: `${origin}${path}`, createdAt: at, updatedAt: at, creatorId: workspace.users[0]!.id };
      issue.attachments.push(attachment);
      return attachment;
    },
    pasteFile(issue, file) {
      const n = files.size + 1;
      const path = `/uploads/${uuid(9, 1)}/${uuid(12, n)}/${encodeURIComponent(file.title)}`;
      files.set(path, { bytes: file.bytes, chunked: false });
      const image = `![${file.title}](${url}${path})`;
      if (file.comment) file.comment.body = `${file.comment.body}\n\n${image}`;
      else issue.description = `${issue.description ?? ""}\n\n${image}`;
      return `${url}${path}`;
    },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
  return fake;
}
