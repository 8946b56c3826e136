import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { query } from "../db/client.ts";
import { activity } from "../db/schema/index.ts";
import { createLogger } from "../server/log.ts";
import { useTestServices } from "../server/testing/database.ts";
import { seedOrg } from "../server/testing/fixtures.ts";
import { retascSweeps, runSweepTick } from "./sweeps.ts";

/** The activity log's retention runs as a sweep of the job system, once per tick (decision 077). */
const env = useTestServices();

describe("sweep.activity-retention", () => {
  it("deletes the rows past the retention once per tick", async () => {
    const org = await seedOrg(env.services, { prefix: "SWP" });
    const old = new Date(Date.now() - 200 * 86_400_000);
    await env.services.db.insert(activity).values([1, 2, 3].map(() => ({ orgId: org.orgId, kind: "old", createdAt: old })));
    await env.services.db.insert(activity).values({ orgId: org.orgId, kind: "recent", createdAt: new Date() });
    const sweep = retascSweeps(env.services.config).find((s) => s.name === "sweep.activity-retention")!;
    expect(sweep.everyMs).toBe(600_000);
    const log = createLogger("silent");
    const tick = Date.now();
    const ran = await runSweepTick(env.services, log, sweep, tick);
    expect(ran).toEqual({ ran: true, result: { deleted: 3, batches: 1 } });
    expect(await query<{ kind: string }>(env.services.db, sql`select kind from activity`)).toEqual([{ kind: "recent" }]);
    expect(await runSweepTick(env.services, log, sweep, tick)).toEqual({ ran: false });
  });
});
