import fs from "node:fs";
import path from "node:path";

/**
 * Where a test run's build lives: RETASC_TEST_BUILD_DIR (global-setup.ts, `npm test`, the swarm and
 * the benches each give their run one), else a shared ad hoc one. The app's build goes in it
 * (app-process.ts); the entries' bundles beside it (entry-bundle.ts; app-process.ts keeps its migrated embedded cluster there too), since the app's build empties
 * its own directory first.
 */
export const testBuildPath = (): string =>
  process.env.RETASC_TEST_BUILD_DIR ?? path.resolve(import.meta.dirname, "../../node_modules/.cache/retasc-test-build/adhoc");

/** The entries' bundles of the run whose build is `buildDir` (scripts/test.mjs removes the same). */
export const entriesBeside = (buildDir: string): string => `${buildDir}.entries`;

/** Removes a test run's build and the entries' bundles beside it. */
export function removeTestBuild(buildDir: string): void {
  fs.rmSync(buildDir, { recursive: true, force: true });
  fs.rmSync(entriesBeside(buildDir), { recursive: true, force: true });
}
