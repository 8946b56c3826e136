import { and, desc, eq, isNotNull } from "drizzle-orm";
import { agentKeys, keyRiders, leases } from "../../db/schema/index.ts";
import type { Ctx } from "../context.ts";
import type { WriteScope } from "../issues/store.ts";
import type { IssueRow } from "../issues/types.ts";
import { newId } from "../orgs/index.ts";
import { forgetCachedKeys } from "../orgs/key-cache.ts";

/**
 * Leaves a line for the key whose lease finished the issue last, told on its next MCP call
 * (takeRiders). Nothing when no key finished it (a person's finish with no key).
 */
export async function leaveRider(scope: WriteScope, row: IssueRow, text: string): Promise<void> {
  const { tx, now, cipher } = scope;
  const [finisher] = await tx
    .select({ keyId: leases.keyId })
    .from(leases)
    .where(and(eq(leases.issueId, row.id), eq(leases.endReason, "finished"), isNotNull(leases.keyId)))
    .orderBy(desc(leases.fence))
    .limit(1);
  if (!finisher?.keyId) return;
  await tx.insert(keyRiders).values({ id: newId(), orgId: row.orgId, keyId: finisher.keyId, textEnc: cipher.encrypt(text), createdAt: now });
  await tx.update(agentKeys).set({ riderWaiting: true }).where(eq(agentKeys.id, finisher.keyId));
  // The flag rides in the key's principal: this process reads it again on the key's next call.
  forgetCachedKeys();
}

/**
 * The lines waiting for the calling key, taken once (deleted as they are read). The flag is
 * cleared first: a rider left meanwhile sets it again, so none is missed.
 */
export async function takeRiders(ctx: Ctx): Promise<string | null> {
  const keyId = ctx.principal.keyId;
  if (!keyId) return null;
  const cipher = await ctx.keyring.forOrg(ctx.db, ctx.principal.orgId);
  await ctx.db.update(agentKeys).set({ riderWaiting: false }).where(eq(agentKeys.id, keyId));
  forgetCachedKeys();
  const taken = await ctx.db.delete(keyRiders).where(eq(keyRiders.keyId, keyId)).returning({ textEnc: keyRiders.textEnc, createdAt: keyRiders.createdAt });
  if (taken.length === 0) return null;
  return taken
    .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime())
    .map((r) => cipher.decrypt(r.textEnc))
    .join(" ");
}
