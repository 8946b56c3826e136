import crypto from "node:crypto";
import { sql } from "drizzle-orm";
import type { Database } from "../../db/client.ts";
import { createTestDatabase, servicesFor, testConfig, testDriver, type TestDatabase } from "../../server/testing/db.ts";
import type { Ctx, Services } from "../../server/context.ts";
import { withPrincipal } from "../../server/with-principal.ts";
import { Keyring } from "../../server/crypto/index.ts";
import { seedOrg, type SeededOrg } from "../../server/testing/fixtures.ts";

/**
 * A benchmark's own PostgreSQL database with one or more pools ("app instances") that
 * share one keyring, an org, and as many agent keys as it asks for.
 */
export interface BenchDatabase {
  tdb: TestDatabase;
  url: string;
  /** One Services per pool. */
  pools: Services[];
  org: SeededOrg;
  /** The keyring's master key, for a process of the product started on this database (`RETASC_MASTER_KEY`, base64). */
  masterKey: string;
  close(): Promise<void>;
}

export async function openBenchDatabase(options: { pools: number; connectionsPerPool: number; prefix: string }): Promise<BenchDatabase> {
  if (testDriver !== "postgres") throw new Error("the benchmarks run on PostgreSQL: set TEST_DATABASE_URL or DATABASE_URL");
  const tdb = await createTestDatabase({ max: options.connectionsPerPool });
  const databases: Database[] = [tdb.database];
  for (let i = 1; i < options.pools; i++) databases.push(await tdb.openAnother(options.connectionsPerPool));
  const masterKey = crypto.randomBytes(32);
  const keyring = new Keyring(masterKey);
  const config = testConfig();
  const pools = databases.map((database) => servicesFor(database, { keyring, config }));
  const org = await seedOrg(pools[0]!, { prefix: options.prefix, name: "Bench" });
  // Open every connection now so no measurement pays for a connect.
  await Promise.all(
    pools.flatMap((services) => Array.from({ length: options.connectionsPerPool }, () => services.db.execute(sql`select pg_sleep(0.01)`))),
  );
  return { tdb, url: tdb.url!, pools, org, masterKey: masterKey.toString("base64"), close: () => tdb.close() };
}

const HUMANS = ["alice", "bob", "carol"] as const;

/** `count` agents, each with its own key (round robin over the org's three people), spread over the pools. */
export async function makeAgents(bench: BenchDatabase, count: number): Promise<Ctx[]> {
  const agents: Ctx[] = [];
  for (let i = 0; i < count; i++) {
    const { principal } = await bench.org.agentFor(HUMANS[i % HUMANS.length]!, `bench-agent-${i}`);
    agents.push(withPrincipal(bench.pools[i % bench.pools.length]!, principal));
  }
  return agents;
}
