/**
 * `npm run bench:export`: the app's memory while it exports an org of 100,000 issues beside one
 * of 1,000, in the same run, so flat memory shows as a ratio near 1 (an export holding the org
 * would need ~100x). Each issue has a body, a label, a comment and a checkpoint's worth of text,
 * 20% sit in blocking chains. The export is consumed as a client would (chunks counted and
 * dropped); memory is sampled every 10 ms, after a GC, relative to the level before the export.
 * Not run in CI; the figures go in bench/README.md.
 */
import { useBenchPostgres } from "./lib/postgres-env.ts";
import { log } from "./lib/stats.ts";

useBenchPostgres();
const { openBenchDatabase } = await import("./lib/env.ts");
const { seedGraph } = await import("./lib/seed.ts");
const { seedOrg } = await import("../server/testing/fixtures.ts");
const { comments, issues } = await import("../db/schema/index.ts");
const { systemPrincipal } = await import("../server/context.ts");
const { withPrincipal } = await import("../server/with-principal.ts");
const { exportOrg } = await import("../server/transfer/export.ts");
const { eq } = await import("drizzle-orm");
type Services = import("../server/context.ts").Services;

const gc = (globalThis as { gc?: () => void }).gc;
const MB = 1024 * 1024;

async function seed(services: Services, org: { orgId: string; projectId: string; prefix: string; agents: { alice: { userId: string } } }, size: number) {
  const now = new Date();
  const graph = {
    issues: Array.from({ length: size }, (_, i) => ({
      title: `Issue ${i + 1}: a title of ordinary length for a tracker`,
      priority: i % 5,
      dueAt: i % 10 === 0 ? new Date(now.getTime() + 30 * 86_400_000) : null,
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
      chunk.map((s) => ({
        id: crypto.randomUUID(),
        orgId: org.orgId,
        issueId: s.id,
        authorId: org.agents.alice.userId,
        bodyEnc: cipher.encrypt(`A comment on ${s.identifier}, long enough to be a real one.`)!,
        createdAt: s.createdAt,
      })),
    );
  }
}

async function measure(services: Services, orgId: string, format: "json" | "csv") {
  gc?.();
  const base = process.memoryUsage();
  let peakRss = base.rss;
  let peakHeap = base.heapUsed;
  const sampler = setInterval(() => {
    const m = process.memoryUsage();
    peakRss = Math.max(peakRss, m.rss);
    peakHeap = Math.max(peakHeap, m.heapUsed);
  }, 10);
  const started = performance.now();
  let bytes = 0;
  const { chunks } = await exportOrg(withPrincipal(services, systemPrincipal(orgId)), { format });
  for await (const chunk of chunks) bytes += Buffer.byteLength(chunk);
  const ms = performance.now() - started;
  clearInterval(sampler);
  return { ms: Math.round(ms), mb: +(bytes / MB).toFixed(1), rssMb: +((peakRss - base.rss) / MB).toFixed(1), heapMb: +((peakHeap - base.heapUsed) / MB).toFixed(1) };
}

const bench = await openBenchDatabase({ pools: 1, connectionsPerPool: 6, prefix: "BIG" });
try {
  const services = bench.pools[0]!;
  if (!gc) log("run with node --expose-gc (npm run bench:export does) for steadier figures");
  const small = await seedOrg(services, { prefix: "SML", name: "Small" });
  log("seeding 1,000 + 100,000 issues");
  await seed(services, small, 1_000);
  await seed(services, bench.org, 100_000);
  const results: Record<string, unknown>[] = [];
  for (const format of ["json", "csv"] as const) {
    await measure(services, small.orgId, format); // warm-up: code paths compiled, pools open
    const a = await measure(services, small.orgId, format);
    const b = await measure(services, bench.org.orgId, format);
    results.push({ format, "1k": a, "100k": b, heapRatio: +(b.heapMb / Math.max(a.heapMb, 0.1)).toFixed(1) });
    log(`${format}: 1,000 issues ${a.mb} MB in ${a.ms} ms, peak heap +${a.heapMb} MB, rss +${a.rssMb} MB | 100,000 issues ${b.mb} MB in ${b.ms} ms, peak heap +${b.heapMb} MB, rss +${b.rssMb} MB`);
  }
  process.stdout.write(JSON.stringify({ benchmark: "export", results }, null, 2) + "\n");
} finally {
  await bench.close();
}
