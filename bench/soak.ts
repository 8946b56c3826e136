/**
 * `npm run bench:soak [-- --minutes 60 --orgs 1000 --rate 10 --agents 8]`: the app's memory under
 * an hour of steady load, at 100,000 issues (100 orgs) and at a million (1,000 orgs), side by side
 * in the same run so the growth is a ratio. Each size is its own database and its own app process
 * (the built app on PostgreSQL), filled like bench/million.ts (bench/lib/fill.ts), then driven over
 * /mcp by `--agents` SDK clients at `--rate` cycles per second in all: a person files an issue, an
 * agent claims it with `next_issue` and finishes it with a fenced `save_issue`, and every tenth
 * cycle a person reads `queue_status` and `list_issues` (a loaded machine completes fewer: the
 * table prints the rate reached). The app's resident memory is read from
 * /proc every 30 s. Not run in CI (an hour); the figures go in bench/README.md and
 * docs/operations.md.
 */
import crypto from "node:crypto";
import { setMaxListeners } from "node:events";
import os from "node:os";
import path from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { wholeNumberOption } from "./lib/args.ts";
import { useBenchPostgres } from "./lib/postgres-env.ts";
import { log, round } from "./lib/stats.ts";

const MINUTES = wholeNumberOption("minutes", 60);
const BIG_ORGS = wholeNumberOption("orgs", 1_000);
const RATE = wholeNumberOption("rate", 10);
const AGENTS = wholeNumberOption("agents", 8);
const SAMPLE_MS = 30_000;
/** The first minutes are warm-up (JIT, caches, pools): growth is measured from here. */
const WARM_MS = Math.min(5 * 60_000, (MINUTES * 60_000) / 4);

setMaxListeners(10_000);
useBenchPostgres();
const repoRoot = path.resolve(import.meta.dirname, "..");
process.env.RETASC_TEST_BUILD_DIR ??= path.join(repoRoot, "node_modules/.cache/retasc-test-build", `bench-${crypto.randomBytes(4).toString("hex")}`);
const { callOk, connectClient, startSeededApp } = await import("../server/mcp/testing.ts");
const { residentBytes } = await import("../server/testing/app-process.ts");
const { openPostgres, query } = await import("../db/client.ts");
const { sql } = await import("drizzle-orm");
const { fillOrgs } = await import("./lib/fill.ts");
const { analyze } = await import("./lib/seed.ts");

interface Size {
  label: string;
  orgs: number;
  issues: number;
  cycles: number;
  failed: number;
  firstFailure?: string;
  samples: { atMs: number; rss: number }[];
}

const MiB = 1024 * 1024;

async function prepare(orgs: number) {
  const seeded = await startSeededApp(["SOK"], { LOG_LEVEL: "warn", SESSION_KEY_CAP: String(AGENTS) });
  const database = await openPostgres(seeded.env.DATABASE_URL!, { max: 2 });
  await fillOrgs(database.db, 1, orgs);
  await analyze(database.db);
  const [{ n: issues }] = (await query<{ n: number }>(database.db, sql`select count(*)::int as n from issues`)) as [{ n: number }];
  await database.close();
  const org = seeded.orgs.SOK!;
  const people = await Promise.all((["alice", "bob", "carol"] as const).map((who) => connectClient(seeded.endpoint, org.people[who].key)));
  const agents = await Promise.all(
    Array.from({ length: AGENTS }, async (_, i) => {
      const { key } = await callOk(people[i % 3]!, "mint_session_key", { label: `soak-${i}` });
      return connectClient(seeded.endpoint, key, { name: `soak-agent-${i}` });
    }),
  );
  return { seeded, people, agents, issues };
}

async function soak(label: string, orgs: number, prepared: Awaited<ReturnType<typeof prepare>>, startedAt: number): Promise<Size> {
  const { seeded, people, agents } = prepared;
  const pid = seeded.app.child.pid!;
  const size: Size = { label, orgs, issues: prepared.issues, cycles: 0, failed: 0, samples: [{ atMs: 0, rss: residentBytes(pid) }] };
  const endAt = startedAt + MINUTES * 60_000;
  const sampler = setInterval(() => {
    size.samples.push({ atMs: Date.now() - startedAt, rss: residentBytes(pid) });
    // Every five minutes a line on stderr, so a run cut short still says where it was.
    if (size.samples.length % 10 === 1) log(`soak ${label}: ${round((Date.now() - startedAt) / 60_000, 1)} min, RSS ${Math.round(size.samples.at(-1)!.rss / MiB)} MiB, ${size.cycles} cycles, ${size.failed} failed`);
  }, SAMPLE_MS);
  // Each agent keeps its share of the rate: one cycle every AGENTS / RATE seconds.
  const periodMs = (AGENTS / RATE) * 1000;
  try {
    await Promise.all(
      agents.map(async (agent, i) => {
        const person: Client = people[i % 3]!;
        let next = startedAt + (i * periodMs) / AGENTS;
        for (let cycle = 0; Date.now() < endAt; cycle++) {
          await new Promise((r) => setTimeout(r, Math.max(0, next - Date.now())));
          next += periodMs;
          try {
            await callOk(person, "save_issue", { title: `Soak issue ${i}-${cycle}`, work: true, changeType: "feat", noDependency: "independent", priority: (cycle % 4) + 1 });
            const claim = await callOk(agent, "next_issue");
            if (claim.claimToken) await callOk(agent, "save_issue", { identifier: claim.identifier, status: "done", claimToken: claim.claimToken });
            if (cycle % 10 === 0) {
              await callOk(person, "queue_status");
              await callOk(person, "list_issues", { limit: 50 });
            }
            size.cycles++;
          } catch (error) {
            // A call that fails or times out (the SDK's 60 s) on a loaded machine is counted, not fatal: the hour goes on.
            size.failed++;
            size.firstFailure ??= `${new Date().toISOString()} ${(error as Error).message}`;
          }
        }
      }),
    );
  } finally {
    clearInterval(sampler);
  }
  size.samples.push({ atMs: Date.now() - startedAt, rss: residentBytes(pid) });
  return size;
}

log(`soak: filling 100 and ${BIG_ORGS} orgs in two databases (load average ${round(os.loadavg()[0]!, 2)})`);
const [smallPrepared, bigPrepared] = await Promise.all([prepare(100), prepare(BIG_ORGS)]);
try {
  log(`soak: ${MINUTES} min of ${RATE} cycles/s by ${AGENTS} agents on each app (${smallPrepared.issues} and ${bigPrepared.issues} issues)`);
  const startedAt = Date.now();
  const [small, big] = await Promise.all([soak("100k", 100, smallPrepared, startedAt), soak("1M", BIG_ORGS, bigPrepared, startedAt)]);
  const figures = (size: Size) => {
    const warm = size.samples.find((s) => s.atMs >= WARM_MS) ?? size.samples.at(-1)!;
    const end = size.samples.at(-1)!;
    const peak = Math.max(...size.samples.map((s) => s.rss));
    return { warm: warm.rss / MiB, end: end.rss / MiB, peak: peak / MiB, growth: end.rss / warm.rss };
  };
  const s = figures(small);
  const b = figures(big);
  const row = (name: string, a: number, c: number, unit = " MiB") => `| ${name} | ${round(a, 1)}${unit} | ${round(c, 1)}${unit} | ${round(c / a, 2)}x |`;
  process.stdout.write(
    [
      "",
      `| figure (${MINUTES} min, ${RATE} cycles/s, ${AGENTS} agents, load average ${round(os.loadavg()[0]!, 2)}) | ${small.issues.toLocaleString("en")} issues | ${big.issues.toLocaleString("en")} issues | ratio |`,
      "|---|---|---|---|",
      row(`app RSS after ${round(WARM_MS / 60_000, 1)} min`, s.warm, b.warm),
      row(`app RSS at the end`, s.end, b.end),
      row("app RSS peak", s.peak, b.peak),
      `| growth from warm to end | ${round(s.growth, 2)}x | ${round(b.growth, 2)}x | |`,
      `| cycles completed (${RATE}/s asked) | ${small.cycles} (${round(small.cycles / (MINUTES * 60), 1)}/s) | ${big.cycles} (${round(big.cycles / (MINUTES * 60), 1)}/s) | ${round(big.cycles / small.cycles, 2)}x |`,
      `| cycles failed (a call refused or past the SDK's 60 s) | ${small.failed} | ${big.failed} | |`,
      "",
      ...[small, big].filter((x) => x.firstFailure).map((x) => `first failure at ${x.label}: ${x.firstFailure}`),
      `RSS samples (MiB, every ${SAMPLE_MS / 1000} s): 100k ${small.samples.map((x) => Math.round(x.rss / MiB)).join(" ")}`,
      `1M ${big.samples.map((x) => Math.round(x.rss / MiB)).join(" ")}`,
      "",
    ].join("\n"),
  );
} finally {
  for (const prepared of [smallPrepared, bigPrepared]) {
    await Promise.all([...prepared.people, ...prepared.agents].map((c) => c.close().catch(() => {})));
    await prepared.seeded.close();
  }
}
