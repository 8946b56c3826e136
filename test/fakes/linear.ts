import http from "node:http";
import type { AddressInfo } from "node:net";
import { buildSchema, graphql } from "graphql";
import { generateWorkspace, uuid, type FakeAttachment, type FakeComment, type FakeIssue, type FakeRelation, type FakeWorkspace } from "./linear-workspace.ts";

/**
 * A local stand-in for Linear's GraphQL API (LINEAR_API_URL = `<url>/graphql`). Queries are
 * executed by the `graphql` package against a subset of Linear's real schema (same type, field
 * and argument names), so a query the client sends that Linear would refuse is refused here too.
 * It checks the Authorization header is the key it was given (Linear takes a personal key bare),
 * pages connections by cursor (first/after, pageInfo, archived items only with includeArchived),
 * sends the X-RateLimit-* and X-Complexity headers Linear sends, and answers a scripted request
 * with a rate limit: HTTP 429 with Retry-After, or HTTP 200 with a RATELIMITED GraphQL error.
 * The workspace (./linear-workspace.ts) is generated from a seed and mutable, so a test can change
 * it and re-import.
 */

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
