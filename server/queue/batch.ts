import type { z } from "zod";
import { sql } from "drizzle-orm";
import { query, type Db } from "../../db/client.ts";
import type { Ctx } from "../context.ts";
import { idList } from "../issues/ranking.ts";
import { inOrder, type WriteScope } from "../issues/store.ts";
import type { IssueRow } from "../issues/types.ts";
import { summarize } from "../issues/views.ts";
import { claimBudget, claimCapError, claimRow, type Budget, type ClaimReply } from "./claim.ts";
import { dispatchableAt, dispatchWithCurrentSla, emptyFigures, emptyReply, i, laneOf, order, scopeOf, SlaThresholdPassed, slaThresholdPassed } from "./dispatch.ts";
import { nextBatchInput } from "./schemas.ts";
import { meter } from "../usage/meter.ts";
import { refuseWhileFrozen } from "../orgs/freeze.ts";

/** The dispatchable issues of the caller's lanes, in dispatch order, unlocked. */
function dispatchCandidates(scope: WriteScope, allLanes: boolean | undefined, limit: number): PromiseLike<IssueRow[]> {
  const { ctx, now } = scope;
  return scope.tx
    .select()
    .from(i)
    .where(sql`${scopeOf(ctx)} and ${dispatchableAt(now)} and ${laneOf(ctx, allLanes)}`)
    .orderBy(...order)
    .limit(limit);
}

/** Locks one issue if it is still dispatchable in the caller's lanes; undefined when taken or being taken meanwhile. */
async function lockIfDispatchable(scope: WriteScope, id: string, allLanes: boolean | undefined): Promise<IssueRow | undefined> {
  const rows = await scope.tx
    .select()
    .from(i)
    .where(sql`i.id = ${id} and ${dispatchableAt(scope.now)} and ${laneOf(scope.ctx, allLanes)}`)
    .for("no key update", { skipLocked: true });
  return rows[0];
}

/** Pairs among `ids` that may not go out together: dependency paths, parent/child, related, duplicate. */
async function conflictsAmong(db: Db, ids: string[]): Promise<Set<string>> {
  const conflicts = new Set<string>();
  if (ids.length < 2) return conflicts;
  const list = idList(ids);
  const pairs = await query<{ a: string; b: string }>(
    db,
    sql`with recursive reach(origin, id) as (
          select r.source_id, r.target_id from relations r where r.type = 'blocks' and r.source_id in (${list})
          union
          select reach.origin, r.target_id from reach join relations r on r.source_id = reach.id and r.type = 'blocks'
        )
        select origin as a, id as b from reach where id in (${list})
        union all
        select source_id, target_id from relations where type in ('related', 'duplicate') and source_id in (${list}) and target_id in (${list})
        union all
        select parent_id, id from issues where id in (${list}) and parent_id in (${list})`,
  );
  for (const { a, b } of pairs) {
    conflicts.add(`${a}|${b}`);
    conflicts.add(`${b}|${a}`);
  }
  return conflicts;
}

/** Up to n mutually independent dispatchable issues in order; a free peek, or all claimed in one transaction. */
export async function nextBatch(ctx: Ctx, raw: z.input<typeof nextBatchInput> = {}) {
  const input = nextBatchInput.parse(raw);
  refuseWhileFrozen(ctx.principal);
  const window = Math.min(200, input.n * 4 + 10);
  const result = await dispatchWithCurrentSla(ctx, async (scope, checkSla) => {
    // The window is read unlocked: locking all of it would make concurrent pulls skip issues this batch does not take.
    const candidates = () => dispatchCandidates(scope, input.allLanes, window);
    const read = async (): Promise<Budget<IssueRow[]>> =>
      input.claim ? claimBudget(scope, candidates) : { live: 0, cap: input.n, then: await candidates() };
    const [slaPassed, budget] = await inOrder(() => slaThresholdPassed(scope), read);
    if (checkSla && slaPassed) throw new SlaThresholdPassed();
    const rows = budget.then;
    const conflicts = await conflictsAmong(scope.tx, rows.map((c) => c.id));
    const limit = Math.min(input.n, budget.cap - budget.live);
    if (input.claim && limit <= 0 && rows.length > 0) throw claimCapError(budget.cap);
    const picked: IssueRow[] = [];
    for (const row of rows) {
      if (picked.length >= limit) break;
      if (!picked.every((p) => !conflicts.has(`${p.id}|${row.id}`))) continue;
      const taken = input.claim ? await lockIfDispatchable(scope, row.id, input.allLanes) : row;
      if (taken) picked.push(taken);
    }
    if (picked.length === 0) return null;
    if (!input.claim) {
      return { claimed: false as const, issues: await summarize(scope.tx, scope.cipher, picked, scope.now) };
    }
    const claims: ClaimReply[] = [];
    for (const row of picked) {
      const claimed = await claimRow(scope, row, budget.live + claims.length);
      // null: the lapse it found quarantined it (decision 055); the batch goes on without it.
      if (claimed) claims.push(claimed);
    }
    // One call, one charge, however many it claimed (a peek above is free).
    meter(scope, "next_batch", "dispatch", null);
    return { claimed: true as const, claims };
  });
  if (result) return result;
  const now = ctx.clock.now();
  const empty = emptyReply(await emptyFigures(ctx, now, input.allLanes), now);
  return input.claim ? { ...empty, claims: [] } : { ...empty, issues: [] };
}
