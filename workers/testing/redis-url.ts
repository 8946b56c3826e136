import { afterAll, beforeAll } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../server/testing/db.ts";
import { PrivateRedis, redisServerAvailable } from "../../server/testing/redis.ts";

/**
 * A Redis for tests that leave it running: the CI one (TEST_REDIS_URL) when set, else a private
 * one. Tests keep apart by a unique BullMQ prefix, never by flushing.
 */
export async function testRedis(): Promise<{ url: string; close(): Promise<void> }> {
  const shared = process.env.TEST_REDIS_URL;
  if (shared) return { url: shared, close: async () => {} };
  const redis = await PrivateRedis.start();
  return { url: redis.url, close: () => redis.close() };
}

export const redisTestsCanRun = Boolean(process.env.TEST_REDIS_URL) || redisServerAvailable;

export const uniquePrefix = () => `retasc-test-${Math.random().toString(36).slice(2, 10)}`;

/**
 * A test database and Redis for the enclosing describe block: opened before its tests, closed
 * after. Read the fields inside tests and hooks only; they are set once beforeAll has run.
 */
export function useDatabaseAndRedis(): { readonly tdb: TestDatabase; readonly redis: { url: string } } {
  const state = {} as { tdb: TestDatabase; redis: { url: string; close(): Promise<void> } };
  beforeAll(async () => {
    state.tdb = await createTestDatabase();
    state.redis = await testRedis();
  });
  afterAll(async () => {
    await state.redis?.close();
    await state.tdb?.close();
  });
  return state;
}
