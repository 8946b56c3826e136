import { sql } from "drizzle-orm";
import { query } from "../../../db/client.ts";
import { activityDetail } from "../../activity/index.ts";
import { systemClock, type Clock, type Ctx, type Services } from "../../context.ts";
import { DomainError } from "../../errors.ts";
import { saveIssue } from "../../issues/index.ts";
import { createTestDatabase, servicesFor, testConfig, testDriver } from "../../testing/db.ts";

/**
 * What the adversarial concurrency suites for dispatch share (server/queue/concurrency-*.test.ts).
 * Two connection pools on one database stand for two app instances. PGlite has a single
 * connection, so there the same scenarios run smaller and merely interleaved; the proofs of
 * atomicity are the PostgreSQL runs. Each suite opens its own pools: no state lives here.
 */

export const onPostgres = testDriver === "postgres";
/** Agents racing at once: the drain's claimers, the claim_issue racers, the crowd at expiry. */
export const CLAIMERS = onPostgres ? 64 : 8;

/** The reference model has no quarantine (decision 055): these races' releases and lapses are chance, never an issue that kills agents. */
export const noQuarantine = (services: Services, projectId: string) => query(services.db, sql`update projects set quarantine_after = 100000 where id = ${projectId}`);
export const DAY = 86_400_000;
export const MINUTE = 60_000;

export interface TwoPools {
  poolA: Services;
  poolB: Services;
  /** Services for two app instances (two connection pools, one key ring) sharing a clock and config. */
  pools(clock: Clock, config: Record<string, string>): [Services, Services];
  close(): Promise<void>;
}

/** A fresh test database with two pools of 10; poolA and poolB run on the system clock with week-long leases. */
export async function openTwoPools(): Promise<TwoPools> {
  const tdb = await createTestDatabase({ max: 10 });
  const secondPool = await tdb.openAnother(10).catch(async (error: unknown) => {
    await tdb.close();
    throw error;
  });
  const pools = (clock: Clock, config: Record<string, string>): [Services, Services] => {
    const a = servicesFor(tdb.database, { clock, config: testConfig(config) });
    return [a, { ...a, db: secondPool.db }];
  };
  const [poolA, poolB] = pools(systemClock, { LEASE_TTL_SECONDS: String(7 * 86_400) });
  return { poolA, poolB, pools, close: () => tdb.close() };
}


/** A refusal's code (and the holder it names); anything but a DomainError keeps its message, so an assertion shows it. */
export function refusal(error: unknown): { code: string; holder: string | null } {
  if (!(error instanceof DomainError)) return { code: `not a refusal: ${String((error as Error)?.message ?? error)}`, holder: null };
  return { code: error.code, holder: (error.details as { holder?: { keyId: string } | null } | undefined)?.holder?.keyId ?? null };
}

/** A small seeded generator, so a failing DAG can be reproduced from the printed seed. */
export function random(seed: number) {
  let s = seed >>> 0;
  const next = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, int: (n: number) => Math.floor(next() * n), chance: (p: number) => next() < p };
}
export type Random = ReturnType<typeof random>;

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function withLimit<T>(items: T[], limit: number, run: (item: T, worker: number) => Promise<void>) {
  let at = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async (_, worker) => {
      while (at < items.length) await run(items[at++]!, worker);
    }),
  );
}

/**
 * Files `count` issues through the engine in waves of 100; each may be blocked by up to three
 * issues of earlier waves (chains up to count/100 deep), with random priorities and some
 * deadlines (past due, or days away so no threshold is crossed during the test).
 */
export async function fileRandomDag(ctxs: Ctx[], rng: Random, count: number, options: { dueWithin?: number; assignees?: string[] } = {}) {
  const identifiers: string[] = [];
  const wave = 100;
  for (let start = 0; start < count; start += wave) {
    const plan = Array.from({ length: Math.min(wave, count - start) }, (_, i) => {
      const blockers = new Set<string>();
      if (start > 0 && rng.chance(0.65)) {
        const n = 1 + rng.int(3);
        for (let b = 0; b < n; b++) blockers.add(identifiers[Math.max(0, start - 150) + rng.int(Math.min(150, start))]!);
      }
      const due = rng.next();
      const dueAt = options.dueWithin
        ? rng.chance(0.3) ? ctxs[0]!.clock.now().getTime() + MINUTE + rng.int(options.dueWithin) : undefined
        : due < 0.08 ? ctxs[0]!.clock.now().getTime() - rng.int(DAY) : due < 0.25 ? ctxs[0]!.clock.now().getTime() + 2 * DAY + rng.int(5 * DAY) : undefined;
      const assignee = options.assignees && rng.chance(0.2) ? options.assignees[rng.int(options.assignees.length)] : undefined;
      return {
        title: `task ${start + i}`,
        work: true,
        changeType: "feat" as const,
        priority: rng.int(5),
        ...(blockers.size > 0 ? { blockedBy: [...blockers] } : { noDependency: "independent" }),
        ...(dueAt !== undefined ? { dueAt } : {}),
        ...(assignee ? { assignee } : {}),
      };
    });
    const made: string[] = new Array(plan.length);
    await withLimit(
      plan.map((input, i) => ({ input, i })),
      ctxs.length > 1 ? 16 : 1,
      async ({ input, i }, worker) => {
        made[i] = (await saveIssue(ctxs[worker % ctxs.length]!, input)).identifier;
      },
    );
    identifiers.push(...made);
  }
  return identifiers;
}

/** Per issue, the lease protocol as written to the activity log, in log order (id order = row-lock order per issue). */
export async function leaseHistory(services: Services, orgId: string) {
  const cipher = await services.keyring.forOrg(services.db, orgId);
  const rows = await query<{ id: number; identifier: string; kind: string; key_id: string | null; detail_enc: string | null; facts: unknown }>(
    services.db,
    sql`select a.id, i.identifier, a.kind, a.key_id, a.detail_enc, a.facts from activity a join issues i on i.id = a.issue_id
        where a.org_id = ${orgId} and a.kind in ('claimed', 'heartbeat', 'checkpoint', 'released', 'finished', 'reclaimed')
        order by a.id`,
  );
  const byIssue = new Map<string, { id: number; kind: string; keyId: string | null; fence: number }[]>();
  for (const row of rows) {
    const detail = activityDetail(cipher, { detailEnc: row.detail_enc, facts: row.facts }) as { fence?: number };
    const list = byIssue.get(row.identifier) ?? [];
    list.push({ id: Number(row.id), kind: row.kind, keyId: row.key_id, fence: detail.fence ?? -1 });
    byIssue.set(row.identifier, list);
  }
  return byIssue;
}

/**
 * The lease protocol per issue: a claim with fence f+1 only after the lease of fence f ended
 * (released, finished, or its expiry recorded as a reclaim, which a claim of an expired issue
 * does first), and lease writes only under the live fence. A second live holder shows up as a
 * claim while a lease is open. The log's id order is the order of the row-locking writes of
 * one issue; its timestamps are taken before each transaction starts, so they are not used.
 */
export function protocolViolations(history: Map<string, { kind: string; fence: number }[]>): string[] {
  const problems: string[] = [];
  for (const [identifier, events] of history) {
    let live: number | null = null;
    let lastFence = 0;
    for (const e of events) {
      if (e.kind === "claimed") {
        if (live !== null) problems.push(`${identifier}: fence ${e.fence} claimed while fence ${live} was live`);
        if (e.fence !== lastFence + 1) problems.push(`${identifier}: fence jumped ${lastFence} -> ${e.fence}`);
        live = lastFence = e.fence;
      } else {
        if (e.fence !== live) problems.push(`${identifier}: ${e.kind} under fence ${e.fence} while ${live ?? "none"} was live`);
        if (e.kind === "released" || e.kind === "finished" || e.kind === "reclaimed") live = null;
      }
    }
  }
  return problems;
}
