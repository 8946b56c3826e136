import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

/**
 * The tests run `retasc` as npm installed it: cli/dist, which `prepare` builds on install.
 * A source edited since is built first, so no test runs a stale CLI.
 */
export default function setup(): void {
  const cli = path.resolve(import.meta.dirname, "..");
  const entry = path.join(cli, "dist/bin.js");
  const builtAt = fs.existsSync(entry) ? fs.statSync(entry).mtimeMs : 0;
  const sources = [
    path.join(cli, "package.json"),
    path.join(cli, "tsconfig.json"),
    ...fs.readdirSync(path.join(cli, "src"), { recursive: true, encoding: "utf8" }).map((file) => path.join(cli, "src", file)),
  ];
  if (sources.some((file) => fs.statSync(file).mtimeMs > builtAt)) {
    execFileSync("npm", ["run", "build"], { cwd: cli, stdio: "inherit" });
  }
}
