import { sign } from "@octokit/webhooks-methods";
import crypto from "node:crypto";
import { issueOf, startForge, type FakeForge } from "./git-forge.ts";

/**
 * A local GitHub REST API for the write-back (@octokit/rest at GITHUB_API_URL): an issue's
 * comments (list, create), the issue (get, update), open pull requests by head branch (`pulls`). It checks the token as GitHub does
 * (`Authorization: token …` or `Bearer …`, 401 "Bad credentials" otherwise) and records every
 * request. `deliver` sends a webhook signed as GitHub signs it (X-Hub-Signature-256).
 */
export async function startFakeGithub(options: { token: string }): Promise<FakeForge> {
  return startForge((forge, req) => {
    const auth = String(req.headers.authorization ?? "");
    if (auth !== `token ${options.token}` && auth !== `Bearer ${options.token}`) {
      forge.problems.push(`${req.method} ${req.path}: bad credentials`);
      return { status: 401, body: { message: "Bad credentials" } };
    }
    const pulls = /^\/repos\/([^/]+)\/([^/]+)\/pulls$/.exec(req.path);
    if (pulls && req.method === "GET") {
      // head is owner:branch, as GitHub takes it; newest first.
      const [owner, branch] = (req.query.get("head") ?? ":").split(/:(.*)/s) as [string, string];
      const state = req.query.get("state") ?? "open";
      const found = forge.pulls
        .filter((p) => p.repo === `${pulls[1]}/${pulls[2]}` && owner === pulls[1] && p.branch === branch && (state === "all" || p.state === state))
        .sort((a, b) => b.number - a.number);
      const repo = `${pulls[1]}/${pulls[2]}`;
      return { status: 200, body: found.slice(0, Number(req.query.get("per_page") ?? 30)).map((p) => ({ number: p.number, state: p.state, html_url: `https://github.com/${repo}/pull/${p.number}`, head: { ref: p.branch } })) };
    }
    const m = /^\/repos\/([^/]+\/[^/]+)\/issues\/(\d+)(\/comments)?$/.exec(req.path);
    if (!m) return null;
    const issue = issueOf(forge, `${m[1]}#${m[2]}`);
    const body = req.body as { body?: unknown; state?: unknown } | null;
    if (m[3] && req.method === "GET") return { status: 200, body: issue.comments.map((text, i) => ({ id: i + 1, body: text })) };
    if (m[3] && req.method === "POST") {
      if (typeof body?.body !== "string") return { status: 422, body: { message: "body is required" } };
      issue.comments.push(body.body);
      return { status: 201, body: { id: issue.comments.length, body: body.body } };
    }
    if (!m[3] && req.method === "GET") return { status: 200, body: { number: Number(m[2]), state: issue.state } };
    if (!m[3] && req.method === "PATCH") {
      if (body?.state !== "closed" && body?.state !== "open") return { status: 422, body: { message: "state is open or closed" } };
      issue.state = body.state;
      return { status: 200, body: { number: Number(m[2]), state: issue.state } };
    }
    return null;
  });
}

/**
 * `payload` as GitHub delivers `event` to `url`: the raw body, its HMAC signature, a delivery id.
 * No Content-Length of ours: fetch adds its own, and once the npm undici is loaded (our outbound
 * guard) it is the global dispatcher and refuses the doubled header.
 */
export async function githubDelivery(url: string, secret: string, event: string, payload: unknown, deliveryId: string = crypto.randomUUID()): Promise<Request> {
  const body = JSON.stringify(payload);
  return new Request(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-github-event": event,
      "x-github-delivery": deliveryId,
      "x-hub-signature-256": await sign(secret, body),
      "user-agent": "GitHub-Hookshot/test",
    },
    body,
  });
}
