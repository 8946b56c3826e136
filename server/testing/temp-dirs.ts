import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const temps: string[] = [];

/** A temp directory removed by removeTemps() when the test file ends. */
export function tempDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  temps.push(dir);
  return dir;
}

export function removeTemps(): void {
  for (const dir of temps.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
}

/** A fresh git repository with one commit, in a parent of its own (claim worktrees go beside it). */
export function gitRepo(): string {
  const dir = path.join(tempDir("retasc-repos-"), "repo");
  fs.mkdirSync(dir);
  git(dir, "init", "-q", "-b", "main");
  git(dir, "commit", "-q", "--allow-empty", "-m", "init");
  return dir;
}

/** git in `cwd`, as a test's committer. */
export function git(cwd: string, ...args: string[]) {
  return spawnSync("git", ["-c", "user.email=t@example.com", "-c", "user.name=T", ...args], { cwd, encoding: "utf8" });
}
