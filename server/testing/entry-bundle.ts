import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { entriesBeside, testBuildPath } from "./build-dir.ts";
import { makeOnce } from "./once.ts";

/**
 * The node arguments that start one of this repo's TypeScript entries as a test's process: its
 * bundle (scripts/bundle-entries.mjs), made once per test run beside the app's build (build-dir.ts), not
 * `--import tsx`, which took twice the CPU to boot (decision 082). A newcomer's `tsx main.ts` is
 * still what server/boot.test.ts runs (runEntry).
 */
const root = path.resolve(import.meta.dirname, "../..");

/** The entries tests start as processes; all are bundled together on the first need of one. */
const ENTRIES = ["main.ts", "workers/main.ts", "workers/testing/worker-process.ts", "swarm/agent.ts"] as const;
export type Entry = (typeof ENTRIES)[number];

const bundleOf = (dir: string, entry: Entry) => path.join(dir, `${entry.replace(/\.ts$/, "").replaceAll("/", "-")}.mjs`);

export function entryArgs(entry: Entry): string[] {
  const dir = entriesBeside(testBuildPath());
  makeOnce(`${dir}.lock`, () => ENTRIES.every((e) => fs.existsSync(bundleOf(dir, e))), () => {
    const pairs = ENTRIES.map((e) => `${e}=${bundleOf(dir, e)}`);
    const result = spawnSync(process.execPath, [path.join(root, "scripts/bundle-entries.mjs"), ...pairs], { cwd: root, encoding: "utf8" });
    if (result.status !== 0) throw new Error(`bundling the test entries failed:\n${result.stdout}\n${result.stderr}`);
  });
  return [bundleOf(dir, entry)];
}
