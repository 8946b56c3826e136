import { Octokit } from "@octokit/rest";
import type { Agent as HttpAgent } from "node:http";
import type { ConnectorProvider } from "../../db/schema/index.ts";
import type { Config } from "../config/index.ts";
import { onFirstUse } from "../on-first-use.ts";
import { outboundAgent, outboundRefusalOf } from "../outbound/address.ts";
import { gitlabHostOf } from "./urls.ts";

/** The provider side of a connector: where its repository lives and the token it writes with. */
export interface SourceRepo {
  provider: ConnectorProvider;
  repo: string;
  baseUrl: string | null;
  token: string | null;
}

/** The provider refused the token (401 or 403): retrying cannot help; the connector's card says so. */
export class TokenRefused extends Error {
  constructor(public readonly status: number) {
    super(`the provider refused the write-back token (${status})`);
    this.name = "TokenRefused";
  }
}

const silent = { debug() {}, info() {}, warn() {}, error() {} };

/** An HTTP status from either client's error, when it carries one. */
function statusOf(error: unknown): number | null {
  const e = error as { status?: unknown; cause?: { response?: { status?: unknown } } };
  const status = typeof e?.status === "number" ? e.status : e?.cause?.response?.status;
  return typeof status === "number" ? status : null;
}

async function refusalsAsTokenRefused<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    const status = statusOf(error);
    if (status === 401 || status === 403) throw new TokenRefused(status);
    throw outboundRefusalOf(error) ?? error;
  }
}

/**
 * A GitLab client for the connector: a base URL a person entered is called only through the
 * outbound guard (server/outbound/address.ts); GITLAB_URL is the operator's. Close it when done.
 */
const gitbeaker = onFirstUse(() => import("@gitbeaker/rest"));

async function gitlabFor(config: Config, source: SourceRepo & { token: string }, queryTimeout?: number) {
  const { Gitlab } = await gitbeaker.load();
  const host = gitlabHostOf(config, source.baseUrl);
  const agent = source.baseUrl ? outboundAgent(config, host) : undefined;
  // Gitbeaker types `agent` as Node's http.Agent but hands it to fetch as its undici `dispatcher`.
  return {
    api: new Gitlab({ host, token: source.token, ...(agent ? { agent: agent as unknown as HttpAgent } : {}), ...(queryTimeout ? { queryTimeout } : {}) }),
    close: () => void agent?.close(),
  };
}

/**
 * Closes the source issue with one comment. Safe to repeat: a comment carrying `marker` already
 * there is not posted again, and a source already closed is not closed again, so a retry after a
 * crash between the two calls completes the write-back without doubling either.
 */
export async function closeAtSource(config: Config, source: SourceRepo & { token: string }, number: number, comment: string, marker: string, reason: "completed" | "not_planned") {
  return refusalsAsTokenRefused(async () => {
    if (source.provider === "github") {
      const octokit = new Octokit({ auth: source.token, baseUrl: config.GITHUB_API_URL, log: silent });
      const [owner, repo] = source.repo.split("/") as [string, string];
      const at = { owner, repo, issue_number: number };
      const comments = await octokit.paginate(octokit.rest.issues.listComments, { ...at, per_page: 100 });
      const commented = !comments.some((c) => c.body?.includes(marker));
      if (commented) await octokit.rest.issues.createComment({ ...at, body: comment });
      const { data: issue } = await octokit.rest.issues.get(at);
      const closed = issue.state !== "closed";
      if (closed) await octokit.rest.issues.update({ ...at, state: "closed", state_reason: reason });
      return { commented, closed };
    }
    const { api, close } = await gitlabFor(config, source);
    try {
      const notes = await api.IssueNotes.all(source.repo, number);
      const commented = !notes.some((n) => String(n.body ?? "").includes(marker));
      if (commented) await api.IssueNotes.create(source.repo, number, comment);
      const issue = await api.Issues.show(number, { projectId: source.repo });
      const closed = issue.state !== "closed";
      if (closed) await api.Issues.edit(source.repo, number, { stateEvent: "close" });
      return { commented, closed };
    } finally {
      close();
    }
  });
}

/** GitLab's Developer access level: below it an author is outside the team. */
const GITLAB_DEVELOPER = 30;

/**
 * GitLab's issue payloads do not say the author's access, so it is asked for (members, inherited
 * ones too) with the connector's token. Without a token, or when GitLab does not answer, the
 * author counts as outside: their issue waits for triage rather than reaching an agent unchecked.
 */
export async function gitlabAuthorIsOutsider(config: Config, source: SourceRepo, authorId: number | null): Promise<boolean> {
  if (source.provider !== "gitlab" || !source.token || authorId === null) return true;
  const { api, close } = await gitlabFor(config, { ...source, token: source.token });
  try {
    const member = await api.ProjectMembers.show(source.repo, authorId, { includeInherited: true });
    return !(Number(member.access_level) >= GITLAB_DEVELOPER);
  } catch {
    return true;
  } finally {
    close();
  }
}

/** How long `retasc done` waits for the forge: it is a person at a terminal. */
const LOOKUP_TIMEOUT_MS = 10_000;

/** An open pull/merge request: its number and its page. */
export interface OpenRequest {
  number: number;
  url: string;
}

/**
 * The open pull (GitHub) or merge (GitLab) request whose source is `branch` in the connector's
 * repository, or null: the newest when there are several. GitHub is asked at GITHUB_API_URL (the
 * operator's); a GitLab base URL a person entered only through the outbound guard.
 */
export async function openRequestAtSource(config: Config, source: SourceRepo & { token: string }, branch: string): Promise<OpenRequest | null> {
  return refusalsAsTokenRefused(async () => {
    if (source.provider === "github") {
      const octokit = new Octokit({ auth: source.token, baseUrl: config.GITHUB_API_URL, log: silent });
      const [owner, repo] = source.repo.split("/") as [string, string];
      const { data } = await octokit.rest.pulls.list({
        owner,
        repo,
        head: `${owner}:${branch}`,
        state: "open",
        sort: "created",
        direction: "desc",
        per_page: 1,
        request: { signal: AbortSignal.timeout(LOOKUP_TIMEOUT_MS) },
      });
      const pull = data[0];
      return pull ? { number: pull.number, url: pull.html_url } : null;
    }
    const { api, close } = await gitlabFor(config, source, LOOKUP_TIMEOUT_MS);
    try {
      const found = await api.MergeRequests.all({ projectId: source.repo, sourceBranch: branch, state: "opened", orderBy: "created_at", sort: "desc", perPage: 1, maxPages: 1 });
      const request = found[0] as { iid?: unknown; web_url?: unknown } | undefined;
      return request ? { number: Number(request.iid), url: String(request.web_url) } : null;
    } finally {
      close();
    }
  });
}
