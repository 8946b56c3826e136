/**
 * `npm run bench:org-delete`: deleting an org of 100,000 issues (each with a body and a comment,
 * 20% in blocking chains) while another org's `getIssue` runs in a loop on a second pool (another
 * app instance). Prints how long the deletion took to destroy the data key and end the org's keys
 * and jobs (the request's transaction), how long the background purge took and in how many
 * batches, and the other org's getIssue latency during the purge beside the same loop with no
 * deletion running, in the same run. Not run in CI; the figures go in bench/README.md.
 */
import { useBenchPostgres } from "./lib/postgres-env.ts";
import { distribution, log, round } from "./lib/stats.ts";

useBenchPostgres();
const { openBenchDatabase } = await import("./lib/env.ts");
const { seedGraph } = await import("./lib/seed.ts");
const { seedOrg } = await import("../server/testing/fixtures.ts");
const { comments, issues } = await import("../db/schema/index.ts");
const { humanCtx } = await import("../server/orgs/access.ts");
const { deleteOrg } = await import("../server/orgs/delete.ts");
const { purgeOrg } = await import("../server/orgs/purge.ts");
const { getIssue } = await import("../server/issues/index.ts");
const { eq } = await import("drizzle-orm");
type Services = import("../server/context.ts").Services;
type Ctx = import("../server/context.ts").Ctx;

const SIZE = Number(process.env.BENCH_ORG_DELETE_ISSUES ?? 100_000);

async function seed(services: Services, org: { orgId: string; projectId: string; prefix: string; agents: { alice: { userId: string } } }, size: number) {
  const now = new Date();
  const graph = {
    issues: Array.from({ length: size }, (_, i) => ({
      title: `Issue ${i + 1}: a title of ordinary length for a tracker`,
      priority: i % 5,
      dueAt: null,
      assigneeId: null,
      createdAt: new Date(now.getTime() - (size - i) * 1000),
    })),
    edges: Array.from({ length: Math.floor(size / 5) }, (_, k): [number, number] => [k * 5, k * 5 + 1]),
  };
  const seeded = await seedGraph(services, { orgId: org.orgId, projectId: org.projectId, prefix: org.prefix, authorId: org.agents.alice.userId }, graph, now);
  const cipher = await services.keyring.forOrg(services.db, org.orgId);
  const body = cipher.encrypt("A body of a few sentences. ".repeat(12));
  for (let at = 0; at < seeded.length; at += 1000) {
    const chunk = seeded.slice(at, at + 1000);
    await services.db.transaction(async (tx) => {
      for (const s of chunk) await tx.update(issues).set({ bodyEnc: body }).where(eq(issues.id, s.id));
    });
    await services.db.insert(comments).values(
      chunk.map((s) => ({ id: crypto.randomUUID(), orgId: org.orgId, issueId: s.id, authorId: org.agents.alice.userId, bodyEnc: cipher.encrypt(`A comment on ${s.identifier}.`)!, createdAt: s.createdAt })),
    );
  }
  return seeded.map((s) => s.identifier);
}

/** The other org's getIssue in a loop until `until` settles (or for `ms`); every call's latency. */
async function readLoop(ctx: Ctx, identifiers: string[], until: Promise<unknown>): Promise<number[]> {
  let done = false;
  void until.finally(() => (done = true));
  const samples: number[] = [];
  for (let i = 0; !done; i++) {
    const started = performance.now();
    await getIssue(ctx, { identifier: identifiers[i % identifiers.length]! });
    samples.push(performance.now() - started);
  }
  return samples;
}

const summary = (samples: number[]) => {
  const d = distribution(samples);
  return { n: d.n, p50: round(d.p50), p99: round(d.p99), max: round(d.max), over100ms: samples.filter((s) => s >= 100).length };
};

const bench = await openBenchDatabase({ pools: 2, connectionsPerPool: 4, prefix: "DEL" });
try {
  const [deleter, reader] = bench.pools as [Services, Services];
  const other = await seedOrg(deleter, { prefix: "OTH", name: "Other" });
  log(`seeding ${SIZE.toLocaleString("en")} issues to delete and 1,000 in another org`);
  const otherIssues = await seed(deleter, other, 1_000);
  await seed(deleter, bench.org, SIZE);
  const otherCtx = (await humanCtx(reader, { orgId: other.orgId, userId: other.agents.alice.userId, runtime: "dash" })).ctx;
  await readLoop(otherCtx, otherIssues, new Promise((r) => setTimeout(r, 2_000))); // warm-up
  const baseline = await readLoop(otherCtx, otherIssues, new Promise((r) => setTimeout(r, 10_000)));

  const owner = (await humanCtx(deleter, { orgId: bench.org.orgId, userId: bench.org.agents.alice.userId, runtime: "dash" })).ctx;
  let started = performance.now();
  await deleteOrg(owner, { confirmName: "Bench" });
  const keyMs = performance.now() - started;
  started = performance.now();
  const purge = purgeOrg(deleter.db, bench.org.orgId);
  const during = await readLoop(otherCtx, otherIssues, purge);
  const { rows, batches } = await purge;
  const purgeMs = performance.now() - started;

  const results = {
    issues: SIZE,
    keyDestroyedMs: round(keyMs),
    purge: { ms: Math.round(purgeMs), rows, batches },
    otherOrgGetIssue: { baseline: summary(baseline), duringPurge: summary(during) },
  };
  log(`key destroyed, keys revoked, jobs canceled in ${results.keyDestroyedMs} ms; ${rows.toLocaleString("en")} rows purged in ${batches} batches, ${(purgeMs / 1000).toFixed(1)} s`);
  log(`other org getIssue p99: ${results.otherOrgGetIssue.baseline.p99} ms with no deletion, ${results.otherOrgGetIssue.duringPurge.p99} ms during the purge (max ${results.otherOrgGetIssue.duringPurge.max} ms, ${results.otherOrgGetIssue.duringPurge.over100ms} calls of 100 ms or more)`);
  process.stdout.write(JSON.stringify({ benchmark: "org-delete", results }, null, 2) + "\n");
} finally {
  await bench.close();
}
