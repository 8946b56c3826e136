import { activity } from "../../db/schema/index.ts";
import type { Db } from "../../db/client.ts";
import type { Principal } from "../context.ts";
import type { OrgCipher } from "../crypto/index.ts";

/**
 * Appends to the activity log: who (human principal, key, runtime), what, and detail
 * encrypted under the org's key. Call inside the transaction of the change it records.
 */
export async function recordActivity(
  scope: { tx: Db; ctx: { principal: Principal }; cipher: OrgCipher; now: Date },
  entry: { issueId?: string | null; kind: string; detail?: Record<string, unknown> },
  principal: Principal = scope.ctx.principal,
): Promise<void> {
  await scope.tx.insert(activity).values({
    orgId: principal.orgId,
    issueId: entry.issueId ?? null,
    kind: entry.kind,
    actorId: principal.userId,
    keyId: principal.keyId,
    runtime: principal.runtime,
    detailEnc: entry.detail ? scope.cipher.encrypt(JSON.stringify(entry.detail)) : null,
    createdAt: scope.now,
  });
}
