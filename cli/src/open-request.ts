import { request } from "./api.ts";
import { remoteUrl } from "./git.ts";

/** What `retasc done` learned about the branch's open pull/merge request. */
export interface FoundRequest {
  /** The request's page (or number), or null when none was found. */
  pr: string | null;
  /** One line for the person: what was found where, or why nothing was. */
  note: string;
}

interface ServerAnswer {
  pr: string | null;
  provider: "github" | "gitlab" | null;
  note: string;
}

/**
 * The open pull/merge request of `branch` (decision 063). The server is asked first
 * (POST /api/cli/open-request with the folder's key): it asks the project's GitHub or GitLab
 * connector with the connector's token, so this CLI needs none. Only when the project has no
 * connector to ask, a token from the environment (GITHUB_TOKEN or GH_TOKEN for a GitHub
 * remote, GITLAB_TOKEN for any other) asks the forge of the checkout's `origin` directly. Never
 * throws: a lookup that fails is a note, and the finish goes on without a request.
 */
export async function findOpenRequest(binding: { url: string; key: string }, branch: string, dir: string): Promise<FoundRequest> {
  let answer: ServerAnswer;
  try {
    answer = await request<ServerAnswer>(binding.url, "/api/cli/open-request", { token: binding.key, body: { branch } });
  } catch (error) {
    answer = { pr: null, provider: null, note: `no pull/merge request looked up: ${(error as Error).message}` };
  }
  if (answer.pr || answer.provider) return { pr: answer.pr, note: answer.note };
  const fromEnv = await fromEnvironment(branch, dir);
  return fromEnv ?? { pr: null, note: answer.note };
}

/** `origin`'s host and repository path (owner/name, or a GitLab group path), from an https or scp-style URL. */
export function repositoryOf(remote: string): { host: string; path: string } | null {
  const scp = /^(?:[^@/]+@)?([^:/]+):(?!\/)(.+?)(?:\.git)?\/?$/.exec(remote);
  if (scp && !/^[a-z+]+:\/\//i.test(remote)) return { host: scp[1]!, path: scp[2]! };
  try {
    const url = new URL(remote);
    const path = url.pathname.replace(/^\/+|\/+$/g, "").replace(/\.git$/, "");
    return url.hostname && path.includes("/") ? { host: url.hostname, path } : null;
  } catch {
    return null;
  }
}

async function fromEnvironment(branch: string, dir: string): Promise<FoundRequest | null> {
  const githubToken = process.env.GITHUB_TOKEN || process.env.GH_TOKEN;
  const gitlabToken = process.env.GITLAB_TOKEN;
  if (!githubToken && !gitlabToken) return null;
  const remote = remoteUrl(dir);
  const repo = remote ? repositoryOf(remote) : null;
  if (!repo) return { pr: null, note: "no pull/merge request looked up: the checkout has no origin remote to ask" };
  const github = githubToken && (repo.host === "github.com" || Boolean(process.env.GITHUB_API_URL));
  try {
    if (github) {
      const api = (process.env.GITHUB_API_URL || "https://api.github.com").replace(/\/+$/, "");
      const owner = repo.path.split("/")[0]!;
      const url = `${api}/repos/${repo.path}/pulls?state=open&sort=created&direction=desc&per_page=1&head=${encodeURIComponent(`${owner}:${branch}`)}`;
      const list = await forgeJson<{ html_url: string }[]>(url, { authorization: `Bearer ${githubToken}`, accept: "application/vnd.github+json" });
      return list[0] ? { pr: list[0].html_url, note: `found pull request ${list[0].html_url} (GITHUB_TOKEN)` } : { pr: null, note: `no open pull request found for ${branch} in ${repo.path}` };
    }
    if (!gitlabToken) return null;
    const api = (process.env.CI_API_V4_URL || `https://${repo.host}/api/v4`).replace(/\/+$/, "");
    const url = `${api}/projects/${encodeURIComponent(repo.path)}/merge_requests?state=opened&order_by=created_at&sort=desc&per_page=1&source_branch=${encodeURIComponent(branch)}`;
    const list = await forgeJson<{ web_url: string }[]>(url, { "private-token": gitlabToken });
    return list[0] ? { pr: list[0].web_url, note: `found merge request ${list[0].web_url} (GITLAB_TOKEN)` } : { pr: null, note: `no open merge request found for ${branch} in ${repo.path}` };
  } catch (error) {
    return { pr: null, note: `no pull/merge request found: could not ask ${repo.host} (${(error as Error).message})` };
  }
}

async function forgeJson<T>(url: string, headers: Record<string, string>): Promise<T> {
  const response = await fetch(url, { headers: { ...headers, "user-agent": "retasc-cli" }, signal: AbortSignal.timeout(15_000) });
  if (!response.ok) throw new Error(`answered ${response.status}`);
  const body = (await response.json()) as unknown;
  if (!Array.isArray(body)) throw new Error("answered no list");
  return body as T;
}
