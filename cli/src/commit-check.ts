import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { DOTFOLDER_FILES, FOLDER_FILES } from "./folder-env.ts";

/**
 * The pre-commit check `retasc bind` installs: a commit that stages a folder file an MCP client or
 * retasc reads (`.mcp.json`, `.retasc.json`, `.cursor/mcp.json`, …) holding an agent key is
 * refused, because a key committed once stays readable in the repository's history after it is
 * deleted. The key belongs in the keystore or in RETASC_MCP_KEY, exported (decision 056).
 */
const CHECKED = new Set([".retasc.json", ...FOLDER_FILES, ...DOTFOLDER_FILES]);

/**
 * A key as this server mints them (`rtsc_`, `rtci_` and base64url), anywhere in the text: a
 * header's Bearer value, an env entry, an argument. A reference (`{env:RETASC_MCP_KEY}`,
 * `${env:RETASC_MCP_KEY}`) holds no key and passes.
 */
const KEY = /\brt(?:sc|ci)_[A-Za-z0-9_-]{20,}/;

/** The staged folder files that hold a key, each with the key's first characters (never the key). */
export function stagedKeys(cwd: string): { file: string; prefix: string }[] {
  const listed = spawnSync("git", ["diff", "--cached", "--name-only", "--diff-filter=ACMR", "-z"], { cwd, encoding: "utf8" });
  if (listed.status !== 0) return [];
  const found: { file: string; prefix: string }[] = [];
  for (const file of listed.stdout.split("\0").filter(Boolean)) {
    if (![...CHECKED].some((name) => file === name || file.endsWith(`/${name}`))) continue;
    // The staged text, not the working file's: what the commit would record.
    const staged = spawnSync("git", ["show", `:${file}`], { cwd, encoding: "utf8" });
    const key = staged.status === 0 ? KEY.exec(staged.stdout)?.[0] : undefined;
    if (key) found.push({ file, prefix: key.slice(0, 8) });
  }
  return found;
}

/** What the installed hook says it is: a hook holding this line is ours to rewrite. */
const HOOK_MARK = "# retasc: refuses a commit that puts an agent key in a folder file";

/** The hook: `retasc` from PATH, else the CLI the folder's marker runs (`npx -y <server>/cli/latest`), else a warning. */
const hookScript = (servedCli: string | null) =>
  [
    "#!/bin/sh",
    HOOK_MARK,
    "if command -v retasc >/dev/null 2>&1; then exec retasc hook pre-commit; fi",
    servedCli ? `exec npx -y ${servedCli} hook pre-commit` : 'echo "retasc is not on PATH: the check for agent keys in committed files did not run" >&2',
    "",
  ].join("\n");

export type CommitCheck = "installed" | "own-hook" | "not-a-repo";

/**
 * Writes the pre-commit hook in the repository `dir` is in (where git looks for hooks, so
 * core.hooksPath is honoured). A pre-commit hook of the person's own is left alone: "own-hook",
 * and they add `retasc hook pre-commit` to it.
 */
export function installCommitCheck(dir: string, servedCli: string | null): CommitCheck {
  const hooks = spawnSync("git", ["rev-parse", "--path-format=absolute", "--git-path", "hooks"], { cwd: dir, encoding: "utf8" });
  if (hooks.status !== 0) return "not-a-repo";
  const file = path.join(hooks.stdout.trim(), "pre-commit");
  const existing = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : null;
  if (existing !== null && !existing.includes(HOOK_MARK)) return "own-hook";
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, hookScript(servedCli), { mode: 0o755 });
  return "installed";
}
