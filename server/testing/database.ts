import { afterAll, beforeAll } from "vitest";
import { createTestDatabase, servicesFor, type TestDatabase } from "./db.ts";
import type { Services } from "../context.ts";

export interface FileDatabase {
  readonly tdb: TestDatabase;
  readonly services: Services;
}

/**
 * The test file's own database and Services: created before its tests run and dropped after.
 * Read the fields inside tests and hooks only; they are set once beforeAll has run.
 */
export function useTestServices(options: Parameters<typeof servicesFor>[1] = {}): FileDatabase {
  const state = {} as { tdb: TestDatabase; services: Services };
  beforeAll(async () => {
    state.tdb = await createTestDatabase();
    state.services = servicesFor(state.tdb.database, options);
  });
  afterAll(() => state.tdb?.close());
  return state;
}
