#!/usr/bin/env node
// Fails when the Drizzle schema and the committed migrations disagree: drizzle-kit generates
// into a scratch copy of db/migrations, and any file it writes there is a migration nobody
// committed. `node scripts/check-migrations.mjs [schema]` (default db/schema/index.ts).
import { spawnSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "..");
const schema = process.argv[2] ?? "db/schema/index.ts";
const committed = path.join(root, "db/migrations");
// Inside the tree: drizzle-kit resolves --out relative to the working directory.
const scratch = path.join("node_modules/.cache/check-migrations", crypto.randomBytes(4).toString("hex"));

const files = (dir) => fs.readdirSync(dir, { recursive: true }).map(String).sort();
try {
  fs.cpSync(committed, path.join(root, scratch), { recursive: true });
  const result = spawnSync(
    "npx",
    ["drizzle-kit", "generate", "--dialect=postgresql", `--schema=${schema}`, `--out=${scratch}`],
    { cwd: root, encoding: "utf8" },
  );
  if (result.status !== 0) {
    process.stderr.write(result.stdout + result.stderr + "\n✗ drizzle-kit generate failed\n");
    process.exit(1);
  }
  const before = files(committed);
  const after = files(path.join(root, scratch));
  const extra = after.filter((f) => !before.includes(f));
  if (extra.length > 0) {
    process.stderr.write(
      `✗ the Drizzle schema (${schema}) differs from db/migrations: generating would add ${extra.join(", ")}\n` +
        "  Run `npm run db:generate` and commit the new migration.\n",
    );
    process.exit(1);
  }
  process.stdout.write("✓ the Drizzle schema matches the committed migrations\n");
} finally {
  fs.rmSync(path.join(root, scratch), { recursive: true, force: true });
}
