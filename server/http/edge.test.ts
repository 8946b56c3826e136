import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { cliPost, signUp, startWorld, type World } from "../testing/world.ts";
import { STREAMS_PER_ADDRESS, STREAMS_PER_PERSON } from "../events/index.ts";
import { securityHeaders } from "./headers.ts";
import { rawRequest } from "./testing.ts";
import { waitFor } from "../testing/wait.ts";

/**
 * The HTTP edge of the built app (server/http/edge.ts) over real sockets: nothing a request sends
 * ends the process, Host and Origin are checked against the configured origins, every response
 * carries the security headers, and pages still hydrate under their CSP nonce.
 */
let world: World;
beforeAll(async () => {
  world = await startWorld({ TRUST_PROXY_HOPS: "1", LOG_LEVEL: "info" });
});
afterAll(async () => {
  await world?.close();
});

const mcpBody = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "whoami", arguments: {} } });
const mcpHeaders = (key: string) => ({
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
  authorization: `Bearer ${key}`,
});

describe("no request ends the process", () => {
  test("undecodable or non-origin-form targets get 400 and the server keeps serving", async () => {
    for (const target of ["/%", "/assets/%zz", "/dash/%E0%A4%A", "//evil.example/.well-known/mcp.json", "http://evil.example/index.md"]) {
      const answer = await rawRequest(world.app.port, "GET", target);
      expect(answer.status, target).toBe(400);
      expect(JSON.parse(answer.body)).toMatchObject({ error: { code: "INVALID_INPUT" } });
    }
    expect(world.app.child.exitCode).toBeNull();
    expect((await fetch(`${world.url}/healthz`)).status).toBe(200);
  });
});

describe("Host and Origin", () => {
  test("a Host that is not this app's is refused (421) on every route but /healthz; discovery names the configured origin", async () => {
    const evil = { host: "evil.example" };
    for (const target of ["/.well-known/mcp.json", "/index.md", "/.well-known/api-catalog", "/", "/favicon.ico"]) {
      expect((await rawRequest(world.app.port, "GET", target, evil)).status, target).toBe(421);
    }
    const mcp = await rawRequest(world.app.port, "POST", "/mcp", { ...mcpHeaders(world.a.key), ...evil }, mcpBody);
    expect(mcp.status).toBe(421);
    expect(JSON.parse(mcp.body)).toMatchObject({ jsonrpc: "2.0", error: { code: -32000 } });
    expect((await rawRequest(world.app.port, "GET", "/healthz", evil)).status).toBe(200);

    // The loopback names on the app's port are this app.
    for (const host of [`localhost:${world.app.port}`, `127.0.0.1:${world.app.port}`, `[::1]:${world.app.port}`, `LOCALHOST:${world.app.port}`]) {
      const card = await rawRequest(world.app.port, "GET", "/.well-known/mcp.json", { host });
      expect(card.status, host).toBe(200);
      expect(JSON.parse(card.body).endpoint).toBe(`http://${host.toLowerCase()}/mcp`);
    }
    // Another port on localhost is another app.
    expect((await rawRequest(world.app.port, "GET", "/index.md", { host: "localhost:1" })).status).toBe(421);
  });

  test("/mcp trusts the configured origins, not the Host the request names", async () => {
    const call = (origin: string) => rawRequest(world.app.port, "POST", "/mcp", { ...mcpHeaders(world.a.key), origin }, mcpBody);
    expect((await call("http://evil.example")).status).toBe(403);
    expect((await call(`http://127.0.0.1:${world.app.port}`)).status).toBe(200);
    expect((await call(`http://localhost:${world.app.port}`)).status).toBe(200);
  });

  test("a cross-site form post to any route is refused (403) before it runs; the app's own and non-browser ones go on", async () => {
    const post = (path: string, cookie: string, headers: Record<string, string>, orgId = world.b.orgId) =>
      fetch(`${world.url}${path}`, {
        method: "POST",
        headers: { cookie, "content-type": "application/x-www-form-urlencoded", ...headers },
        body: new URLSearchParams({ orgId }),
        redirect: "manual",
      });
    const crossSite: Record<string, string>[] = [{ origin: "https://evil.example" }, { origin: "null" }, { "sec-fetch-site": "cross-site" }, { "sec-fetch-site": "same-site" }];
    for (const headers of crossSite) {
      for (const path of ["/dash/switch-org", "/auth/sign-out", "/api/auth/sign-out", "/device"]) {
        const refused = await post(path, world.b.cookie, headers);
        expect(refused.status, `${path} ${JSON.stringify(headers)}`).toBe(403);
        expect(await refused.json()).toMatchObject({ error: { code: "FORBIDDEN" } });
      }
    }
    // B is still signed in: none of the sign-outs ran.
    expect((await fetch(`${world.url}/api/cli/whoami`, { headers: { authorization: `Bearer ${world.b.token}` } })).status).toBe(200);
    // The app's own page, and a client that is not a browser (no Origin, no Sec-Fetch-Site), get an answer.
    const own: Record<string, string>[] = [{ origin: world.url }, { "sec-fetch-site": "same-origin" }, {}];
    for (const headers of own) {
      const answer = await post("/dash/switch-org", world.a.cookie, headers, world.a.orgId);
      expect(answer.status, JSON.stringify(headers)).toBeLessThan(400);
    }
  });
});

describe("security headers", () => {
  test("every response carries them: pages, /mcp, files, refusals", async () => {
    const responses = [
      await fetch(`${world.url}/`),
      await fetch(`${world.url}/device`, { headers: { cookie: world.a.cookie } }),
      await fetch(`${world.url}/favicon.ico`),
      await fetch(`${world.url}/no/such/page`),
      await fetch(`${world.url}/mcp`, { method: "POST", headers: mcpHeaders(world.a.key), body: mcpBody }),
      await fetch(`${world.url}/dash/switch-org`, { method: "POST", headers: { origin: "https://evil.example" } }),
    ];
    for (const response of responses) {
      const where = `${response.url} ${response.status}`;
      expect(response.headers.get("x-frame-options"), where).toBe("DENY");
      expect(response.headers.get("content-security-policy"), where).toMatch(/frame-ancestors 'none'/);
      expect(response.headers.get("x-content-type-options"), where).toBe("nosniff");
      expect(response.headers.get("referrer-policy"), where).toBe("same-origin");
      // Served over plain http without an https PUBLIC_URL: no HSTS.
      expect(response.headers.get("strict-transport-security"), where).toBeNull();
    }
  });

  test("HSTS when the public URL is https", () => {
    const set = new Map<string, string>();
    const res = { setHeader: (name: string, value: string) => set.set(name, value) };
    const config = {
      PUBLIC_URL: "https://retasc.example.com",
      GITHUB_OAUTH_URL: "https://github.com",
      GOOGLE_OAUTH_URL: "https://accounts.google.com",
      RETASC_BILLING: "off" as const,
      STRIPE_CHECKOUT_URL: "https://checkout.stripe.com",
    };
    securityHeaders(config)(res as never, "n0nce");
    expect(set.get("strict-transport-security")).toMatch(/max-age=\d{7,}/);
    expect(set.get("content-security-policy")).toMatch(/script-src 'self' 'nonce-n0nce'/);
    expect(set.get("content-security-policy")).toMatch(/form-action 'self' https:\/\/github\.com https:\/\/accounts\.google\.com;/);
  });

  test("with billing on, forms may post through to Stripe Checkout (Buy credit without JavaScript)", () => {
    const set = new Map<string, string>();
    const res = { setHeader: (name: string, value: string) => set.set(name, value) };
    const config = {
      PUBLIC_URL: undefined,
      GITHUB_OAUTH_URL: "https://github.com",
      GOOGLE_OAUTH_URL: "https://accounts.google.com",
      RETASC_BILLING: "on" as const,
      STRIPE_CHECKOUT_URL: "https://checkout.stripe.com/",
    };
    securityHeaders(config)(res as never, "n0nce");
    expect(set.get("content-security-policy")).toMatch(/form-action 'self' https:\/\/github\.com https:\/\/accounts\.google\.com https:\/\/checkout\.stripe\.com;/);
  });

  test("every inline script of a page bears the response's nonce, a new one per response", async () => {
    const nonces = new Set<string>();
    for (const path of ["/", "/auth/sign-in", "/device", "/dash"]) {
      const response = await fetch(`${world.url}${path}`, { headers: { cookie: world.a.cookie } });
      expect(response.status, path).toBe(200);
      const nonce = /'nonce-([^']+)'/.exec(response.headers.get("content-security-policy") ?? "")?.[1];
      expect(nonce, path).toBeTruthy();
      nonces.add(nonce!);
      const html = await response.text();
      const inline = [...html.matchAll(/<script(?![^>]*\ssrc=)([^>]*)>/g)];
      expect(inline.length, path).toBeGreaterThan(0);
      for (const [, attributes] of inline) expect(attributes, path).toContain(`nonce="${nonce}"`);
    }
    expect(nonces.size).toBe(4);
  });
});

describe("favicon and refusal logs", () => {
  test("/favicon.ico is served and linked; a 404 logs one line, no stack trace", async () => {
    const icon = await fetch(`${world.url}/favicon.ico`);
    expect(icon.status).toBe(200);
    expect(icon.headers.get("content-type")).toBe("image/x-icon");
    expect((await icon.arrayBuffer()).byteLength).toBeGreaterThan(100);
    expect(await (await fetch(`${world.url}/`)).text()).toMatch(/<link[^>]*rel="icon"[^>]*href="\/favicon.ico"/);

    const before = world.app.output().length;
    const missing = `/no-such-page-${process.pid}`;
    expect((await fetch(`${world.url}${missing}`)).status).toBe(404);
    // A second 404 after it: once its line is in, so is all the first one logged, written before it.
    const fence = `/fence-page-${process.pid}`;
    expect((await fetch(`${world.url}${fence}`)).status).toBe(404);
    await waitFor(async () => world.app.output().slice(before).includes(fence), 10_000, "the second 404's log line");
    const all = world.app.output().slice(before);
    const output = all.slice(0, all.lastIndexOf("\n", all.indexOf(fence)) + 1);
    const logged = output.split("\n").filter((line) => line.includes(missing));
    expect(logged, output).toHaveLength(1);
    expect(JSON.parse(logged[0]!)).toMatchObject({ level: 30, status: 404, path: missing, msg: "request", door: "other", method: "GET" });
    expect(output).not.toMatch(/^\s+at /m);
  });
});

describe("live Dash streams", () => {
  /** Opens /dash/events; resolves once the stream is answered (or refused). */
  async function open(cookie: string, from: string) {
    const controller = new AbortController();
    const response = await fetch(`${world.url}/dash/events`, { headers: { cookie, "x-forwarded-for": from }, signal: controller.signal });
    // The response is kept: undici cancels the body of a response that is garbage-collected.
    return { status: response.status, response, close: () => controller.abort() };
  }
  async function personWithOrg(name: string) {
    const person = await signUp(world.url, name);
    await cliPost(world.url, person.token, "orgs", { name: `${name}'s org` });
    return person;
  }

  test(`one person holds at most ${STREAMS_PER_PERSON}, one address at most ${STREAMS_PER_ADDRESS}; a closed stream frees its place`, async () => {
    const held: { close(): void }[] = [];
    try {
      for (let i = 0; i < STREAMS_PER_PERSON; i++) {
        const stream = await open(world.a.cookie, "10.20.0.1");
        expect(stream.status).toBe(200);
        held.push(stream);
      }
      // The person's limit, from any address.
      expect((await open(world.a.cookie, "10.20.0.2")).status).toBe(429);
      held.shift()!.close();
      let reopened = 429;
      for (let i = 0; i < 50 && reopened === 429; i++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        const stream = await open(world.a.cookie, "10.20.0.1");
        reopened = stream.status;
        if (reopened === 200) held.push(stream);
      }
      expect(reopened).toBe(200);

      // The address's limit, across people.
      const people = [world.b, ...(await Promise.all([personWithOrg("Cleo"), personWithOrg("Dara")]))];
      let fromAddress = STREAMS_PER_PERSON; // A's
      for (const person of people) {
        while (fromAddress < STREAMS_PER_ADDRESS) {
          const stream = await open(person.cookie, "10.20.0.1");
          if (stream.status === 429) break;
          held.push(stream);
          fromAddress++;
        }
      }
      expect(fromAddress).toBe(STREAMS_PER_ADDRESS);
      const late = await personWithOrg("Elif");
      expect((await open(late.cookie, "10.20.0.1")).status).toBe(429);
      const elsewhere = await open(late.cookie, "10.20.0.9");
      held.push(elsewhere);
      expect(elsewhere.status).toBe(200);
    } finally {
      for (const stream of held) stream.close();
    }
  });
});
