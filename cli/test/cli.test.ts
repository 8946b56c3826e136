import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";

/** The installed `retasc` binary, without a server: help, refusals and their exit codes. */
const bin = path.resolve(import.meta.dirname, "../../node_modules/.bin/retasc");

function retasc(args: string[], options: { input?: string; env?: Record<string, string>; cwd?: string } = {}) {
  const retascDir = fs.mkdtempSync(path.join(os.tmpdir(), "retasc-cli-"));
  const env: Record<string, string | undefined> = { ...process.env, RETASC_DIR: retascDir, RETASC_DEPLOYMENT_URL: "http://127.0.0.1:9" };
  delete env.RETASC_MCP_KEY;
  Object.assign(env, options.env);
  const result = spawnSync(bin, args, { encoding: "utf8", env, input: options.input, cwd: options.cwd ?? os.tmpdir() });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe("retasc", () => {
  it("has --help for every command", () => {
    const overview = retasc(["--help"]);
    expect(overview.code).toBe(0);
    const names = [...overview.stdout.matchAll(/^ {2}([a-z]+(?: [a-z]+)?) {2,}/gm)].map((m) => m[1]!);
    expect(names).toEqual(expect.arrayContaining(["login", "logout", "whoami", "doctor", "config", "bind", "join", "init", "org create", "project create", "key mint", "key list", "key rotate", "key revoke", "members invite", "members list", "members revoke", "mcp install", "next", "claim", "done"]));
    for (const name of names) {
      const help = retasc([...name.split(" "), "--help"]);
      expect(help.code, name).toBe(0);
      expect(help.stdout, name).toContain(`Usage: retasc ${name}`);
    }
  });

  it("reports errors as ✗ CODE: message with a hint, exit 1, nothing on stdout", () => {
    const unknown = retasc(["bind", "--token", "x"]);
    expect(unknown).toMatchObject({ code: 1, stdout: "" });
    expect(unknown.stderr).toMatch(/^✗ INVALID_INPUT: Unknown option '--token'\n {2}Run `retasc bind --help`\.\n$/);
    const unbound = retasc(["claim", "42"]);
    expect(unbound.code).toBe(1);
    expect(unbound.stderr).toContain("✗ NOT_BOUND: this folder is not bound to a Retasc project");
    // Names an object inherits are not commands.
    expect(retasc(["constructor"])).toMatchObject({ code: 1, stdout: "", stderr: expect.stringMatching(/^✗ INVALID_INPUT: unknown command: constructor\n/) });
    const offline = retasc(["login"]);
    expect(offline.code).toBe(1);
    expect(offline.stderr).toMatch(/^✗ UNAVAILABLE: cannot reach http:\/\/127\.0\.0\.1:9/);
  });

  it("takes keys from stdin or the environment, never from a flag, and refuses user scope", () => {
    expect(retasc(["mcp", "install", "--key", "rtsc_x"]).stderr).toContain("Unknown option '--key'");
    expect(retasc(["mcp", "install", "--scope", "user"], { input: "rtsc_abc" }).stderr).toContain("✗ INVALID_INPUT: scope user is refused");
    expect(retasc(["mcp", "install"], { input: "not-a-key" }).stderr).toContain("✗ INVALID_INPUT: that is not an agent key");
  });

  it("refuses a malformed invite or issue before calling anyone", () => {
    expect(retasc(["join", "hello"]).stderr).toContain("✗ INVALID_INPUT: that is not an invite code or link");
    const bad = retasc(["claim", "not an id"], { env: { RETASC_MCP_KEY: "rtsc_test" } });
    expect(bad.stderr).toContain("✗ INVALID_INPUT: not an id is not an issue identifier");
  });
});
