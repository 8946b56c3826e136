import { execFileSync } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

/**
 * The tests run `retasc` as npm links it into node_modules/.bin: cli/dist, built here from the
 * sources (and by `prepack` when the tarball is made). A source edited since is built first, so
 * no test runs a stale CLI. Test runs share the
 * tree, so the build goes to a directory of its own and each file is renamed into dist/:
 * a CLI another run is spawning meanwhile never reads a half-written file.
 */
export default function setup(): void {
  const cli = path.resolve(import.meta.dirname, "..");
  const dist = path.join(cli, "dist");
  const entry = path.join(dist, "bin.js");
  const builtAt = fs.existsSync(entry) ? fs.statSync(entry).mtimeMs : 0;
  const sources = [
    path.join(cli, "package.json"),
    path.join(cli, "tsconfig.json"),
    ...fs.readdirSync(path.join(cli, "src"), { recursive: true, encoding: "utf8" }).map((file) => path.join(cli, "src", file)),
  ];
  linkBin(cli);
  if (!sources.some((file) => fs.statSync(file).mtimeMs > builtAt)) return;
  fs.mkdirSync(dist, { recursive: true });
  const staging = fs.mkdtempSync(path.join(dist, ".build-"));
  try {
    const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
    execFileSync(process.execPath, [tsc, "-p", cli, "--outDir", staging], { stdio: "inherit" });
    fs.chmodSync(path.join(staging, "bin.js"), 0o755);
    // bin.js last: its time is the one the check above compares.
    const files = fs.readdirSync(staging, { recursive: true, encoding: "utf8" }).filter((file) => file.endsWith(".js"));
    for (const file of [...files.filter((f) => f !== "bin.js"), "bin.js"]) {
      fs.mkdirSync(path.dirname(path.join(dist, file)), { recursive: true });
      fs.renameSync(path.join(staging, file), path.join(dist, file));
    }
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
  }
}

/**
 * node_modules/.bin/retasc, as npm links the workspace's bin: `npm ci` in a fresh clone links
 * none, because cli/dist is built here, after the install (`prepack` builds it for a tarball).
 */
function linkBin(cli: string): void {
  const link = path.join(cli, "..", "node_modules", ".bin", "retasc");
  if (fs.existsSync(link)) return;
  fs.mkdirSync(path.dirname(link), { recursive: true });
  fs.rmSync(link, { force: true });
  fs.symlinkSync(path.join("..", "@retasc", "cli", "dist", "bin.js"), link);
}
