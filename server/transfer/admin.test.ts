import fs from "node:fs";
import path from "node:path";
import { afterAll, expect, it } from "vitest";
import { createTestDatabase, testDriver, type TestDatabase } from "../testing/db.ts";
import { runEntry, migratedDataDir } from "../testing/app-process.ts";
import { removeTemps, tempDir } from "../testing/temp-dirs.ts";

/**
 * `npm run admin -- export` and `import` as an operator runs them, each its own process: the
 * export to standard output, imported back as a new org; a bad format refused with exit 1.
 */
let database: TestDatabase | null = null;
afterAll(async () => {
  await database?.close();
  removeTemps();
});

it("exports an org to stdout and imports it back as a new org", async () => {
  database = testDriver === "postgres" ? await createTestDatabase({ max: 1 }) : null;
  const env = database ? { DATABASE_URL: database.url!, RETASC_MASTER_KEY: Buffer.alloc(32, 7).toString("base64") } : { RETASC_DATA_DIR: migratedDataDir() };
  const admin = (args: string[]) => {
    const result = runEntry("server/admin/main.ts", args, env);
    expect(result.status, result.stderr).toBe(0);
    return result.stdout;
  };
  const { orgId } = JSON.parse(admin(["bootstrap", "--org", "Acme", "--project", "Web", "--prefix", "WEB", "--email", "ops@example.com", "--json"]));
  const exported = admin(["export", "--org", orgId, "--format", "json"]);
  const doc = JSON.parse(exported);
  expect(doc).toMatchObject({ format: "retasc-export", org: { id: orgId, name: "Acme" }, projects: [{ prefix: "WEB" }] });
  expect(doc.agents).toEqual([expect.objectContaining({ runtime: "admin" })]);

  const file = path.join(tempDir("retasc-admin-export-"), "acme.json");
  fs.writeFileSync(file, exported);
  const imported = JSON.parse(admin(["import", "--file", file, "--org-name", "Acme restored", "--json"]));
  expect(imported).toMatchObject({ orgId: expect.any(String), people: 1, projects: 1, agents: 1 });
  // The round trip itself is server/transfer/round-trip.test.ts; a refusal exits 1 with its reason.
  const refused = runEntry("server/admin/main.ts", ["export", "--org", imported.orgId, "--format", "xml"], env);
  expect(refused.status).toBe(1);
  expect(refused.stderr).toContain("format is json or csv");
});
