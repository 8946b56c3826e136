import crypto from "node:crypto";
import { issueOf, startForge, type FakeForge } from "./git-forge.ts";

/**
 * A local GitLab REST API (v4) for the write-back (@gitbeaker/rest at a connector's base URL or
 * GITLAB_URL): an issue's notes (list, create), the issue (show, edit with state_event), and a
 * project member's access level, merge requests by source branch (`pulls`). It checks PRIVATE-TOKEN and records every request. `members`
 * maps a user id to an access level (30 is Developer).
 */
export async function startFakeGitlab(options: { token: string; members?: Record<number, number> }): Promise<FakeForge> {
  return startForge((forge, req) => {
    if (req.headers["private-token"] !== options.token) {
      forge.problems.push(`${req.method} ${req.path}: bad token`);
      return { status: 401, body: { message: "401 Unauthorized" } };
    }
    const member = /^\/api\/v4\/projects\/(.+)\/members\/all\/(\d+)$/.exec(req.path);
    if (member && req.method === "GET") {
      const level = options.members?.[Number(member[2])];
      return level === undefined ? { status: 404, body: { message: "404 Not found" } } : { status: 200, body: { id: Number(member[2]), access_level: level } };
    }
    const merges = /^\/api\/v4\/projects\/(.+)\/merge_requests$/.exec(req.path);
    if (merges && req.method === "GET") {
      const state = req.query.get("state") ?? "all";
      const found = forge.pulls
        .filter((p) => p.repo === merges[1] && p.branch === req.query.get("source_branch") && (state === "all" || (state === "opened" ? p.state === "open" : p.state === state)))
        .sort((a, b) => b.number - a.number);
      return { status: 200, body: found.map((p) => ({ iid: p.number, state: p.state === "open" ? "opened" : "closed", source_branch: p.branch, web_url: `${forge.url}/${p.repo}/-/merge_requests/${p.number}` })) };
    }
    const m = /^\/api\/v4\/projects\/(.+)\/issues\/(\d+)(\/notes)?$/.exec(req.path);
    if (!m) return null;
    const issue = issueOf(forge, `${m[1]}#${m[2]}`);
    const body = req.body as { body?: unknown; state_event?: unknown; stateEvent?: unknown } | null;
    if (m[3] && req.method === "GET") return { status: 200, body: issue.comments.map((text, i) => ({ id: i + 1, body: text })) };
    if (m[3] && req.method === "POST") {
      if (typeof body?.body !== "string") return { status: 400, body: { message: "body is missing" } };
      issue.comments.push(body.body);
      return { status: 201, body: { id: issue.comments.length, body: body.body } };
    }
    const view = () => ({ iid: Number(m[2]), state: issue.state === "open" ? "opened" : "closed" });
    if (!m[3] && req.method === "GET") return { status: 200, body: view() };
    if (!m[3] && req.method === "PUT") {
      if (body?.state_event !== "close" && body?.state_event !== "reopen") return { status: 400, body: { message: "state_event is close or reopen" } };
      issue.state = body.state_event === "close" ? "closed" : "open";
      return { status: 200, body: view() };
    }
    return null;
  });
}

/** `payload` as GitLab delivers `event` ("Issue Hook", "Note Hook") to `url`: the secret token in X-Gitlab-Token, an event UUID. */
export function gitlabDelivery(url: string, token: string, event: string, payload: unknown, uuid: string = crypto.randomUUID()): Request {
  const body = JSON.stringify(payload);
  return new Request(url, {
    method: "POST",
    headers: { "content-type": "application/json", "x-gitlab-event": event, "x-gitlab-token": token, "x-gitlab-event-uuid": uuid },
    body,
  });
}
