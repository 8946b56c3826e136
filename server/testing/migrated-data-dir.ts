import { migrateDatabase, openPglite } from "../../db/client.ts";

// `node --import tsx server/testing/migrated-data-dir.ts DIR`: an embedded cluster in DIR with every migration applied.
const dir = process.argv[2];
if (!dir) throw new Error("usage: migrated-data-dir.ts DIR");
const database = await openPglite(dir);
try {
  await migrateDatabase(database);
} finally {
  await database.close();
}
