import { eq } from "drizzle-orm";
import type { Db } from "../../db/client.ts";
import { leases } from "../../db/schema/index.ts";
import { sha256 } from "../crypto/index.ts";
import type { IssueRow } from "../issues/types.ts";
import { isLeaseLive } from "../issues/fencing.ts";

/**
 * How a live lease is held and kept (decision 036), for people watching the fleet: the MCP session
 * holding it as a short label (a hash, never the id itself: the id with the key is a holder's
 * credential) and what renewed it last, its session's own calls or a heartbeat.
 */
export const sessionLabel = (sessionId: string | null): string | null => (sessionId ? sha256(sessionId).slice(0, 8) : null);

export type RenewedBy = "calls" | "heartbeat" | null;

/** The live lease's session and last renewal, or null when nobody holds the issue. */
export async function leaseSessionOf(db: Db, row: IssueRow, now: Date) {
  if (!isLeaseLive(row, now)) return null;
  const [lease] = await db
    .select({ sessionId: leases.sessionId, renewedBy: leases.renewedBy, renewedAt: leases.heartbeatAt })
    .from(leases)
    .where(eq(leases.id, row.leaseId!));
  if (!lease) return null;
  return { session: sessionLabel(lease.sessionId), renewedBy: lease.renewedBy as RenewedBy, renewedAt: lease.renewedAt.toISOString() };
}
