import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { build, loadConfigFromFile, type PluginOption } from "vite";
import { afterAll, describe, expect, it } from "vitest";
import { serverOnly } from "./server-only.ts";

/**
 * The build refuses server code in the browser bundle. A two-file Vite build of a fixture tree
 * (milliseconds, not an app build) runs the plugin vite.config.ts installs; the app's own
 * build passing is covered by every test that builds it (scripts/bundle-size.test.ts).
 */
const root = fs.mkdtempSync(path.join(os.tmpdir(), "retasc-server-only-"));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

function plant(files: Record<string, string>) {
  for (const [file, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    fs.writeFileSync(path.join(root, file), text);
  }
}

plant({
  "server/secret.ts": 'export const secret = "server only";\n',
  "db/client.ts": "export const open = () => 1;\n",
  "constants/statuses.ts": 'export const statuses = ["todo"] as const;\n',
  "app/leaks.ts": 'import { secret } from "../server/secret.ts";\nexport const shown = secret;\n',
  "app/leaks-db.ts": 'import { open } from "../db/client.ts";\nexport const shown = open;\n',
  "app/types-only.ts": 'import type { secret } from "../server/secret.ts";\nexport const shown: typeof secret = "x";\n',
  "app/constants.ts": 'import { statuses } from "../constants/statuses.ts";\nexport const shown = statuses;\n',
  "app/page.ts": 'import { shown } from "./leaks.ts";\nexport default shown;\n',
});

function buildOf(entry: string, ssr = false) {
  return build({
    root,
    configFile: false,
    logLevel: "silent",
    plugins: [serverOnly(root)],
    build: { write: false, ssr, lib: { entry: path.join(root, entry), formats: ["es"] }, rollupOptions: { external: [] } },
  });
}

describe("the server-only build guard", () => {
  it("refuses a client module that imports server/ or db/, naming both ends", async () => {
    await expect(buildOf("app/leaks.ts")).rejects.toThrow(/Server-only module referenced by client: '..\/server\/secret.ts' \(server\/secret.ts\) imported by 'app\/leaks.ts'/);
    await expect(buildOf("app/leaks-db.ts")).rejects.toThrow(/\(db\/client.ts\) imported by 'app\/leaks-db.ts'/);
  });

  it("refuses server code reached through another client module", async () => {
    await expect(buildOf("app/page.ts")).rejects.toThrow(/imported by 'app\/leaks.ts'/);
  });

  it("lets type-only imports and constants/ through, and the server build import server/", async () => {
    await expect(buildOf("app/types-only.ts")).resolves.toBeDefined();
    await expect(buildOf("app/constants.ts")).resolves.toBeDefined();
    await expect(buildOf("app/leaks.ts", true)).resolves.toBeDefined();
  });

  it("is installed in the app's vite.config.ts", async () => {
    const loaded = await loadConfigFromFile({ command: "build", mode: "production" }, path.resolve(import.meta.dirname, "../vite.config.ts"));
    const names = (loaded?.config.plugins ?? []).flat(Infinity as 1).map((p: PluginOption) => (p && "name" in p ? p.name : null));
    expect(names).toContain("retasc:server-only");
  });
});
