import crypto from "node:crypto";
import path from "node:path";
import { removeTestBuild } from "./build-dir.ts";

/**
 * Gives this test run its own build directory (built lazily by app-process.ts on first
 * use), so concurrent runs never serve each other's half-written builds. `npm test` hands every
 * vitest run it starts one directory of its own (RETASC_TEST_BUILD_DIR), so the app is built once
 * for all of them; that directory is then the caller's to remove.
 */
export default function setup() {
  if (process.env.RETASC_TEST_BUILD_DIR) return;
  const dir = path.resolve("node_modules/.cache/retasc-test-build", crypto.randomBytes(4).toString("hex"));
  process.env.RETASC_TEST_BUILD_DIR = dir;
  return () => removeTestBuild(dir);
}
