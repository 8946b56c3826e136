import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";

/**
 * Gives this test run its own build directory (built lazily by app-process.ts on first
 * use), so concurrent runs never serve each other's half-written builds.
 */
export default function setup() {
  const dir = path.resolve("node_modules/.cache/retasc-test-build", crypto.randomBytes(4).toString("hex"));
  process.env.RETASC_TEST_BUILD_DIR = dir;
  return () => fs.rmSync(dir, { recursive: true, force: true });
}
