import { defineConfig } from "vitest/config";
import base from "../../vitest.config.ts";

// scripts/mutants.mjs's Stryker runs: the suites one mutant needs (MUTANT_TESTS, comma-separated;
// MUTANT_TEST_NAMES a test-name filter) under the project's test settings, without the CLI's
// build step (no mutant is in the CLI, and the sandbox shares node_modules with the checkout).
export default defineConfig({
  test: {
    ...base.test,
    include: (process.env.MUTANT_TESTS ?? "").split(",").filter(Boolean),
    ...(process.env.MUTANT_TEST_NAMES ? { testNamePattern: process.env.MUTANT_TEST_NAMES } : {}),
    globalSetup: ["server/testing/global-setup.ts"],
    reporters: ["dot"],
  },
});
