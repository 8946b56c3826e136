import postgres from "postgres";
import { waitFor } from "./wait.ts";

/**
 * pg_stat_database's deadlock count, read once the backends that could have deadlocked have
 * reported. A backend sends its counts at most once a second and, idle, may keep them for ten
 * (PostgreSQL's PGSTAT_IDLE_INTERVAL), so no fixed wait is sure to see them; a backend that exits
 * sends them first, before it leaves pg_stat_activity. So a test runs its statements on a pool
 * named here, and reads the count after closing it, once its backends are gone.
 */
let pools = 0;

/** A pool whose backends deadlocksOnceClosed can wait out (each connection carries the pool's application_name). */
export function countedPool(url: string, max: number): postgres.Sql {
  return postgres(url, { max, onnotice: () => {}, connection: { application_name: `retasc-counted-${process.pid}-${++pools}` } });
}

/** The database's deadlock count as reported so far. */
export const deadlocks = async (sql: postgres.Sql) =>
  (await sql`select deadlocks::int as n from pg_stat_database where datname = current_database()`)[0]!.n as number;

/** Ends `pool` and returns the database's deadlock count once its backends have exited, theirs included. */
export async function deadlocksOnceClosed(pool: postgres.Sql, url: string): Promise<number> {
  const name = pool.options.connection.application_name;
  await pool.end();
  const reader = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await waitFor(
      async () => (await reader`select count(*)::int as n from pg_stat_activity where application_name = ${name!}`)[0]!.n === 0,
      10_000,
      `the backends of ${name} to exit`,
    );
    return await deadlocks(reader);
  } finally {
    await reader.end();
  }
}

/**
 * The database's deadlock count once every client backend but `pool`'s own (a countedPool) has
 * exited: the statements ran in processes the test has stopped (app instances), not on a pool of its own.
 */
export async function deadlocksOnceOthersExited(pool: postgres.Sql): Promise<number> {
  const name = pool.options.connection.application_name;
  await waitFor(
    async () =>
      (await pool`select count(*)::int as n from pg_stat_activity where datname = current_database() and backend_type = 'client backend' and application_name <> ${name!}`)[0]!.n === 0,
    30_000,
    "the other backends to exit",
  );
  return deadlocks(pool);
}
