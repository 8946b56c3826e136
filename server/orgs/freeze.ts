import { eq, sql, type AnyColumn, type SQL } from "drizzle-orm";
import type { Db } from "../../db/client.ts";
import { orgs } from "../../db/schema/index.ts";
import type { Principal } from "../context.ts";
import { DomainError, notFound } from "../errors.ts";
import { KEY_CACHE_MS } from "./key-cache.ts";

/**
 * An org frozen for a move to another stack (decisions 107 and 110): every write of its rows
 * answers ORG_FROZEN, a 503 with Retry-After, while the target catches up, whatever the door;
 * reads go on. Leases are untouched, so they keep their expiry and their holders finish on the
 * target with the same claim token.
 *
 * The rule lives here and is applied where writes start, not in each door: `inTransaction`
 * (server/issues/store.ts, every issue and queue write), `recordOrgActivity` (every org-level
 * write: keys, members, invites, settings, projects, connectors), and the few writes outside
 * both (labels, the one-statement heartbeat, the webhooks, the job runners). The flag is on the
 * principal, read with what each loader already reads: the key (key-auth.ts's keyPlaceColumns,
 * OAuth tokens too), a person's membership (access.ts's membershipOf), an invite. An instance
 * that cached the key (KEY_CACHE_MS) learns of it that much later, which is why the operator
 * waits FREEZE_SETTLES_MS before reading the LSN. The `system` principal (operator commands,
 * sweeps) carries no flag: the sweeps leave a frozen org out when they pick their rows.
 */
export const FREEZE_RETRY_AFTER_SECONDS = 2;
/** From the freeze's commit until no instance can start a write of the org: the key cache, plus a call in flight. */
export const FREEZE_SETTLES_MS = KEY_CACHE_MS + 1_000;

/** Throws ORG_FROZEN when the principal's org is frozen; called first by every write of the org's rows. */
export function refuseWhileFrozen(principal: Pick<Principal, "orgFrozen">): void {
  if (!principal.orgFrozen) return;
  throw orgFrozen();
}

/** The refusal itself (ORG_FROZEN, 503, details.retryAfter), for a door that answers it in its own shape. */
export function orgFrozen(): DomainError {
  return new DomainError(
    "ORG_FROZEN",
    "this org is being moved to another server for a few seconds",
    `Retry after ${FREEZE_RETRY_AFTER_SECONDS} s with the same arguments; your claims keep their leases.`,
    { retryAfter: FREEZE_RETRY_AFTER_SECONDS },
  );
}

/**
 * Whether the org is frozen, by a statement of its own: for the doors with no principal read
 * beforehand (Stripe's webhook), on no agent's path.
 */
export async function isOrgFrozen(db: Db, orgId: string): Promise<boolean> {
  const [row] = await db.select({ frozenAt: orgs.frozenAt }).from(orgs).where(eq(orgs.id, orgId));
  return Boolean(row?.frozenAt);
}

/** The principal's flag, selected beside what each loader already reads of the org's row. */
export const orgFrozenColumn = sql<boolean>`${orgs.frozenAt} is not null`;

/** SQL true when the org named by `orgIdColumn` is not frozen: a sweep's or a runner's pick leaves frozen orgs out with it. */
export const orgNotFrozen = (orgIdColumn: SQL | AnyColumn) => sql`not exists (select 1 from orgs f where f.id = ${orgIdColumn} and f.frozen_at is not null)`;

/** Sets or clears the org's freeze on this stack's database; returns when it did. */
export async function setOrgFrozen(db: Db, orgId: string, frozen: boolean): Promise<{ orgId: string; frozen: boolean; frozenAt: string | null; settlesMs: number }> {
  const [row] = await db
    .update(orgs)
    .set({ frozenAt: frozen ? new Date() : null })
    .where(eq(orgs.id, orgId))
    .returning({ frozenAt: orgs.frozenAt });
  if (!row) throw notFound(`org ${orgId}`, "Pass the org's id (orgId), as the other admin commands take it.");
  return { orgId, frozen, frozenAt: row.frozenAt?.toISOString() ?? null, settlesMs: frozen ? FREEZE_SETTLES_MS : KEY_CACHE_MS };
}
