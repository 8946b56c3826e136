import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openPglite } from "./client.ts";
import { lockDataDir } from "./data-dir.ts";

const made: string[] = [];
afterAll(() => {
  for (const dir of made) fs.rmSync(dir, { recursive: true, force: true });
});

function scratch(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "retasc-perm-"));
  made.push(dir);
  return dir;
}

/** Every folder and file under `dir` (itself included) whose mode lets anyone but the owner in. */
function opened(dir: string): string[] {
  const found: string[] = [];
  const walk = (file: string) => {
    const stat = fs.lstatSync(file);
    if (stat.isSymbolicLink()) return;
    if (stat.mode & 0o077) found.push(`${path.relative(dir, file) || "."} ${(stat.mode & 0o777).toString(8)}`);
    if (stat.isDirectory()) for (const name of fs.readdirSync(file)) walk(path.join(file, name));
  };
  walk(dir);
  return found;
}

const mode = (file: string) => fs.statSync(file).mode & 0o777;

describe("the embedded data directory", () => {
  it("is created readable by its owner only", () => {
    const dir = path.join(scratch(), "nested", ".retasc");
    const unlock = lockDataDir(dir);
    unlock();
    expect(mode(dir)).toBe(0o700);
    expect(mode(path.dirname(dir))).toBe(0o700);
  });

  it("is made private again when an existing one is loose: folders 0700, files 0600", () => {
    const dir = scratch();
    fs.chmodSync(dir, 0o755);
    fs.mkdirSync(path.join(dir, "pgdata/pg_wal"), { recursive: true, mode: 0o777 });
    fs.chmodSync(path.join(dir, "pgdata"), 0o755);
    fs.chmodSync(path.join(dir, "pgdata/pg_wal"), 0o777);
    fs.writeFileSync(path.join(dir, "pgdata/pg_wal/000000010000000000000001"), "session tokens", { mode: 0o666 });
    fs.chmodSync(path.join(dir, "pgdata/pg_wal/000000010000000000000001"), 0o666);
    fs.writeFileSync(path.join(dir, "master.key"), "k", { mode: 0o644 });
    fs.chmodSync(path.join(dir, "master.key"), 0o644);
    // A link out of the folder is not followed: its target keeps its mode.
    const outside = path.join(scratch(), "elsewhere");
    fs.writeFileSync(outside, "not ours");
    fs.chmodSync(outside, 0o644);
    fs.symlinkSync(outside, path.join(dir, "link"));

    expect(opened(dir).length).toBe(5);
    lockDataDir(dir)();
    expect(opened(dir)).toEqual([]);
    expect(mode(path.join(dir, "pgdata/pg_wal"))).toBe(0o700);
    expect(mode(path.join(dir, "pgdata/pg_wal/000000010000000000000001"))).toBe(0o600);
    expect(mode(outside)).toBe(0o644);
  });

  it("holds PGlite's files private from the first start, and after writes and a restart", async () => {
    const dir = scratch();
    const pgdata = path.join(dir, "pgdata");
    const unlock = lockDataDir(dir);
    try {
      let database = await openPglite(pgdata);
      expect(opened(dir)).toEqual([]);
      await database.db.execute("create table t (x text)");
      await database.db.execute("insert into t select repeat('x', 1000) from generate_series(1, 1000)");
      await database.db.execute("checkpoint");
      expect(opened(dir)).toEqual([]);
      await database.close();
      database = await openPglite(pgdata);
      expect(opened(dir)).toEqual([]);
      await database.close();
    } finally {
      unlock();
    }
  });
});
