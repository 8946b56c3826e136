/**
 * Points server/testing/db.ts at PostgreSQL (TEST_DATABASE_URL, else DATABASE_URL, else the local
 * default): the benchmarks never fall back to PGlite. Call before server/testing/db.ts is imported,
 * which reads these once.
 */
export function useBenchPostgres(): void {
  if (!process.env.TEST_DATABASE_URL && !process.env.DATABASE_URL) process.env.TEST_DATABASE_URL = "postgres://root@127.0.0.1:5432/test";
  delete process.env.RETASC_TEST_DRIVER;
}
