import { sql } from "drizzle-orm";
import { z } from "zod";
import { query } from "../../db/client.ts";
import type { Services } from "../context.ts";
import { setOrgFrozen } from "../orgs/freeze.ts";

export const orgFreezeInput = z.object({ org: z.string().trim().min(1, "--org is required") });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * `org-freeze`: every write of the org answers ORG_FROZEN from now on, whatever the door, and
 * its jobs wait (decisions 107 and 110). It returns once no instance can still start one (its key cache and a call in
 * flight), with this database's WAL position then: the target of a move has every write of the
 * org once its subscription reaches `lsn`.
 */
export async function orgFreeze(services: Services, input: z.infer<typeof orgFreezeInput>) {
  const frozen = await setOrgFrozen(services.db, input.org, true);
  await sleep(frozen.settlesMs);
  const [{ lsn }] = (await query<{ lsn: string }>(services.db, sql`select pg_current_wal_lsn()::text as lsn`)) as [{ lsn: string }];
  return { orgId: frozen.orgId, frozen: true, frozenAt: frozen.frozenAt, lsn };
}

/** `org-unfreeze`: run on the stack the org moved to (or on the source, to call a move off). */
export async function orgUnfreeze(services: Services, input: z.infer<typeof orgFreezeInput>) {
  const { orgId, settlesMs } = await setOrgFrozen(services.db, input.org, false);
  return { orgId, frozen: false, writableWithinMs: settlesMs };
}
