import { spawnSync } from "node:child_process";
import { deploymentUrl, serverCli, type UrlFlag } from "../api.ts";
import { resolveBinding } from "../binding.ts";
import { CliError } from "../errors.ts";
import { ok, printJson, say } from "../output.ts";
import { cliVersion, olderThan } from "../version.ts";

type Flags = UrlFlag & { json?: boolean };

/**
 * The server whose CLI to install: this folder's binding (from the keystore, which you wrote),
 * else --url, RETASC_DEPLOYMENT_URL or the last one signed in to. Never a repository's
 * .retasc.json alone: which code runs on this machine is not a cloned folder's to say.
 */
function updateSource(flags: Flags): string {
  if (flags.url) return deploymentUrl(flags, { folder: false });
  let bound: string | undefined;
  try {
    bound = resolveBinding(process.cwd())?.url;
  } catch {
    // An unusable binding here (a refused RETASC_MCP_URL, say) names no server to trust.
  }
  return bound ?? deploymentUrl(flags, { folder: false });
}

/** `retasc update`: installs the server's CLI when it is newer than this one. */
export async function update(flags: Flags) {
  const url = updateSource(flags);
  const offered = await serverCli(url);
  if (!offered) throw new CliError("NOT_FOUND", `${url} serves no CLI package`, "Its operator runs `npm run build`, which packs it; or pass --url for another server.");
  const current = cliVersion();
  const behind = olderThan(current, offered.version);
  if (behind) {
    say(`Installing retasc ${offered.version} (this is ${current}) from ${offered.url}`);
    // npm's own output goes to stderr, so stdout stays this command's (and --json's).
    const result = spawnSync("npm", ["install", "-g", "--no-audit", "--no-fund", offered.url], { stdio: ["ignore", 2, 2] });
    if (result.status !== 0) throw new CliError("UPDATE_FAILED", `npm install -g ${offered.url} failed`, "Run it yourself to see why (a global install may need other permissions).");
  }
  const value = { updated: behind, from: current, version: behind ? offered.version : current, server: url };
  if (flags.json) return printJson(value);
  ok(behind ? `retasc ${offered.version} installed` : `retasc ${current} is current (${url} serves ${offered.version})`);
}
