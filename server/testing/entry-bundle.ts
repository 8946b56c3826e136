import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { makeOnce } from "./once.ts";

/**
 * The node arguments that start one of this repo's TypeScript entries as a test's process: its
 * bundle (scripts/bundle-entries.mjs), made once per test run beside the app's build, not
 * `--import tsx`, which took twice the CPU to boot (decision 082). A newcomer's `tsx main.ts` is
 * still what server/boot.test.ts runs (runEntry).
 */
const root = path.resolve(import.meta.dirname, "../..");

/** The entries tests start as processes; all are bundled together on the first need of one. */
const ENTRIES = ["main.ts", "workers/main.ts", "workers/testing/worker-process.ts", "swarm/agent.ts"] as const;
export type Entry = (typeof ENTRIES)[number];

/** Beside the app's build, not in it: the app's build empties its directory first. */
export function bundleDir(): string {
  return `${process.env.RETASC_TEST_BUILD_DIR ?? path.join(root, "node_modules/.cache/retasc-test-build/adhoc")}.entries`;
}

/** Removes a test run's build and the entries' bundles beside it. */
export function removeTestBuild(buildDir: string): void {
  fs.rmSync(buildDir, { recursive: true, force: true });
  fs.rmSync(`${buildDir}.entries`, { recursive: true, force: true });
}

const bundleOf = (dir: string, entry: Entry) => path.join(dir, `${entry.replace(/\.ts$/, "").replaceAll("/", "-")}.mjs`);

export function entryArgs(entry: Entry): string[] {
  const dir = bundleDir();
  makeOnce(`${dir}.lock`, () => ENTRIES.every((e) => fs.existsSync(bundleOf(dir, e))), () => {
    const pairs = ENTRIES.map((e) => `${e}=${bundleOf(dir, e)}`);
    const result = spawnSync(process.execPath, [path.join(root, "scripts/bundle-entries.mjs"), ...pairs], { cwd: root, encoding: "utf8" });
    if (result.status !== 0) throw new Error(`bundling the test entries failed:\n${result.stdout}\n${result.stderr}`);
  });
  return [bundleOf(dir, entry)];
}
