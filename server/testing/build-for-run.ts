/**
 * `node --import tsx server/testing/build-for-run.ts`: makes what a test run's processes start
 * (the app's build with the CLI tarball it serves, the entries' bundles, and the migrated cluster
 * embedded apps copy) in the run's build
 * directory (RETASC_TEST_BUILD_DIR) before its vitest runs begin, so that `npm test` does it beside
 * the type check instead of inside the first file that needs it. The runs then find it made.
 */
import { migratedClusterSeed, testBuildDir } from "./app-process.ts";
import { entryArgs } from "./entry-bundle.ts";

testBuildDir();
entryArgs("main.ts");
migratedClusterSeed();
