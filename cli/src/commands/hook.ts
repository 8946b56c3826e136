import { stagedKeys } from "../commit-check.ts";
import { CliError } from "../errors.ts";

/** `retasc hook pre-commit`: what the hook `retasc bind` installs runs; refuses a commit whose staged folder files hold an agent key. */
export async function hookPreCommit() {
  const found = stagedKeys(process.cwd());
  if (found.length === 0) return;
  throw new CliError(
    "KEY_IN_COMMIT",
    `${found.map((f) => `${f.file} holds an agent key (${f.prefix}…)`).join("; ")}: a key committed once stays in the repository's history`,
    "Unstage it (git restore --staged <file>) and take the key out; a key stays in ~/.retasc/bindings.json or in RETASC_MCP_KEY, exported. Rotate it (retasc key rotate) if it was ever pushed.",
  );
}
