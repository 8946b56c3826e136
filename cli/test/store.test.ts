import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";

/** The CLI's keystore under concurrent writers: separate processes, like parallel terminals. */
const storeModule = path.resolve(import.meta.dirname, "../dist/store.js");

function writer(retascDir: string, id: string): Promise<number | null> {
  const script = `
    const { updateBindings } = await import(${JSON.stringify(storeModule)});
    await updateBindings(async (b) => {
      await new Promise((r) => setTimeout(r, 5));
      b.workspaces[${JSON.stringify(id)}] = { path: "/tmp/${id}", key: "rtsc_${id}" };
    });`;
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["--input-type=module", "-e", script], { env: { ...process.env, RETASC_DIR: retascDir }, stdio: "inherit" });
    child.on("exit", resolve);
  });
}

describe("keystore", () => {
  it("keeps every write of concurrent processes, mode 0600, with no temp files left", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "retasc-store-"));
    const ids = Array.from({ length: 20 }, (_, i) => `ws_${i}`);
    const codes = await Promise.all(ids.map((id) => writer(dir, id)));
    expect(codes.every((c) => c === 0)).toBe(true);
    const file = path.join(dir, "bindings.json");
    const stored = JSON.parse(fs.readFileSync(file, "utf8"));
    expect(Object.keys(stored.workspaces).sort()).toEqual([...ids].sort());
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.readdirSync(dir).sort()).toEqual(["bindings.json"]);
  });
});
