import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

/**
 * Runs `make` once for all test workers of a run: the first takes `lock` (a directory) and makes;
 * the others wait until `made()` says it is there.
 */
export function makeOnce(lock: string, made: () => boolean, make: () => void): void {
  if (made()) return;
  fs.mkdirSync(path.dirname(lock), { recursive: true });
  for (;;) {
    try {
      fs.mkdirSync(lock);
      break;
    } catch {
      // Another worker is making it: wait for it.
      if (made()) return;
      spawnSync("sleep", ["0.1"]);
    }
  }
  try {
    if (!made()) make();
  } finally {
    fs.rmSync(lock, { recursive: true, force: true });
  }
}
