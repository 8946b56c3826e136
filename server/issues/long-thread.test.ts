import { performance } from "node:perf_hooks";
import { afterAll, beforeAll, expect, test } from "vitest";
import { callOk } from "../mcp/testing.ts";
import { REPLY_BUDGET_BYTES } from "../paging.ts";
import { startWorld, type World } from "../testing/world.ts";

/**
 * Finding 6 of issue 37: one issue with 800 comments of 50,000 characters gave an 80 MB
 * list_comments reply and a 41.9 MB Dash page, and eight such reads took /healthz to 4.7 s. The
 * thread is now read a page at a time over every door (at most 50 comments and 256 KiB of them
 * over /mcp, 64 KiB on the Dash), and reading the largest pages over and over adds less than
 * 100 ms to /healthz.
 */
const COMMENTS = 800;
const CHARS = 50_000;

let world: World;
let identifier: string;
beforeAll(async () => {
  world = await startWorld();
  ({ identifier } = await callOk(world.a.client, "save_issue", { title: "A thread nobody can read in one go", work: true, changeType: "feat", noDependency: "test" }));
  // Outsiders could fill an issue like this through intake for free.
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      for (let i = next++; i < COMMENTS; i = next++) {
        await callOk(world.a.client, "save_comment", { issue: identifier, body: `${String(i).padStart(4, "0")} ${"x".repeat(CHARS - 5)}` });
      }
    }),
  );
}, 600_000);
afterAll(async () => {
  await world?.close();
});

/** One list_comments call over /mcp: its bytes on the wire and what it said. */
async function page(cursor?: string, issue = identifier): Promise<{ bytes: number; comments: { body: string }[]; nextCursor?: string }> {
  const response = await fetch(`${world.url}/mcp`, {
    method: "POST",
    headers: { authorization: `Bearer ${world.a.key}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "list_comments", arguments: { issue, ...(cursor ? { cursor } : {}) } } }),
  });
  const text = await response.text();
  const content = JSON.parse(text).result?.structuredContent;
  if (!content?.comments) throw new Error(`list_comments answered ${response.status}: ${text.slice(0, 500)}`);
  return { bytes: Buffer.byteLength(text), ...content };
}

test("list_comments pages a long thread within the reply budget, every comment once", async () => {
  const seen: string[] = [];
  let largest = 0;
  let pages = 0;
  let cursor: string | undefined;
  do {
    const reply = await page(cursor);
    pages++;
    largest = Math.max(largest, reply.bytes);
    seen.push(...reply.comments.map((c) => c.body.slice(0, 4)));
    cursor = reply.nextCursor;
  } while (cursor);
  process.stderr.write(`long thread: ${COMMENTS} comments of ${CHARS} characters in ${pages} pages, largest reply ${(largest / 1024).toFixed(0)} KiB\n`);
  // Posted eight at a time, so in no particular order of their numbers: each exactly once.
  expect(seen).toHaveLength(COMMENTS);
  expect([...seen].sort()).toEqual(Array.from({ length: COMMENTS }, (_, i) => String(i).padStart(4, "0")));
  // The text content and structuredContent both carry the page: twice the budget, and a margin for the envelope.
  expect(largest).toBeLessThan(2 * REPLY_BUDGET_BYTES + 64 * 1024);
}, 300_000);

test("the Dash issue page shows the thread a page at a time, with a link to the next", async () => {
  const response = await fetch(`${world.url}/dash/issues/${identifier}`, { headers: { cookie: world.a.cookie } });
  const html = await response.text();
  expect(response.status).toBe(200);
  expect(html).toContain("Later comments");
  const next = /href="[^"?]*\?comments=([^"#]+)#comments-heading"/.exec(html)![1]!;
  const later = await fetch(`${world.url}/dash/issues/${identifier}?comments=${next}`, { headers: { cookie: world.a.cookie } });
  expect(later.status).toBe(200);
  expect(await later.text()).toContain("First comments");
  process.stderr.write(`long thread: Dash issue page ${(html.length / 1024).toFixed(0)} KiB\n`);
  // The page's HTML and its hydration data each carry the page of comments once.
  expect(html.length).toBeLessThan(4 * REPLY_BUDGET_BYTES);
}, 120_000);

/** /healthz latencies (ms, sorted) probed every 50 ms for `ms`. */
async function probeHealth(ms: number): Promise<number[]> {
  const latencies: number[] = [];
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const started = performance.now();
    expect((await fetch(`${world.url}/healthz`)).status).toBe(200);
    latencies.push(performance.now() - started);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return latencies.sort((x, y) => x - y);
}
const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

/**
 * /healthz while eight people and agents read `issue`'s pages, each one every 250 ms: half its
 * Dash page, half its list_comments pages in turn.
 */
async function healthWhileReading(issue: string): Promise<number[]> {
  let reading = true;
  const readers = Array.from({ length: 8 }, async (_, r) => {
    let cursor: string | undefined;
    while (reading) {
      if (r % 2) await fetch(`${world.url}/dash/issues/${issue}`, { headers: { cookie: world.a.cookie } }).then((res) => res.arrayBuffer());
      else cursor = (await page(cursor, issue)).nextCursor;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  });
  const latencies = await probeHealth(8_000);
  reading = false;
  await Promise.all(readers);
  return latencies;
}

// The finding's unbounded reads stalled /healthz for seconds; that is what this test can tell on a
// loaded CI machine (a second over the short thread's p95). The 100 ms budget is a figure for a
// quiet machine, printed here and measured by a benchmark, not asserted in a correctness test.
test("/healthz stays within a second of its time under the same traffic on a short thread while eight readers keep reading the long thread's pages", async () => {
  // The same readers on a thread of five short comments first: the machine's load and the cost
  // of a request are measured, and only what the long thread's pages add is counted (the finding's
  // eight reads of the whole thread stalled /healthz for 4.7 s).
  const short = (await callOk(world.a.client, "save_issue", { title: "A short thread", work: true, changeType: "feat", noDependency: "test" })).identifier as string;
  for (let i = 0; i < 5; i++) await callOk(world.a.client, "save_comment", { issue: short, body: `short ${i}` });
  const baseline = await healthWhileReading(short);
  const loaded = await healthWhileReading(identifier);
  const line = (name: string, l: number[]) => `${name} ${l.length} probes, p50 ${quantile(l, 0.5).toFixed(1)} ms, p95 ${quantile(l, 0.95).toFixed(1)} ms, max ${quantile(l, 1).toFixed(1)} ms`;
  process.stderr.write(`long thread: /healthz ${line("reading a short thread:", baseline)}; ${line("reading the long one:", loaded)}\n`);
  expect(quantile(loaded, 0.95) - quantile(baseline, 0.95)).toBeLessThan(1_000);
}, 120_000);
