import fs from "node:fs";
import path from "node:path";

/** What a client runs for a folder's `.mcp.json` retasc server. */
export interface Launch {
  command: string;
  args: string[];
}

/**
 * The command a folder's `.mcp.json` retasc server names, for the tests that exercise what runs
 * behind it (the proxy, its watchdog, the tools): `npx -y <server>/cli/latest …` becomes `bin …`,
 * the workspace's CLI, so a test's process is the proxy itself and no package is fetched.
 * e2e/install.test.ts runs the npx form as written.
 */
export function folderLaunch(folder: string, bin: string): Launch & { type: string } {
  const entry = JSON.parse(fs.readFileSync(path.join(folder, ".mcp.json"), "utf8")).mcpServers.retasc;
  if (entry.command === "npx" && entry.args?.[0] === "-y" && /\/cli\/latest$/.test(entry.args[1])) {
    return { ...entry, command: bin, args: entry.args.slice(2) };
  }
  return entry;
}
