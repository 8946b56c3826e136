import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { startSeededApp, type SeededApp } from "../mcp/testing.ts";
import { startApp, type AppProcess } from "../testing/app-process.ts";
import { testDriver } from "../testing/db.ts";
import { PrivateRedis, redisServerAvailable } from "../testing/redis.ts";
import { memoryBuckets } from "./org-limits.ts";

/**
 * Each org's token bucket over /mcp (decision 075): a loud org is refused RATE_LIMITED with
 * retryAfter once its burst is spent, while another org's calls pass; on Redis the bucket is
 * one across instances, without Redis each process keeps it (the embedded mode).
 */
const limits = { RATE_LIMIT_ORG_PER_SEC: "1", RATE_LIMIT_ORG_BURST: "10" };
const BURST = 10;

const whoami = { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "whoami", arguments: {} } };
const call = (endpoint: string, key: string) =>
  fetch(endpoint, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: `Bearer ${key}` },
    body: JSON.stringify(whoami),
  });

/**
 * Calls the loud org's keys round the endpoints until twice its burst has been tried, then checks
 * what one bucket allows: the burst, plus what accrued meanwhile, and a quiet org untouched.
 */
async function loudThenQuiet(endpoints: string[], loudKeys: string[], quietKey: string) {
  const started = Date.now();
  const statuses: number[] = [];
  let refusal: Response | null = null;
  for (let i = 0; i < 2 * BURST; i++) {
    const response = await call(endpoints[i % endpoints.length]!, loudKeys[i % loudKeys.length]!);
    statuses.push(response.status);
    if (response.status === 429) refusal ??= response;
    else await response.body?.cancel();
  }
  const accrued = Math.ceil((Date.now() - started) / 1000);
  const passed = statuses.filter((s) => s === 200).length;
  expect(statuses.every((s) => s === 200 || s === 429)).toBe(true);
  expect(passed).toBeGreaterThanOrEqual(BURST);
  // Separate buckets per instance would have let all 2 x BURST through.
  expect(passed).toBeLessThanOrEqual(BURST + accrued);
  expect(passed).toBeLessThan(2 * BURST);

  expect(refusal).not.toBeNull();
  const retryAfter = Number(refusal!.headers.get("retry-after"));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  const body = await refusal!.json();
  expect(body).toMatchObject({ jsonrpc: "2.0", error: { message: expect.stringMatching(/organization.*Retry after/), data: { code: "RATE_LIMITED", retryAfter } } });

  for (const endpoint of endpoints) {
    const quiet = await call(endpoint, quietKey);
    expect(quiet.status).toBe(200);
    await quiet.body?.cancel();
  }
}

describe("the org's bucket in memory", () => {
  test("separate per org, refilled at the rate, capped at the burst; a refusal says how long until a token", async () => {
    let now = 0;
    const buckets = memoryBuckets(2, 3, () => now);
    for (let i = 0; i < 3; i++) expect(await buckets.take("loud")).toBeNull();
    expect(await buckets.take("loud")).toBe(500);
    expect(await buckets.take("quiet")).toBeNull();
    now += 250;
    expect(await buckets.take("loud")).toBe(250);
    now += 250;
    expect(await buckets.take("loud")).toBeNull();
    now += 60_000;
    for (let i = 0; i < 3; i++) expect(await buckets.take("loud")).toBeNull();
    expect(await buckets.take("loud")).not.toBeNull();
  });
});

describe("without Redis (the embedded fallback): one bucket per org in the process", () => {
  let seeded: SeededApp;
  beforeAll(async () => {
    seeded = await startSeededApp(["LOU", "QUI"], limits);
  });
  afterAll(async () => {
    await seeded?.close();
  });

  test("a loud org is refused RATE_LIMITED with retryAfter; a quiet org's calls pass", async () => {
    const loud = seeded.orgs.LOU!.people;
    await loudThenQuiet([seeded.endpoint], [loud.alice.key, loud.bob.key], seeded.orgs.QUI!.people.alice.key);
  });
});

describe.skipIf(!redisServerAvailable || testDriver !== "postgres")("on Redis: one bucket per org across two instances", () => {
  let redis: PrivateRedis;
  let shared: SeededApp;
  let second: AppProcess;
  beforeAll(async () => {
    redis = await PrivateRedis.start();
    const env = { ...limits, REDIS_URL: redis.url, BULLMQ_PREFIX: `orglimits${process.pid}`, RETASC_WORKERS: "off" };
    shared = await startSeededApp(["LOR", "QUR"], env);
    second = await startApp({ ...shared.env, ...env });
  });
  afterAll(async () => {
    await second?.stop();
    await shared?.close();
    await redis?.close();
  });

  test("the loud org's keys on both instances draw on one bucket; the quiet org's calls pass on both", async () => {
    const loud = shared.orgs.LOR!.people;
    await loudThenQuiet([shared.endpoint, `${second.url}/mcp`], [loud.alice.key, loud.bob.key, loud.carol.key], shared.orgs.QUR!.people.alice.key);
  });
});
