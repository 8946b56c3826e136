import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { expect, it } from "vitest";

const script = path.resolve(import.meta.dirname, "check-migrations.mjs");
const check = (...args: string[]) => spawnSync(process.execPath, [script, ...args], { encoding: "utf8" });

it("fails when the schema has a table no migration creates", () => {
  const dir = path.resolve("node_modules/.cache/check-migrations-fixture");
  fs.mkdirSync(dir, { recursive: true });
  const schema = path.join(dir, "schema.ts");
  fs.writeFileSync(
    schema,
    'import { pgTable, text } from "drizzle-orm/pg-core";\n' +
      'export * from "../../../db/schema/index.ts";\n' +
      'export const drift = pgTable("drift", { id: text("id").primaryKey() });\n',
  );
  const committed = fs.readdirSync("db/migrations", { recursive: true }).map(String).sort();
  try {
    const result = check(path.relative(process.cwd(), schema));
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/differs from db\/migrations: generating would add 0\d+_\w+\.sql/);
    // The check generates into a scratch copy, never into the committed folder.
    expect(fs.readdirSync("db/migrations", { recursive: true }).map(String).sort()).toEqual(committed);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
