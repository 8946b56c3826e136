import fc from "fast-check";
import { afterAll, beforeAll, expect, test } from "vitest";
import { callOk } from "../server/mcp/testing.ts";
import { tools } from "../server/mcp/registry.ts";
import { deepNesting, hostileString, hostileValue, inPool, noteSent, problemsWith } from "./hostile.ts";
import { fuzzSeeds, isolateFailure } from "./seeds.ts";
import { residentBytes } from "../server/testing/app-process.ts";
import { startWorld, type World } from "../server/testing/world.ts";

/**
 * Property-based fuzzing of /mcp over real HTTP against the built app, as tenant A with org B
 * next door: well-formed calls of every tool with hostile arguments, malformed JSON-RPC, batches,
 * wrong types, huge and deeply nested bodies, odd headers and keys. Every reply must be below
 * 500, free of stack traces and paths, and free of B's data; afterwards the app is healthy, its
 * memory has not run away, and B's data is as it was. FUZZ_MCP_REQUESTS sets the volume.
 */
const REQUESTS = Number(process.env.FUZZ_MCP_REQUESTS ?? 10_000);
const BATCH = 50;

let world: World;
beforeAll(async () => {
  // Unknown keys are part of the fuzz; the failed-authentication limit would otherwise turn them into 429s.
  // BATCH requests go at once on one key; a caller's share of the heavy reads (decision 061) would
  // answer most of its list tools 429 before they reach the code under test.
  world = await startWorld({ RATE_LIMIT_AUTH_FAILURES_PER_MIN: "100000000", HEAVY_READS_PER_CALLER: "64" });
});
afterAll(async () => {
  await world?.close();
});

interface Shot {
  body: string;
  auth: "a" | "none" | "bogus" | "malformed";
  contentType: string;
  accept: string;
}

function shots(w: World): fc.Arbitrary<Shot> {
  const names = tools.map((t) => t.name);
  // A tool without arguments still gets some (each must be refused as unknown).
  const argNames = new Map(tools.map((t) => [t.name, Object.keys(t.input.shape).length ? Object.keys(t.input.shape) : ["identifier"]]));
  const value = hostileValue(w);
  const call = fc
    .oneof({ weight: 9, arbitrary: fc.constantFrom(...names) }, { weight: 1, arbitrary: hostileString(w) })
    .chain((name) =>
      fc
        .dictionary(fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...(argNames.get(name) ?? ["identifier"])) }, { weight: 1, arbitrary: fc.string() }), value, { maxKeys: 6 })
        .map((args) => ({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } })),
    );
  const envelope = fc.record(
    {
      jsonrpc: fc.oneof(fc.constant("2.0"), value),
      id: fc.oneof(fc.integer(), fc.string(), fc.constant(null), value),
      method: fc.oneof(
        fc.constantFrom("tools/call", "tools/list", "initialize", "ping", "notifications/initialized", "resources/list", "prompts/get", "logging/setLevel", "completion/complete"),
        fc.string(),
      ),
      params: value,
    },
    { requiredKeys: [] },
  );
  const body = fc.oneof(
    { weight: 10, arbitrary: call.map((c) => JSON.stringify(c)) },
    { weight: 4, arbitrary: envelope.map((e) => JSON.stringify(e)) },
    { weight: 1, arbitrary: fc.array(call, { minLength: 1, maxLength: 5 }).map((batch) => JSON.stringify(batch)) },
    { weight: 1, arbitrary: value.map((v) => JSON.stringify(v) ?? "null") },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.constantFrom(...names), fc.constantFrom("identifier", "title", "arguments"), deepNesting)
        .map(([name, arg, deep]) =>
          arg === "arguments"
            ? `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"${name}","arguments":${deep}}}`
            : `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"${name}","arguments":{"${arg}":${deep}}}}`,
        ),
    },
    { weight: 1, arbitrary: deepNesting },
    // Not JSON at all, or JSON cut short.
    { weight: 1, arbitrary: fc.oneof(fc.string(), call.chain((c) => fc.nat(200).map((n) => JSON.stringify(c).slice(0, n)))) },
  );
  return fc.record({
    body,
    auth: fc.constantFrom("a", "a", "a", "a", "a", "a", "none", "bogus", "malformed"),
    contentType: fc.constantFrom("application/json", "application/json", "application/json", "text/plain", "", "application/json; charset=utf-16", "multipart/form-data"),
    accept: fc.constantFrom("application/json, text/event-stream", "application/json, text/event-stream", "application/json", "text/event-stream", "", "*/*"),
  });
}

let sent = 0;
async function fire(shot: Shot): Promise<string[]> {
  const headers: Record<string, string> = {};
  if (shot.contentType) headers["content-type"] = shot.contentType;
  if (shot.accept) headers.accept = shot.accept;
  if (shot.auth === "a") headers.authorization = `Bearer ${world.a.key}`;
  if (shot.auth === "bogus") headers.authorization = `Bearer rtsc_${"Q".repeat(43)}`;
  if (shot.auth === "malformed") headers.authorization = "Bearer";
  noteSent(world, shot.body);
  const response = await fetch(`${world.url}/mcp`, { method: "POST", headers, body: shot.body });
  sent++;
  const problems = problemsWith(world, { status: response.status, body: await response.text() }, shot.body);
  return problems.map((p) => `${p} (status ${response.status}) for ${shot.body.slice(0, 300)}`);
}

test(`/mcp survives ${REQUESTS} hostile requests: no 5xx, no stack trace, nothing of the other tenant, health and memory intact`, async () => {
  const arbitrary = shots(world);
  const seeds = fuzzSeeds("mcp");
  const half = (seed: number, offset: number) =>
    fc.assert(
      fc.asyncProperty(fc.array(arbitrary, { minLength: BATCH, maxLength: BATCH }), async (batch) => {
        const problems = await Promise.all(batch.map(fire));
        const failing = batch.map((shot, i) => ({ shot, problems: problems[i]! })).filter((f) => f.problems.length > 0);
        if (failing.length > 0) expect.fail(await isolateFailure(seed + offset, failing, fire));
      }),
      // The failure names its seed and request; shrinking batches of HTTP calls would take too long.
      { numRuns: Math.ceil(REQUESTS / BATCH / 2), seed: seed + offset, endOnFailure: true },
    );
  const rss = () => residentBytes(world.app.child.pid!);
  // Warm up (JIT, pools, caches), then each seed in two halves: memory may grow into the fresh seed's first half, not its second.
  await inPool(fc.sample(arbitrary, { numRuns: 500, seed: 7 }), 25, async (shot) => void (await fire(shot)));
  const startedAt = Date.now();
  const before = sent;
  let baseline = 0;
  let middle = 0;
  let end = 0;
  for (const seed of seeds) {
    baseline = rss();
    await half(seed, 0);
    middle = rss();
    await half(seed, 1);
    end = rss();
  }

  const seconds = (Date.now() - startedAt) / 1000;
  const mb = (bytes: number) => Math.round(bytes / 2 ** 20);
  process.stderr.write(
    `mcp fuzz (seeds ${seeds.join(", ")}): ${sent - before} requests in ${seconds.toFixed(1)} s (${Math.round((sent - before) / seconds)}/s); ` +
      `app RSS ${mb(baseline)} MB → ${mb(middle)} MB → ${mb(end)} MB\n`,
  );
  expect(sent - before).toBeGreaterThanOrEqual(REQUESTS * seeds.length);
  expect((await fetch(`${world.url}/healthz`)).status).toBe(200);
  expect(end - middle).toBeLessThan(64 * 2 ** 20);

  // The other tenant's data is as it was planted.
  for (const identifier of world.bIds.issues) {
    const issue = await callOk(world.b.client, "get_issue", { identifier });
    expect(issue.title).toContain(world.marker);
  }
  expect((await callOk(world.b.client, "check_claim", { identifier: world.bIds.issues[1] })).fence).toBe(1);
  expect((await callOk(world.b.client, "list_comments", { issue: world.bIds.issues[0] })).comments).toHaveLength(1);
}, 600_000);
