import { sql } from "drizzle-orm";
import { expect, it } from "vitest";
import { query } from "../../db/client.ts";
import type { Ctx } from "../context.ts";
import type { DomainError } from "../errors.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { useTestServices } from "../testing/database.ts";
import { addRelation, getIssue, saveIssue } from "./index.ts";
import type { SimilarIssue } from "./similar.ts";

const env = useTestServices();

/** Twenty pieces of work, some sharing a word with another (email, queue, login), as a fleet would describe them. */
const topics = [
  ["invoice", "pdf", "export", "download"],
  ["avatar", "upload", "safari", "crash"],
  ["password", "reset", "email", "expiry"],
  ["webhook", "signature", "verification", "retry"],
  ["dark", "mode", "settings", "toggle"],
  ["search", "autocomplete", "latency", "suggestions"],
  ["csv", "import", "encoding", "utf8"],
  ["rate", "limiter", "redis", "window"],
  ["audit", "log", "retention", "policy"],
  ["oauth", "google", "login", "callback"],
  ["notification", "digest", "weekly", "email"],
  ["mobile", "navigation", "drawer", "overflow"],
  ["timezone", "calendar", "events", "conversion"],
  ["stripe", "subscription", "proration", "upgrade"],
  ["image", "thumbnail", "generation", "queue"],
  ["database", "connection", "pool", "exhaustion"],
  ["markdown", "table", "rendering", "alignment"],
  ["backup", "codes", "two-factor", "login"],
  ["german", "translations", "localization", "missing"],
  ["sitemap", "seo", "crawler", "generation"],
] as const;

const cap = (word: string) => word[0]!.toUpperCase() + word.slice(1);
/** Ten ways to say one topic's work, each with at least two of its words in the title. */
function variants([a, b, c, d]: readonly string[]): { title: string; body: string }[] {
  const titles = [
    `${cap(a!)} ${b} ${c}`,
    `Investigate the ${b} ${a} problem`,
    `${cap(c!)}: ${a} and ${b}`,
    `Improve ${a} ${d}`,
    `${cap(d!)} for ${b} ${c}`,
    `${cap(b!)} ${d} is broken`,
    `Rework ${c} of ${a}`,
    `${cap(a!)} ${c} ${d} follow-up`,
    `Handle ${b} ${c} properly`,
    `${cap(d!)} ${a} cleanup`,
  ];
  return titles.map((title, i) => ({ title, body: `Seen by agent run ${i}: the ${a} ${b} ${c} ${d} path needs attention.` }));
}

it("a fleet filing 200 issues from 20 overlapping descriptions ends with one issue per piece of work, every look-alike it named read and linked", async () => {
  const org = await seedOrg(env.services, { prefix: "FLT" });
  const agents: Ctx[] = [org.agents.alice.ctx, org.agents.bob.ctx, org.agents.carol.ctx];
  for (const [i, human] of (["alice", "bob", "carol"] as const).entries()) agents.push((await org.agentFor(human, `fleet-${i}`)).ctx);
  // By title, which the refusal names: an identifier's topic known only once its create returned
  // let a racing agent take a same-topic issue, committed a moment before, for adjacent work.
  const topicOfTitle = new Map<string, number>();
  const attempts = topics.flatMap((words, topic) => variants(words).map((v) => ({ ...v, topic })));
  for (const attempt of attempts) topicOfTitle.set(attempt.title, attempt.topic);
  // A fixed shuffle: every topic's variants arrive interleaved with the others', several at once.
  const order = attempts.map((a, i) => ({ a, key: (i * 7919) % attempts.length })).sort((x, y) => x.key - y.key).map((x) => x.a);
  const named: { filed: string | null; topic: number; similar: string[] }[] = [];
  let refusals = 0;
  let skipped = 0;

  /** One agent's create, following the gate's hint: read what it names; the same work is not filed, adjacent work is filed and linked. */
  async function fileAsAgent(ctx: Ctx, attempt: (typeof attempts)[number]) {
    const reviewed: string[] = [];
    const seen: string[] = [];
    for (;;) {
      try {
        const issue = await saveIssue(ctx, { title: attempt.title, body: attempt.body, work: true, changeType: "feat", noDependency: "independent", reviewedSimilar: reviewed });
        for (const other of seen) await addRelation(ctx, { sourceId: issue.identifier, targetId: other, type: "related" });
        named.push({ filed: issue.identifier, topic: attempt.topic, similar: seen });
        return;
      } catch (error) {
        if ((error as DomainError).code !== "DUPLICATE_CHECK_REQUIRED") throw error;
        refusals++;
        const similar = (error as DomainError).details!.similar as SimilarIssue[];
        for (const { identifier } of similar) {
          await getIssue(ctx, { identifier });
          seen.push(identifier);
          reviewed.push(identifier);
        }
        if (similar.some(({ title }) => topicOfTitle.get(title) === attempt.topic)) {
          skipped++;
          named.push({ filed: null, topic: attempt.topic, similar: seen });
          return;
        }
      }
    }
  }
  let next = 0;
  await Promise.all(agents.map(async (ctx) => {
    while (next < order.length) await fileAsAgent(ctx, order[next++]!);
  }));

  // One open issue per piece of work: every later variant was named the first one.
  const filed = named.filter((n) => n.filed !== null);
  expect(filed.map((n) => n.topic).sort((x, y) => x - y)).toEqual(topics.map((_, i) => i));
  expect(skipped).toBe(attempts.length - topics.length);
  // No pair the gate named was skipped: every issue filed past a named one is linked to it.
  const edges = await query<{ source: string; target: string }>(
    env.services.db,
    sql`select s.identifier as source, t.identifier as target from relations r join issues s on s.id = r.source_id join issues t on t.id = r.target_id where r.org_id = ${org.orgId}`,
  );
  const linked = new Set(edges.map((e) => `${e.source}>${e.target}`));
  for (const n of filed) for (const other of n.similar) expect(linked.has(`${n.filed}>${other}`), `${n.filed} named ${other}`).toBe(true);
  // Most creates of distinct work never saw the gate: at most a few of the 20 were told of adjacent work.
  expect(filed.filter((n) => n.similar.length > 0).length).toBeLessThanOrEqual(4);
  expect(refusals).toBeGreaterThanOrEqual(skipped);
});
