import { defineConfig } from "vitest/config";
import LongestFirst from "./test/longest-first.mjs";

// Browser and CLI end-to-end tests (e2e/): the built app as a process, Chromium, the retasc CLI.
export default defineConfig({
  test: {
    include: ["e2e/**/*.test.ts"],
    testTimeout: 180_000,
    hookTimeout: 180_000,
    globalSetup: ["server/testing/global-setup.ts", "cli/test/global-setup.ts"],
    pool: "forks",
    // Three workers on two CPUs: the files wait on their pages, apps and CLI runs (decision 116).
    maxWorkers: 3,
    reporters: ["default"],
    // The longest files first, by their recorded seconds (decision 113).
    sequence: { sequencer: LongestFirst },
  },
});
