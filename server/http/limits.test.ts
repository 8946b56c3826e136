import net from "node:net";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { startSeededApp, type SeededApp } from "../mcp/testing.ts";
import { startApp, type AppProcess } from "../testing/app-process.ts";
import { PrivateRedis, redisServerAvailable } from "../testing/redis.ts";
import { testDriver } from "../testing/db.ts";
import { rawRequest } from "./testing.ts";

/**
 * Abuse limits of the built app over real HTTP, with limits set low. The app trusts one proxy
 * hop, so each test speaks from an address of its own through X-Forwarded-For (and that the
 * rightmost hop is the one trusted is tested too).
 */
const limits = {
  RATE_LIMIT_KEY_PER_MIN: "20",
  RATE_LIMIT_IP_PER_MIN: "60",
  RATE_LIMIT_SIGNIN_PER_MIN: "3",
  RATE_LIMIT_AUTH_FAILURES_PER_MIN: "5",
  REQUEST_MAX_BODY_BYTES: "2000",
  MCP_MAX_BODY_BYTES: "4000",
  HTTP_HEADERS_TIMEOUT_MS: "1000",
  HTTP_REQUEST_TIMEOUT_MS: "2000",
  TRUST_PROXY_HOPS: "1",
  RETASC_EMAIL_PASSWORD: "on",
};

let seeded: SeededApp;
beforeAll(async () => {
  seeded = await startSeededApp(["LIM"], limits);
});
afterAll(async () => {
  await seeded?.close();
});

const whoami = { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "whoami", arguments: {} } };
function mcp(url: string, key: string, from: string, body: unknown = whoami) {
  return fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      authorization: `Bearer ${key}`,
      "x-forwarded-for": from,
    },
    body: JSON.stringify(body),
  });
}

async function expectRateLimited(response: Response) {
  expect(response.status).toBe(429);
  const retryAfter = Number(response.headers.get("retry-after"));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(60);
  return response.json();
}

describe("rate limits", () => {
  test("per agent key on /mcp: the 21st request in a minute gets 429 with Retry-After; other keys go on", async () => {
    const { alice, bob } = seeded.orgs.LIM!.people;
    // Spread over addresses so only the key's limit is in play.
    for (let i = 0; i < 20; i++) expect((await mcp(seeded.endpoint, alice.key, `10.1.0.${i}`)).status).toBe(200);
    const body = await expectRateLimited(await mcp(seeded.endpoint, alice.key, "10.1.1.1"));
    expect(body).toMatchObject({ jsonrpc: "2.0", error: { code: -32000, message: expect.stringMatching(/agent key.*Retry after/) } });
    expect((await mcp(seeded.endpoint, bob.key, "10.1.1.2")).status).toBe(200);
  });

  test("per client address, every route: the 61st request gets 429", async () => {
    for (let i = 0; i < 60; i++) {
      const response = await fetch(`${seeded.app.url}/healthz`, { headers: { "x-forwarded-for": "10.2.0.1" } });
      expect(response.status).toBe(200);
    }
    const refused = await fetch(`${seeded.app.url}/healthz`, { headers: { "x-forwarded-for": "10.2.0.1" } });
    expect(await expectRateLimited(refused)).toMatchObject({ error: { code: "RATE_LIMITED" } });
    // Only the hop the trusted proxy saw counts: a client cannot pick its address by prepending one.
    const spoofed = await fetch(`${seeded.app.url}/healthz`, { headers: { "x-forwarded-for": "1.2.3.4, 10.2.0.1" } });
    expect(spoofed.status).toBe(429);
    expect((await fetch(`${seeded.app.url}/healthz`, { headers: { "x-forwarded-for": "10.2.0.2" } })).status).toBe(200);
  });

  test("sign-in: the 4th password attempt in a minute from one address gets 429, on the API and the form", async () => {
    const signIn = (from: string) =>
      fetch(`${seeded.app.url}/api/auth/sign-in/email`, {
        method: "POST",
        headers: { "content-type": "application/json", origin: seeded.app.url, "x-forwarded-for": from },
        body: JSON.stringify({ email: "nobody@example.com", password: "wrong password" }),
      });
    for (let i = 0; i < 3; i++) expect((await signIn("10.3.0.1")).status).toBe(401);
    expect(await expectRateLimited(await signIn("10.3.0.1"))).toMatchObject({ error: { code: "RATE_LIMITED" } });

    const form = (from: string) =>
      fetch(`${seeded.app.url}/auth/sign-in`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", origin: seeded.app.url, "x-forwarded-for": from },
        body: new URLSearchParams({ email: "nobody@example.com", password: "wrong password" }),
        redirect: "manual",
      });
    for (let i = 0; i < 3; i++) expect((await form("10.3.0.2")).status).toBeLessThan(500);
    expect((await form("10.3.0.2")).status).toBe(429);
  });

  test("the sign-in limit holds however the path is spelt: dot segments, case, a trailing slash, percent-encoding", async () => {
    // Raw sockets: HTTP clients would clean these paths before sending them.
    const attempt = (target: string, from: string) =>
      rawRequest(
        seeded.app.port,
        "POST",
        target,
        { "content-type": "application/json", "x-forwarded-for": from },
        JSON.stringify({ email: "nobody@example.com", password: "wrong password", name: "Nobody" }),
      );
    const spellings = [
      "/api/auth/./sign-in/email",
      "/x/../api/auth/sign-in/email",
      "/api/auth/%2e/sign-in/email",
      "/API/Auth/Sign-In/Email",
      "/api/auth/sign-in/email/",
      "/api/auth//sign-in/email",
      "/api/auth/%73ign-in/email",
      "/api/auth/sign-up/email/",
      "/Auth/Sign-In",
      "/auth/sign-in/",
      "/auth/./sign-up",
    ];
    // Every spelling reaches a sign-in or sign-up (or answers as routing would), and each counts.
    for (let i = 0; i < 3; i++) expect((await attempt(spellings[i]!, "10.3.1.1")).status).not.toBe(429);
    for (const target of ["/api/auth/sign-in/email", ...spellings]) {
      expect((await attempt(target, "10.3.1.1")).status, target).toBe(429);
    }
  });

  test("failed authentications on /mcp: after 5 unknown keys an address is refused, but never a valid key", async () => {
    for (let i = 0; i < 5; i++) {
      expect((await mcp(seeded.endpoint, `rtsc_${"x".repeat(40)}${i}`, "10.4.0.1")).status).toBe(401);
    }
    const unknown = await expectRateLimited(await mcp(seeded.endpoint, `rtsc_${"y".repeat(41)}`, "10.4.0.1"));
    expect(unknown).toMatchObject({ jsonrpc: "2.0", error: { message: expect.stringMatching(/failed authentications.*Retry after/) } });
    await expectRateLimited(await mcp(seeded.endpoint, "", "10.4.0.1"));
    // One misconfigured agent (or a NAT) behind the address must not take its valid keys offline.
    const { carol, bob } = seeded.orgs.LIM!.people;
    for (const key of [carol.key, bob.key, carol.key]) expect((await mcp(seeded.endpoint, key, "10.4.0.1")).status).toBe(200);
    await expectRateLimited(await mcp(seeded.endpoint, `rtsc_${"z".repeat(41)}`, "10.4.0.1"));
    expect((await mcp(seeded.endpoint, carol.key, "10.4.0.2")).status).toBe(200);
  });
});

describe("request size and time", () => {
  test("bodies over the limit get 413 before they are read; a body without a length gets 411", async () => {
    const big = await fetch(`${seeded.app.url}/api/cli/whoami`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-forwarded-for": "10.5.0.1" },
      body: JSON.stringify({ pad: "x".repeat(3000) }),
    });
    expect(big.status).toBe(413);
    expect(await big.json()).toMatchObject({ error: { code: "PAYLOAD_TOO_LARGE" } });

    const bigMcp = await mcp(seeded.endpoint, seeded.orgs.LIM!.people.bob.key, "10.5.0.2", { ...whoami, pad: "x".repeat(5000) });
    expect(bigMcp.status).toBe(413);

    const stream = new ReadableStream({
      start(controller) {
        controller.enqueue(new TextEncoder().encode("email=a%40b.c"));
        controller.close();
      },
    });
    const chunked = await fetch(`${seeded.app.url}/auth/sign-in`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", "x-forwarded-for": "10.5.0.3" },
      body: stream,
      duplex: "half",
    } as RequestInit);
    expect(chunked.status).toBe(411);
  });

  test("a client that sends its headers too slowly is cut off", async () => {
    const started = Date.now();
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(seeded.app.port, "127.0.0.1");
      let received = "";
      socket.on("data", (d) => (received += d.toString()));
      socket.on("close", () => resolve(received));
      socket.on("error", reject);
      // Half a request line, then nothing: a slowloris.
      socket.write("GET /healthz HTTP/1.1\r\nHost: x\r\n");
      setTimeout(() => socket.destroy(new Error("still open after 10 s")), 10_000);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});

describe.skipIf(!redisServerAvailable || testDriver !== "postgres")("limits shared through Redis (PostgreSQL + a private Redis)", () => {
  let redis: PrivateRedis;
  let second: AppProcess;
  let shared: SeededApp;
  beforeAll(async () => {
    redis = await PrivateRedis.start();
    const env = { ...limits, REDIS_URL: redis.url, BULLMQ_PREFIX: `limits${process.pid}`, RETASC_WORKERS: "off" };
    shared = await startSeededApp(["SHR"], env);
    second = await startApp({ ...shared.env, ...env });
  });
  afterAll(async () => {
    await second?.stop();
    await shared?.close();
    await redis?.close();
  });

  test("two instances count one key together; with Redis stopped each counts alone and nothing fails", async () => {
    const key = shared.orgs.SHR!.people.alice.key;
    const endpoints = [shared.endpoint, `${second.url}/mcp`];
    for (let i = 0; i < 20; i++) expect((await mcp(endpoints[i % 2]!, key, `10.6.0.${i}`)).status).toBe(200);
    for (const endpoint of endpoints) await expectRateLimited(await mcp(endpoint, key, "10.6.1.1"));

    await redis.stop();
    const bob = shared.orgs.SHR!.people.bob.key;
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) statuses.push((await mcp(endpoints[i % 2]!, bob, `10.7.0.${i}`)).status);
    expect(statuses.every((s) => s === 200)).toBe(true);
    await redis.start();
  });
});
