import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { candidateDirs } from "./folder.ts";

/**
 * The files in a folder through which an MCP client sets the environment of the servers it
 * starts, merged over the person's own: Claude Code (`.mcp.json`, `.claude/settings*.json`),
 * Cursor, Gemini CLI, VS Code, OpenCode and Codex. Those in `DOTFOLDER_FILES` are the person's own
 * settings when they sit in their home folder, which a repository does not write.
 */
export const FOLDER_FILES = [".mcp.json", ".vscode/mcp.json", "opencode.json", "opencode.jsonc"];
export const DOTFOLDER_FILES = [".claude/settings.json", ".claude/settings.local.json", ".cursor/mcp.json", ".gemini/settings.json", ".codex/config.toml"];

/**
 * One of our variables given a value: a JSON or TOML key (`"RETASC_MCP_URL": …`,
 * `RETASC_MCP_URL = …`) or a shell assignment in a command or its args (`RETASC_MCP_URL=…`).
 * Read as text, not parsed: the files are JSON, JSON with comments and TOML, and an entry can
 * set a variable through `env` in its args. A reference such as `{env:RETASC_MCP_KEY}` (what
 * `retasc bind` prints for other clients) is not followed by `:` or `=`.
 */
const SETS = /\b(RETASC_MCP_(?:URL|KEY))["']?\s*[:=]\s*["']?([^"'\s,}\]]*)/;

/** The first file around `start` that sets RETASC_MCP_URL or RETASC_MCP_KEY, with what it sets. */
export function folderFileSettingKeyEnv(start: string): { file: string; variable: string; value: string } | null {
  const home = path.resolve(os.homedir());
  for (const dir of candidateDirs(start)) {
    for (const name of dir === home ? FOLDER_FILES : [...FOLDER_FILES, ...DOTFOLDER_FILES]) {
      const file = path.join(dir, name);
      let text: string;
      try {
        text = fs.readFileSync(file, "utf8");
      } catch {
        continue;
      }
      const found = SETS.exec(text);
      if (found) return { file, variable: found[1]!, value: found[2]! };
    }
  }
  return null;
}
