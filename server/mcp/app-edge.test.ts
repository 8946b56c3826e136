import fs from "node:fs";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { designTools, initialize, useSeededApp } from "./testing.ts";

/**
 * The built app's HTTP edge over raw requests: /mcp's refusals, discovery (server card, API
 * catalog), the docs and the public pages with their Markdown twins.
 */
// A 1 MiB body limit (the default, 16 MiB, fits a file attachment) so the 413 test sends little.
const { seeded } = useSeededApp(["EDGE"], { MCP_MAX_BODY_BYTES: String(1024 * 1024) });

describe("the HTTP edge of the built app", () => {
  const post = (body: string, headers: Record<string, string> = {}) =>
    fetch(seeded.endpoint, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        authorization: `Bearer ${seeded.orgs.EDGE!.people.alice.key}`,
        ...headers,
      },
      body,
    });

  test("401 with WWW-Authenticate, 403 on a foreign Origin, 413 on an oversized body, 400 on malformed JSON, 405 on GET", async () => {
    const anonymous = await post(JSON.stringify(initialize), { authorization: "" });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("www-authenticate")).toMatch(/^Bearer realm="retasc"/);

    const foreign = await post(JSON.stringify(initialize), { origin: "https://attacker.example" });
    expect(foreign.status).toBe(403);

    const oversized = await post(JSON.stringify({ ...initialize, params: { ...initialize.params, pad: "x".repeat(1_100_000) } }));
    expect(oversized.status).toBe(413);

    const malformed = await post('{"jsonrpc": "2.0", "id": 1, "method": ');
    expect(malformed.status).toBe(400);
    expect((await malformed.json()).error.code).toBe(-32700);

    const get = await fetch(seeded.endpoint, { headers: { accept: "text/event-stream", authorization: `Bearer ${seeded.orgs.EDGE!.people.alice.key}` } });
    expect(get.status).toBe(405);

    for (const response of [anonymous, foreign, oversized, get]) {
      const text = await response.text().catch(() => "");
      expect(text).not.toMatch(/at .*\.(js|ts):\d+/);
    }
  });

  test("discovery: server card, RFC 9727 api-catalog, the landing page as Markdown", async () => {
    const card = await fetch(`${seeded.app.url}/.well-known/mcp.json`);
    expect(card.status).toBe(200);
    const cardJson = await card.json();
    expect(cardJson).toMatchObject({
      endpoint: seeded.endpoint,
      transport: { type: "streamable-http", url: seeded.endpoint },
      authentication: { type: "bearer", header: "Authorization" },
    });
    expect(cardJson.tools).toHaveLength(designTools.length);

    const catalog = await fetch(`${seeded.app.url}/.well-known/api-catalog`);
    expect(catalog.headers.get("content-type")).toMatch(/^application\/linkset\+json/);
    const linkset = (await catalog.json()).linkset;
    expect(linkset[0]).toMatchObject({ anchor: `${seeded.app.url}/.well-known/api-catalog`, item: [{ href: seeded.endpoint }] });
    expect(linkset[1]["service-desc"][0].href).toBe(`${seeded.app.url}/.well-known/mcp.json`);
    const head = await fetch(`${seeded.app.url}/.well-known/api-catalog`, { method: "HEAD" });
    expect(head.headers.get("link")).toMatch(/rel="api-catalog"/);

    const markdown = await fetch(`${seeded.app.url}/index.md`);
    expect(markdown.headers.get("content-type")).toMatch(/^text\/markdown/);
    const text = await markdown.text();
    expect(text).toContain(`${seeded.endpoint}`);
    for (const name of designTools) expect(text).toContain(`\`${name}\``);
    expect(text).toContain(`${seeded.app.url}/auth.md`);
  });

  test("serves this server's docs and its pages for agents: /docs with Markdown twins, /llms.txt, /auth.md", async () => {
    const base = seeded.app.url;
    const llms = await fetch(`${base}/llms.txt`);
    expect(llms.headers.get("content-type")).toMatch(/^text\/plain/);
    const llmsText = await llms.text();
    expect(llmsText).toMatch(/^# Retasc\n\n> /);
    expect(llmsText).toContain(`[How agents authenticate](${base}/auth.md)`);
    expect(llmsText).toContain(`(${base}/docs/security.md)`);
    const auth = await fetch(`${base}/auth.md`);
    expect(auth.headers.get("content-type")).toMatch(/^text\/markdown/);
    expect(await auth.text()).toContain("| `CLAIM_MISMATCH` |");

    const index = await (await fetch(`${base}/docs`)).text();
    expect(index).toContain('href="/docs/security"');
    expect(index).toContain('href="/docs/decisions/041-org-deletion-by-crypto-shredding"');
    const page = await fetch(`${base}/docs/security`);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain(`<link rel="canonical" href="${base}/docs/security">`);
    expect(html).toContain(`<link rel="alternate" type="text/markdown" href="/docs/security.md">`);
    expect(html).toContain('<h2 id="known-gaps">');
    expect(html).toContain('href="#known-gaps"');
    // Links between the docs point at the served pages, not their Markdown.
    expect(await (await fetch(`${base}/docs/architecture`)).text()).toContain('href="decisions/041-org-deletion-by-crypto-shredding"');
    const twin = await fetch(`${base}/docs/security.md`);
    expect(twin.headers.get("content-type")).toMatch(/^text\/markdown/);
    expect(await twin.text()).toBe(fs.readFileSync(path.resolve(import.meta.dirname, "../../docs/security.md"), "utf8"));
    const wire = await (await fetch(`${base}/wire`)).text();
    expect(wire).toContain(`claude mcp add --transport http retasc ${base}/mcp`);
    expect((await fetch(`${base}/wire.md`)).headers.get("content-type")).toMatch(/^text\/markdown/);
    // This app runs without billing, and its pricing page says so.
    expect(await (await fetch(`${base}/pricing.md`)).text()).toContain("**Free on this server.**");
    for (const missing of ["/docs/nothing-here", "/docs/..%2Fpackage.json", "/docs/decisions/..%2F..%2FREADME", "/docs/ops.md.md"]) {
      expect((await fetch(`${base}${missing}`)).status, missing).toBe(404);
    }
  });

  test("every public page is served with its Markdown twin and listed in /llms.txt, /index.md and the API catalog; no terms or privacy unless configured", async () => {
    const base = seeded.app.url;
    const llms = await (await fetch(`${base}/llms.txt`)).text();
    const landing = await (await fetch(`${base}/index.md`)).text();
    const catalog = JSON.stringify(await (await fetch(`${base}/.well-known/api-catalog`)).json());
    const pages = ["/product", "/compare", "/wire", "/pricing", "/connectors", "/migrate", "/guides", "/guides/github-issues-queue", "/guides/parallel-claude-code", "/guides/subagent-waves", "/guides/cursor-background-agents", "/guides/agent-swarm", "/guides/linear-vs-jira-vs-agent-first"];
    for (const page of pages) {
      const html = await fetch(`${base}${page}`);
      expect(html.status, page).toBe(200);
      expect(html.headers.get("content-type"), page).toMatch(/^text\/html/);
      const body = await html.text();
      expect(body, page).toContain(`<link rel="canonical" href="${base}${page}">`);
      expect(body, page).toMatch(/<meta name="description" content="[^"]{20,}">/);
      expect(body, page).not.toContain("{{");
      const twin = await fetch(`${base}${page}.md`);
      expect(twin.headers.get("content-type"), page).toMatch(/^text\/markdown/);
      expect(await twin.text(), page).toMatch(/^# /);
      expect(llms, page).toContain(`(${base}${page}.md)`);
      expect(landing, page).toContain(`(${base}${page})`);
      expect(catalog, page).toContain(`"${base}${page}"`);
    }
    for (const missing of ["/terms", "/privacy.md", "/guides/nothing-here", "/guides/..%2F..%2Fpackage"]) {
      expect((await fetch(`${base}${missing}`)).status, missing).toBe(404);
    }
  });
});
