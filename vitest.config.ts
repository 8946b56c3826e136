import { defineConfig } from "vitest/config";
import LongestFirst from "./test/longest-first.mjs";

// Kept apart from vite.config.ts so the React Router plugin is not loaded under tests.
export default defineConfig({
  test: {
    include: ["**/*.test.ts"],
    exclude: ["**/node_modules/**", "build/**", "e2e/**", ".retasc/**"],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    globalSetup: ["server/testing/global-setup.ts", "cli/test/global-setup.ts"],
    pool: "forks",
    maxWorkers: 2,
    // A worker's test files share its imported modules (decision 108): importing the server's
    // module graph afresh for each of some 200 files was a quarter of the suites' worker time.
    // Every test makes its own database, app process and Redis prefix, so no state rides along.
    isolate: false,
    reporters: ["default"],
    // The longest files first, by their recorded seconds (decision 113).
    sequence: { sequencer: LongestFirst },
  },
});
