import { getTableColumns } from "drizzle-orm";
import type { Db } from "../../db/client.ts";
import { retryingConflicts } from "../../db/retry.ts";
import { issues } from "../../db/schema/index.ts";
import type { Ctx } from "../context.ts";
import type { OrgCipher } from "../crypto/index.ts";
import { settleCharge, type MeterScope } from "../usage/meter.ts";
import { transactionWithNotices } from "../events/index.ts";
import { countIfStale } from "./stale-refusals.ts";
import { refuseWhileFrozen } from "../orgs/freeze.ts";
import type { IssueRow } from "./types.ts";

/**
 * Shared plumbing of issue writes: the transaction, its statements sent in order, an issue row read
 * back from SQL (the row type is in ./types.ts). Lookups scoped to the caller's org are in
 * ./lookups.ts, a caller's arguments parsed in ./inputs.ts.
 */

const issueColumns = Object.entries(getTableColumns(issues));

/** An issue row as the database functions return it (`to_jsonb(issues)`: column names, timestamps as text), typed. */
export function issueRowFrom(json: Record<string, unknown>): IssueRow {
  const row: Record<string, unknown> = {};
  for (const [key, column] of issueColumns) {
    const value = json[column.name] ?? null;
    row[key] = value !== null && column.dataType === "date" ? new Date(value as string) : value;
  }
  return row as IssueRow;
}

/** A write's transaction; `charge` is what it owes, marked by `meter` (server/usage/meter.ts). */
export interface WriteScope extends MeterScope {
  tx: Db;
  ctx: Ctx;
  cipher: OrgCipher;
  now: Date;
}

export const isTerminal = (status: string) => status === "done" || status === "canceled";
/** gatesDependents (db/schema/dispatch.ts) for a row in memory. */
export const gatesDependentsNow = (row: { status: string; verification: string | null }) => !isTerminal(row.status) || row.verification === "pending";

/**
 * Runs `fn` in a transaction with the org's cipher; retries on deadlock or serialization
 * failure. What `fn` metered is charged before the commit, in the same transaction, so a
 * refusal (BILLING_INACTIVE, SPEND_CAP) rolls the write back and a failed write costs nothing.
 * A STALE_CLAIM refusal is counted after the rollback (server/issues/stale-refusals.ts). A frozen
 * org's principal is refused first, before any statement (server/orgs/freeze.ts, decision 110).
 */
export async function inTransaction<T>(ctx: Ctx, fn: (scope: WriteScope) => Promise<T>): Promise<T> {
  refuseWhileFrozen(ctx.principal);
  const cipher = await ctx.keyring.forOrg(ctx.db, ctx.principal.orgId);
  try {
    return await retryingConflicts(() =>
      transactionWithNotices(ctx.db, async (tx) => {
        const scope: WriteScope = { tx, ctx, cipher, now: ctx.clock.now() };
        const result = await fn(scope);
        await settleCharge(scope);
        return result;
      }),
    );
  } catch (error) {
    // Rolled back by now: a stale write refused is counted for the Fleet page outside it, whatever the door.
    await countIfStale(ctx, error);
    throw error;
  }
}

// Lower down, so a domain below this one (server/orgs: a prefix's rename) reruns its conflicts the same way.
export { retryingConflicts, RetryTransaction } from "../../db/retry.ts";

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Sends a transaction's statements in this order without waiting for each result, so they
 * share one round trip: the server still runs them one after another, each seeing (and
 * waiting on the locks of) the ones before. Each thunk should send one statement when
 * called; the last may send several. (A thunk that awaits one statement before sending
 * another sends that one a round trip later, after the thunks behind it: fine only when no
 * later statement depends on it, and it costs that round trip.) A turn of the event loop
 * between thunks lets the lazy query builders hand each statement to the driver before the
 * next. Resolves to every result; if any fails, rejects with the first failure in order
 * (later ones only failed because the transaction had aborted). Inside a transaction only.
 */
export async function inOrder<T extends unknown[]>(...statements: { [K in keyof T]: () => PromiseLike<T[K]> }): Promise<T> {
  const pending: Promise<unknown>[] = [];
  for (let i = 0; i < statements.length; i++) {
    if (i > 0) await nextTurn();
    const started = statements[i]!();
    const result = new Promise((resolve, reject) => started.then(resolve, reject));
    // Observed by allSettled below; without this an early failure is an unhandled rejection meanwhile.
    result.catch(() => {});
    pending.push(result);
  }
  const settled = await Promise.allSettled(pending);
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === "rejected");
  if (failed) throw failed.reason;
  return settled.map((s) => (s as PromiseFulfilledResult<unknown>).value) as T;
}
