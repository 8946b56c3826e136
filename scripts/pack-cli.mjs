#!/usr/bin/env node
// Packs the `retasc` CLI for the server to serve at /cli/latest (`npm run build` runs it; so do
// the tests' builds): cli/src bundled into one file with its dependencies (the MCP SDK), so the
// tarball installs with no registry at all — `npm install -g <origin>/cli/latest` needs only the
// server. Writes <buildDir>/cli/retasc-cli-<version>.tgz, the only file there.
// `node scripts/pack-cli.mjs [buildDir]` (default: RETASC_BUILD_DIR or build).
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { build } from "esbuild";

const root = path.resolve(import.meta.dirname, "..");
const buildDir = path.resolve(process.argv[2] ?? process.env.RETASC_BUILD_DIR ?? "build");
const manifest = JSON.parse(fs.readFileSync(path.join(root, "cli/package.json"), "utf8"));
const staging = fs.mkdtempSync(path.join(os.tmpdir(), "retasc-cli-pack-"));
try {
  await build({
    entryPoints: [path.join(root, "cli/src/bin.ts")],
    outfile: path.join(staging, "dist/bin.js"),
    bundle: true,
    minify: true,
    platform: "node",
    format: "esm",
    target: "node20",
    // The SDK's CommonJS dependencies call require(); an ES module has none of its own.
    banner: { js: 'import { createRequire as __retascRequire } from "node:module"; const require = __retascRequire(import.meta.url);' },
    logLevel: "warning",
  });
  fs.chmodSync(path.join(staging, "dist/bin.js"), 0o755);
  const { name, version, description, type, bin, engines } = manifest;
  fs.writeFileSync(path.join(staging, "package.json"), `${JSON.stringify({ name, version, description, type, bin, files: ["dist"], engines }, null, 2)}\n`);
  const out = path.join(buildDir, "cli");
  fs.rmSync(out, { recursive: true, force: true });
  fs.mkdirSync(out, { recursive: true });
  const file = execFileSync("npm", ["pack", "--silent", "--ignore-scripts", "--pack-destination", out], { cwd: staging, encoding: "utf8" }).trim();
  process.stdout.write(`packed the CLI ${version}: ${path.relative(root, path.join(out, file))} (${(fs.statSync(path.join(out, file)).size / 1024).toFixed(0)} KiB)\n`);
} finally {
  fs.rmSync(staging, { recursive: true, force: true });
}
