import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { retasc as retascAsync, type CliResult } from "./testing.ts";

/** The installed `retasc` binary, without a server: help, refusals and their exit codes. */
const bin = path.resolve(import.meta.dirname, "../../node_modules/.bin/retasc");

function retasc(args: string[], options: { input?: string; env?: Record<string, string>; cwd?: string } = {}) {
  const retascDir = fs.mkdtempSync(path.join(os.tmpdir(), "retasc-cli-"));
  const env: Record<string, string | undefined> = { ...process.env, RETASC_DIR: retascDir, RETASC_DEPLOYMENT_URL: "http://127.0.0.1:9" };
  for (const name of ["RETASC_MCP_KEY", "NO_COLOR", "FORCE_COLOR"]) delete env[name];
  Object.assign(env, options.env);
  const result = spawnSync(bin, args, { encoding: "utf8", env, input: options.input, cwd: options.cwd ?? os.tmpdir() });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe("retasc", () => {
  it("has --help for every command, each offering --json", async () => {
    const overview = retasc(["--help"]);
    expect(overview.code).toBe(0);
    const names = [...overview.stdout.matchAll(/^ {2}([a-z-]+(?: [a-z-]+)?) {2,}/gm)].map((m) => m[1]!);
    expect(names).toEqual(expect.arrayContaining(["login", "logout", "whoami", "doctor", "config", "bind", "join", "init", "org create", "project create", "key mint", "key list", "key rotate", "key revoke", "members invite", "members list", "members revoke", "mcp install", "next", "claim", "done"]));
    // One process per command, six at a time.
    const helps: CliResult[] = [];
    for (let i = 0; i < names.length; i += 6) {
      helps.push(...(await Promise.all(names.slice(i, i + 6).map((name) =>
        retascAsync({ retascDir: fs.mkdtempSync(path.join(os.tmpdir(), "retasc-cli-")) }, [...name.split(" "), "--help"], {
          env: { RETASC_DEPLOYMENT_URL: "http://127.0.0.1:9" },
        })))));
    }
    names.forEach((name, index) => {
      expect(helps[index]!.code, name).toBe(0);
      expect(helps[index]!.stdout, name).toContain(`Usage: retasc ${name}`);
      expect(helps[index]!.stdout, name).toMatch(/^ {2}--json {2,}/m);
    });
  });

  it("reports errors as ✗ CODE: message with a hint, exit 1, nothing on stdout; a command line not understood exits 2", () => {
    const unknown = retasc(["bind", "--token", "x"]);
    expect(unknown).toMatchObject({ code: 2, stdout: "", stderr: "✗ INVALID_INPUT: unknown option --token for retasc bind\n  Run `retasc bind --help`.\n" });
    expect(retasc(["bind", "--url"])).toMatchObject({ code: 2, stderr: "✗ INVALID_INPUT: --url needs a value (--url <url>)\n  Run `retasc bind --help`.\n" });
    expect(retasc(["whoami", "--json=yes"])).toMatchObject({ code: 2, stderr: "✗ INVALID_INPUT: --json takes no value\n  Run `retasc whoami --help`.\n" });
    expect(retasc(["whoami", "extra"])).toMatchObject({ code: 2, stderr: "✗ INVALID_INPUT: retasc whoami takes no argument (got extra)\n  Run `retasc whoami --help`.\n" });
    expect(retasc(["frobnicate"])).toMatchObject({ code: 2, stdout: "" });
    const unbound = retasc(["claim", "42"]);
    expect(unbound.code).toBe(1);
    expect(unbound.stderr).toContain("✗ NOT_BOUND: this folder is not bound to a Retasc project");
    // Names an object inherits are not commands.
    expect(retasc(["constructor"])).toMatchObject({ code: 2, stdout: "", stderr: expect.stringMatching(/^✗ INVALID_INPUT: unknown command: constructor\n/) });
    const offline = retasc(["login"]);
    expect(offline.code).toBe(1);
    expect(offline.stderr).toMatch(/^✗ UNAVAILABLE: cannot reach http:\/\/127\.0\.0\.1:9/);
  });

  it("takes keys from stdin or the environment, never from a flag, and refuses user scope", () => {
    expect(retasc(["mcp", "install", "--key", "rtsc_x"]).stderr).toContain("unknown option --key for retasc mcp install");
    expect(retasc(["mcp", "install", "--scope", "user"], { input: "rtsc_abc" }).stderr).toContain("✗ INVALID_INPUT: scope user is refused");
    expect(retasc(["mcp", "install"], { input: "not-a-key" }).stderr).toContain("✗ INVALID_INPUT: that is not an agent key");
  });


  it("colours its marks on a terminal or under FORCE_COLOR, never under NO_COLOR", () => {
    expect(retasc(["claim", "42"], { env: { FORCE_COLOR: "1" } }).stderr).toMatch(/^\u001b\[31m✗\u001b\[39m NOT_BOUND/);
    expect(retasc(["claim", "42"], { env: { FORCE_COLOR: "1", NO_COLOR: "1" } }).stderr).toMatch(/^✗ NOT_BOUND/);
    expect(retasc(["claim", "42"]).stderr).toMatch(/^✗ NOT_BOUND/);
  });

  it("refuses a malformed invite or issue before calling anyone", () => {
    expect(retasc(["join", "hello"]).stderr).toContain("✗ INVALID_INPUT: that is not an invite code or link");
    const bad = retasc(["claim", "not an id"], { env: { RETASC_MCP_KEY: "rtsc_test", RETASC_MCP_URL: "http://127.0.0.1:9/mcp" } });
    expect(bad.stderr).toContain("✗ INVALID_INPUT: not an id is not an issue identifier");
  });
});
