import { activity } from "../../db/schema/index.ts";
import type { Db } from "../../db/client.ts";
import type { Principal } from "../context.ts";
import type { OrgCipher } from "../crypto/index.ts";

/**
 * Appends to the activity log: who (human principal, key, runtime), what, plaintext facts
 * (lease and status metadata the issues and leases tables hold in plaintext anyway: fence,
 * statuses, expiry) and detail, the content (notes, reasons, ids), encrypted under the org's
 * key. Call inside the transaction of the change it records.
 */
export async function recordActivity(
  scope: { tx: Db; ctx: { principal: Principal }; cipher: OrgCipher; now: Date },
  entry: { issueId?: string | null; kind: string; facts?: Record<string, unknown>; detail?: Record<string, unknown> },
  principal: Principal = scope.ctx.principal,
): Promise<void> {
  await scope.tx.insert(activity).values({
    orgId: principal.orgId,
    issueId: entry.issueId ?? null,
    kind: entry.kind,
    actorId: principal.userId,
    keyId: principal.keyId,
    runtime: principal.runtime,
    facts: entry.facts ?? null,
    detailEnc: entry.detail ? scope.cipher.encrypt(JSON.stringify(entry.detail)) : null,
    createdAt: scope.now,
  });
}

/** An entry's facts and decrypted detail as one object (empty when it has neither). */
export function activityDetail(cipher: OrgCipher, entry: { detailEnc: string | null; facts: unknown }): Record<string, unknown> {
  const content = cipher.decrypt(entry.detailEnc);
  return { ...((entry.facts as Record<string, unknown> | null) ?? {}), ...(content ? (JSON.parse(content) as Record<string, unknown>) : {}) };
}
