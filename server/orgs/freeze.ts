import { eq } from "drizzle-orm";
import type { Db } from "../../db/client.ts";
import { orgs } from "../../db/schema/index.ts";
import type { Principal } from "../context.ts";
import { DomainError, notFound } from "../errors.ts";
import { KEY_CACHE_MS } from "./key-cache.ts";

/**
 * An org frozen for a move to another stack (decision 107): its agents' claims and issue writes
 * answer ORG_FROZEN, a 503 with Retry-After, while the target catches up; leases are untouched,
 * so they keep their expiry and their holders finish on the target with the same claim token.
 *
 * The freeze is read with the key (key-auth.ts's keyPlaceColumns), so checking it adds no
 * statement to a claim or a finish; an instance that cached the key (KEY_CACHE_MS) learns of it
 * that much later, which is why the operator waits FREEZE_SETTLES_MS before reading the LSN.
 */
export const FREEZE_RETRY_AFTER_SECONDS = 2;
/** From the freeze's commit until no instance can start a write of the org: the key cache, plus a call in flight. */
export const FREEZE_SETTLES_MS = KEY_CACHE_MS + 1_000;

/** Throws ORG_FROZEN when the principal's org is frozen; called first by claims and issue writes. */
export function refuseWhileFrozen(principal: Principal): void {
  if (!principal.orgFrozen) return;
  throw new DomainError(
    "ORG_FROZEN",
    "this org is being moved to another server for a few seconds",
    `Retry after ${FREEZE_RETRY_AFTER_SECONDS} s with the same arguments; your claims keep their leases.`,
    { retryAfter: FREEZE_RETRY_AFTER_SECONDS },
  );
}

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
