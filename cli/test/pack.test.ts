import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { login, removeTemps, retasc, signUp, startServer, tempDir, type Server } from "./testing.ts";

/**
 * The CLI as a person installs it from a clone: `npm pack` in cli/, then the tarball
 * installed into an empty prefix, as `npm install -g` would on any machine with Node 20.
 * Nothing of the workspace is on the installed CLI's path.
 */
const cli = path.resolve(import.meta.dirname, "..");
const manifest = JSON.parse(fs.readFileSync(path.join(cli, "package.json"), "utf8")) as {
  version: string;
  dependencies: Record<string, string>;
};

let server: Server;
let bin: string;
let tarball: string;

beforeAll(async () => {
  const packed = tempDir("retasc-pack-");
  // dist/ is fresh (cli/test/global-setup.ts built it); pack it as it is.
  const name = execFileSync("npm", ["pack", "--ignore-scripts", "--silent", "--pack-destination", packed], { cwd: cli, encoding: "utf8" }).trim();
  tarball = path.join(packed, name);
  const prefix = tempDir("retasc-prefix-");
  // Runtime dependencies come from the registry as configured (its local cache first).
  const install = spawnSync("npm", ["install", "-g", "--prefix", prefix, "--prefer-offline", "--no-audit", "--no-fund", tarball], {
    cwd: prefix,
    encoding: "utf8",
    env: { ...process.env, npm_config_workspace: undefined, npm_config_workspaces: undefined },
  });
  expect(install.status, install.stderr).toBe(0);
  bin = path.join(prefix, "bin", "retasc");
  server = await startServer();
});
afterAll(async () => {
  await server?.close();
  removeTemps();
});

describe("the packed CLI", () => {
  it("is named retasc-cli-<version>.tgz and ships built JavaScript and its manifest only", () => {
    expect(path.basename(tarball)).toBe(`retasc-cli-${manifest.version}.tgz`);
    const files = execFileSync("tar", ["-tzf", tarball], { encoding: "utf8" }).trim().split("\n");
    expect(files).toContain("package/package.json");
    expect(files).toContain("package/dist/bin.js");
    expect(files.filter((f) => !f.startsWith("package/dist/") && f !== "package/package.json")).toEqual([]);
    expect(files.filter((f) => f.startsWith("package/dist/") && !f.endsWith(".js"))).toEqual([]);
    // Every bare import of the built code is a declared runtime dependency.
    const dist = path.join(cli, "dist");
    const imported = new Set<string>();
    for (const file of fs.readdirSync(dist, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".js") && !f.includes(".build-"))) {
      for (const [, spec] of fs.readFileSync(path.join(dist, file), "utf8").matchAll(/(?:from |import\()\s*"([^".][^"]*)"/g)) {
        if (spec!.startsWith("node:")) continue;
        imported.add(spec!.startsWith("@") ? spec!.split("/").slice(0, 2).join("/") : spec!.split("/")[0]!);
      }
    }
    expect([...imported].sort()).toEqual(Object.keys(manifest.dependencies).sort());
  });

  it("installs into an empty prefix and runs: --version, then login against a running server", async () => {
    const version = spawnSync(bin, ["--version"], { encoding: "utf8" });
    expect(version.status, version.stderr).toBe(0);
    expect(version.stdout.trim()).toBe(manifest.version);
    // The installed binary is the prefix's own copy, not a link into this clone.
    expect(fs.realpathSync(bin).startsWith(cli)).toBe(false);

    const ada = await signUp(server, "Ada");
    const signedIn = await login(server, ada, { bin });
    expect(signedIn.code, signedIn.stderr).toBe(0);
    expect(signedIn.stdout).toContain(`Signed in as Ada <${ada.email}>`);
    const who = await retasc(ada, ["whoami", "--json"], { bin });
    expect(who.code, who.stderr).toBe(0);
    expect(JSON.parse(who.stdout)).toMatchObject({ binding: null, session: { url: server.url, user: { email: ada.email } } });
  });
});
