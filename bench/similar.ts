/**
 * `npm run bench:similar [-- --issues 100000 --probes 300]` (PostgreSQL; a few minutes, most of it
 * seeding): the duplicate gate's lookup (decision 066) in an org of 100,000 open issues, beside
 * `getIssue` of one issue in the same run, probes interleaved so machine load favours neither.
 * Titles and bodies come from a Zipf-distributed vocabulary of 200,000 words, so common words are
 * common, most words rare, and the index holds what a real backlog's would (about 30 rows per
 * issue). Each probe is a new issue's title and body: `similarOpenIssues` digests its words, reads each word's open
 * issues through the partial index and names the look-alikes, as save_issue's gate does.
 * Target: p99 under 20 ms.
 */
import { sql } from "drizzle-orm";
import { query } from "../db/client.ts";
import { getIssue } from "../server/issues/index.ts";
import { indexTerms, similarOpenIssues } from "../server/issues/similar.ts";
import { wholeNumberOption } from "./lib/args.ts";
import { makeAgents, openBenchDatabase } from "./lib/env.ts";
import { useBenchPostgres } from "./lib/postgres-env.ts";
import { seedGraph } from "./lib/seed.ts";
import { distribution, log, round, seededRandom } from "./lib/stats.ts";

const ISSUES = wholeNumberOption("issues", 100_000);
const PROBES = wholeNumberOption("probes", 300);
const TARGET_P99_MS = 20;

useBenchPostgres();
const bench = await openBenchDatabase({ pools: 1, connectionsPerPool: 6, prefix: "SIM" });

const random = seededRandom(66);
const syllables = ["ka", "lo", "mi", "ne", "ru", "ta", "vi", "so", "de", "pa", "gu", "fe", "zo", "ri", "ba", "xe"];
const vocabulary = Array.from({ length: 200_000 }, (_, i) => {
  let word = "";
  for (let n = i + 16 * 16; n > 0; n = Math.floor(n / 16)) word += syllables[n % 16];
  return word;
});
// Zipf: the k-th word is drawn in proportion to 1/k, so a few words are in most issues and most in few.
const weights = vocabulary.map((_, k) => 1 / (k + 1));
const total = weights.reduce((a, b) => a + b, 0);
const cumulative: number[] = [];
weights.reduce((sum, w, k) => (cumulative[k] = sum + w / total), 0);
const word = () => {
  const r = random();
  let lo = 0;
  let hi = cumulative.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (cumulative[mid]! < r) lo = mid + 1;
    else hi = mid;
  }
  return vocabulary[lo]!;
};
const sentence = (words: number) => Array.from({ length: words }, word).join(" ");
const newIssue = () => ({ title: sentence(4 + Math.floor(random() * 5)), body: sentence(20 + Math.floor(random() * 20)) });

try {
  const { org } = bench;
  const services = bench.pools[0]!;
  const [agent] = await makeAgents(bench, 1);
  const texts = Array.from({ length: ISSUES }, newIssue);
  log(`similar: seeding ${ISSUES} issues`);
  const seeded = await seedGraph(
    services,
    { orgId: org.orgId, projectId: org.projectId, prefix: org.prefix, authorId: org.agents.alice.userId },
    { issues: texts.map((t, i) => ({ title: t.title, priority: i % 5, dueAt: null, assigneeId: null, createdAt: new Date(Date.now() - (ISSUES - i) * 1000) })), edges: [] },
    new Date(),
  );
  log("similar: indexing their terms");
  const cipher = await services.keyring.forOrg(services.db, org.orgId);
  const batches: (() => Promise<void>)[] = [];
  for (let start = 0; start < seeded.length; start += 2_000) {
    const entries = seeded.slice(start, start + 2_000).map((s, k) => ({ id: s.id, ...texts[start + k]!, status: "todo" }));
    batches.push(() => indexTerms(services.db, cipher, org.orgId, entries));
  }
  let next = 0;
  await Promise.all(Array.from({ length: 4 }, async () => {
    while (next < batches.length) await batches[next++]!();
  }));
  await services.db.execute(sql`analyze issue_terms`);
  const [{ rows }] = (await query<{ rows: number }>(services.db, sql`select count(*)::int as rows from issue_terms`)) as [{ rows: number }];

  const lookups: number[] = [];
  const reads: number[] = [];
  let named = 0;
  for (let p = 0; p < PROBES + 20; p++) {
    const probe = p % 2 === 0 ? newIssue() : { ...texts[Math.floor(random() * ISSUES)]! };
    const started = performance.now();
    const found = await similarOpenIssues(services.db, cipher, agent!.principal, probe.title, probe.body);
    const lookup = performance.now() - started;
    const before = performance.now();
    await getIssue(agent!, { identifier: seeded[Math.floor(random() * ISSUES)]!.identifier });
    const read = performance.now() - before;
    // The first probes warm the caches and the plan; they are not counted.
    if (p < 20) continue;
    lookups.push(lookup);
    reads.push(read);
    if (found.length > 0) named++;
  }
  const lookup = distribution(lookups);
  const read = distribution(reads);
  const verdict = lookup.p99 < TARGET_P99_MS ? "PASS" : "FAIL";
  process.stdout.write(
    `duplicate gate lookup, ${ISSUES} open issues (${rows} term rows), ${PROBES} probes (half copies of an existing issue's words, half new): ` +
      `p50 ${round(lookup.p50)} ms, p99 ${round(lookup.p99)} ms; getIssue p50 ${round(read.p50)} ms, p99 ${round(read.p99)} ms ` +
      `(lookup p50 ${round(lookup.p50 / read.p50)}x getIssue); ${named} probes named a look-alike; target p99 < ${TARGET_P99_MS} ms: ${verdict}\n`,
  );
} finally {
  await bench.close();
}
