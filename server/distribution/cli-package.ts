import fs from "node:fs";
import path from "node:path";

/**
 * The CLI tarball this server hands out at /cli/latest: packed by scripts/pack-cli.mjs into
 * `<build>/cli/` with its dependencies bundled, so `npm install -g <origin>/cli/latest` needs
 * nothing but this server. Null when the build has none (a build made without the pack step).
 */
export interface CliPackage {
  version: string;
  /** `retasc-cli-<version>.tgz`: the versioned path under /cli/, immutable once served. */
  file: string;
  path: string;
}

const TARBALL = /^retasc-cli-(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)\.tgz$/;
const found = new Map<string, CliPackage | null>();

/** The packed CLI of a build directory (read once: a running server's build does not change). */
export function cliPackage(buildDir: string): CliPackage | null {
  const dir = path.resolve(buildDir, "cli");
  if (!found.has(dir)) {
    const files = fs.existsSync(dir) ? fs.readdirSync(dir) : [];
    const match = files.map((file) => TARBALL.exec(file)).find((m) => m !== null);
    found.set(dir, match ? { version: match[1]!, file: match[0], path: path.join(dir, match[0]) } : null);
  }
  return found.get(dir)!;
}
