import { deploymentUrl, type UrlFlag } from "../api.ts";
import { mcpUrlOf, originOf, refuseOtherMcpUrl, requireBinding, urlMismatch, type ResolvedBinding } from "../binding.ts";
import { CliError } from "../errors.ts";
import { findProjectFile } from "../folder.ts";
import { headersHelperTargets } from "../marker.ts";
import { withMcp } from "../mcp.ts";
import { note, out, printJson, say } from "../output.ts";
import { readStdinSecret } from "../prompt.ts";
import { runUnboundProxy } from "../proxy-unbound.ts";
import { runProxy } from "../proxy.ts";
import { readBindings } from "../store.ts";
import { clientBlocks } from "../wire-folder.ts";
import type { McpWhoami } from "../wire-mcp.ts";
import { checkRebind, exportLine, finishBinding, printBlocks, type JsonFlag, type RebindFlags } from "./connect.ts";

// `retasc mcp …`: a folder's MCP wiring with a key already minted, and what its MCP clients run.

/** Wires this folder with a key you already have (stdin or RETASC_MCP_KEY; never a flag). */
export async function mcpInstall(flags: RebindFlags & JsonFlag & { scope?: string }) {
  if (flags.scope && flags.scope !== "project") {
    throw new CliError("INVALID_INPUT", `scope ${flags.scope} is refused`, "A folder decides its org, so no user-level entry carries a key: `retasc setup` wires the keyless proxy at user level, which finds each folder's key itself. Use the default, project.");
  }
  const piped = await readStdinSecret();
  const key = piped ?? process.env.RETASC_MCP_KEY;
  if (!key) throw new CliError("INVALID_INPUT", "no key given", "Pipe it in (`retasc mcp install < key.txt`) or set RETASC_MCP_KEY. Keys are never flags.");
  if (!/^rtsc_/.test(key)) throw new CliError("INVALID_INPUT", "that is not an agent key", "Agent keys start with rtsc_.");
  const url = piped ? installUrl(flags) : requireBinding(process.cwd()).url;
  const who = await withMcp({ key, mcpUrl: mcpUrlOf(url) }, (call) => call<McpWhoami>("whoami"));
  if (!who.project) throw new CliError("INVALID_INPUT", "this key is not scoped to a project", "Mint one for a project: `retasc key mint --project-id <id>`.");
  await checkRebind(flags, { orgId: who.org.id, projectId: who.project.id });
  return finishBinding(flags, {
    url,
    key,
    keyId: who.key.id,
    orgId: who.org.id,
    orgName: who.org.name,
    projectId: who.project.id,
    prefix: who.project.prefix,
    runtime: who.key.runtime,
  });
}

/**
 * Where a key piped to `mcp install` goes: --url, RETASC_DEPLOYMENT_URL or the last deployment
 * used, never the one the folder's `.retasc.json` names; when that file names another, the
 * person says which with --url.
 */
function installUrl(flags: UrlFlag): string {
  const url = deploymentUrl(flags, { folder: false });
  const named = findProjectFile(process.cwd());
  if (!flags.url && named && originOf(named.value.url) !== originOf(url)) {
    throw new CliError(
      "URL_MISMATCH",
      `${named.file} names ${originOf(named.value.url)}, but the key would go to ${originOf(url)}; a key goes only to a server you name`,
      `Pass --url with the server the key is for (\`retasc mcp install --url ${originOf(named.value.url)}\` if it is that one).`,
      { bound: originOf(url), named: originOf(named.value.url) },
    );
  }
  return url;
}

/** Prints the other clients' config blocks again. */
export async function mcpConfig(flags: JsonFlag) {
  const binding = requireBinding(process.cwd());
  if (flags.json) return printJson(clientBlocks(binding.mcpUrl));
  say(`Other clients read the key from RETASC_MCP_KEY:  ${exportLine(binding.mcpUrl)}`);
  printBlocks(binding.mcpUrl);
}

/**
 * The headersHelper Claude Code runs: `{"Authorization":"Bearer …"}` for the folder's key, only
 * when every server of the folder's `.mcp.json` that runs this helper, and the URL the client
 * says it will send the headers to, is on the origin the key was bound with (URL_MISMATCH).
 */
export async function mcpHeaders(flags: { workspace?: string }) {
  let binding: ResolvedBinding | null = null;
  if (flags.workspace && !process.env.RETASC_MCP_KEY) {
    const workspace = readBindings().workspaces[flags.workspace];
    if (workspace) binding = { key: workspace.key, url: workspace.url, mcpUrl: mcpUrlOf(workspace.url), source: "keystore", workspaceId: flags.workspace, workspace };
    if (binding) refuseOtherMcpUrl(binding);
  }
  binding ??= requireBinding(process.cwd());
  for (const target of headersHelperTargets(process.cwd())) {
    if (originOf(target.url) !== originOf(binding.url)) throw urlMismatch(`${target.file} (its "${target.name}" server)`, target.url, binding.url);
  }
  const client = process.env.CLAUDE_CODE_MCP_SERVER_URL;
  if (client && originOf(client) !== originOf(binding.url)) throw urlMismatch("the MCP client (CLAUDE_CODE_MCP_SERVER_URL)", client, binding.url);
  out(JSON.stringify({ Authorization: `Bearer ${binding.key}` }));
}

/**
 * The stdio MCP server `.mcp.json` (and what `retasc setup` wires at user level) runs: relays to
 * /mcp with the folder's key, heartbeating the claims made through it. In a folder with no
 * binding it answers on its own, keyless and offline (proxy-unbound.ts); a refusal (a key that
 * would go elsewhere) still ends it, as before.
 */
export async function mcpProxy() {
  let binding: ResolvedBinding;
  try {
    binding = requireBinding(process.cwd());
  } catch (error) {
    if (error instanceof CliError && error.code === "NOT_BOUND") return runUnboundProxy(process.cwd(), error, note);
    throw error;
  }
  await runProxy(binding, note);
}

/** Prints the folder's key, for `export RETASC_MCP_KEY="$(retasc mcp key)"`. */
export async function mcpKey(flags: JsonFlag) {
  const binding = requireBinding(process.cwd());
  if (flags.json) return printJson({ key: binding.key, keyId: binding.workspace?.keyId ?? null, mcpUrl: binding.mcpUrl });
  if (process.stdout.isTTY) note("(this is a secret: prefer piping it into an environment variable)");
  out(binding.key);
}

