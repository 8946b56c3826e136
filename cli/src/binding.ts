import path from "node:path";
import { normalizeUrl } from "./api.ts";
import { CliError } from "./errors.ts";
import { folderFileSettingKeyEnv } from "./folder-env.ts";
import { findProjectFile, mainWorktree, PROJECT_FILE } from "./folder.ts";
import { findMarker } from "./marker.ts";
import { readBindings, type Workspace } from "./store.ts";

/**
 * How a folder is wired to Retasc, in two files safe to commit: `./.mcp.json`, whose `retasc`
 * server runs `retasc mcp proxy` through `npx -y <server>/cli/latest` (or from PATH where the
 * server serves no CLI; in the HTTP form it names the MCP URL and the headers helper
 * `retasc mcp headers`); and `./.retasc.json`, naming the deployment, org and
 * project (no secret, nothing of this machine). The key is in this machine's keystore, found by
 * the folder's path (or, for a clone elsewhere, by the deployment and project of `.retasc.json`).
 * RETASC_MCP_KEY (explicit key) and RETASC_WORKSPACE override the folder.
 *
 * Where a key goes is never read from the folder: a key from the keystore goes only to the
 * deployment it was bound with (`<url>/mcp`), and a key given in RETASC_MCP_KEY only to
 * RETASC_MCP_URL, given with it. A repository's `.mcp.json` (whose `env` and `args` reach
 * `retasc mcp proxy`) or `.retasc.json` can make a command fail, never send a key elsewhere.
 *
 * This file resolves the key a command sends and where; ./marker.ts reads and shapes the
 * `.mcp.json` server, ./wire-folder.ts writes a binding.
 */

export interface ResolvedBinding {
  key: string;
  url: string;
  mcpUrl: string;
  /** Where the key came from, for `retasc whoami` and `retasc config`. */
  source: string;
  workspaceId: string | null;
  workspace: Workspace | null;
}

/** The MCP endpoint of a deployment: where a key bound with it goes, and the only place. */
export const mcpUrlOf = (url: string): string => `${url}/mcp`;

/** A URL's origin (scheme, host, port), which is what a key is bound to. */
export function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}

/** Refuses to send a key bound with `boundUrl` to `otherUrl`, naming both origins and what to run. */
export function urlMismatch(what: string, otherUrl: string, boundUrl: string, hint?: string): CliError {
  return new CliError(
    "URL_MISMATCH",
    `${what} names ${originOf(otherUrl)}, but this folder's key was bound with ${originOf(boundUrl)}; a key goes only to the server it was bound with`,
    hint ?? `If ${originOf(otherUrl)} is where you meant to work, run \`retasc bind --url ${originOf(otherUrl)}\` here for a key of that server; otherwise run \`retasc bind\` here to rewrite the folder's files for ${originOf(boundUrl)}.`,
    { bound: originOf(boundUrl), named: originOf(otherUrl) },
  );
}

/**
 * A key given in RETASC_MCP_KEY: the key this machine bound it as, when it is one (it keeps
 * that binding's server), else a key that goes only to RETASC_MCP_URL, which must be given too.
 */
function explicitKey(key: string, workspaces: Record<string, Workspace>): ResolvedBinding {
  const stored = Object.entries(workspaces).find(([, w]) => w.key === key);
  if (stored) {
    const [id, workspace] = stored;
    return { key, url: workspace.url, mcpUrl: mcpUrlOf(workspace.url), source: `RETASC_MCP_KEY (bound with ${workspace.url})`, workspaceId: id, workspace };
  }
  const given = process.env.RETASC_MCP_URL;
  if (!given) {
    throw new CliError(
      "URL_REQUIRED",
      "RETASC_MCP_KEY is set but RETASC_MCP_URL is not: a key given in the environment goes only to the URL given with it",
      "Export RETASC_MCP_URL too, the /mcp URL of the server the key is for (`retasc mcp key --json` prints both), or unset RETASC_MCP_KEY to use this folder's binding.",
    );
  }
  const mcpUrl = normalizeUrl(given);
  const url = mcpUrl.endsWith("/mcp") ? mcpUrl.slice(0, -"/mcp".length) : originOf(mcpUrl);
  return { key, url, mcpUrl, source: "RETASC_MCP_KEY", workspaceId: null, workspace: null };
}

/**
 * The folder's agent key and where to use it, or null when nothing is bound. A stored key's
 * server is its binding's: RETASC_MCP_URL naming another origin is refused (URL_MISMATCH),
 * since a repository's `.mcp.json` can set it for the proxy it runs.
 */
export function resolveBinding(cwd: string): ResolvedBinding | null {
  const { workspaces } = readBindings();
  if (process.env.RETASC_MCP_KEY) refuseFolderKeyEnv(cwd);
  const found = process.env.RETASC_MCP_KEY ? explicitKey(process.env.RETASC_MCP_KEY, workspaces) : storedKey(cwd, workspaces);
  if (found) refuseOtherMcpUrl(found);
  return found;
}

/**
 * A key given in RETASC_MCP_KEY goes where RETASC_MCP_URL says, and the MCP client that started
 * this process merged its file's `env` over the person's: when a file of the folder sets either
 * variable, the values here may be the repository's, so nothing is sent.
 */
function refuseFolderKeyEnv(cwd: string): void {
  const found = folderFileSettingKeyEnv(cwd);
  if (!found) return;
  const origin = found.variable === "RETASC_MCP_URL" ? originOf(found.value) : null;
  throw new CliError(
    "URL_MISMATCH",
    `${found.file} sets ${found.variable}${origin ? ` (to ${origin})` : ""} for the MCP servers it starts; a key given in RETASC_MCP_KEY goes only to a RETASC_MCP_URL you export, never to one a folder's file sets`,
    `export RETASC_MCP_URL in your environment (or CI secrets) with RETASC_MCP_KEY, and remove ${found.variable} from ${found.file}: a committed file could send your key to another server.`,
    { file: found.file, variable: found.variable, ...(origin ? { named: origin } : {}) },
  );
}

/** A stored key with RETASC_MCP_URL naming another origin: refused, never sent there. */
export function refuseOtherMcpUrl(binding: ResolvedBinding): void {
  const named = process.env.RETASC_MCP_URL;
  if (binding.workspace && named && originOf(named) !== originOf(binding.url)) {
    throw urlMismatch("RETASC_MCP_URL", named, binding.url, `Unset RETASC_MCP_URL (it is for a key given in RETASC_MCP_KEY, and a folder's .mcp.json may set it), or run \`retasc bind --url ${originOf(named)}\` here for a key of that server.`);
  }
}

/** The keystore's key for the folder (or the entry RETASC_WORKSPACE names), or null. */
function storedKey(cwd: string, workspaces: Record<string, Workspace>): ResolvedBinding | null {
  const fromWorkspace = (id: string, source: string): ResolvedBinding | null => {
    const workspace = workspaces[id];
    if (!workspace) return null;
    return { key: workspace.key, url: workspace.url, mcpUrl: mcpUrlOf(workspace.url), source, workspaceId: id, workspace };
  };
  if (process.env.RETASC_WORKSPACE) {
    const found = fromWorkspace(process.env.RETASC_WORKSPACE, "RETASC_WORKSPACE");
    if (!found) throw new CliError("NOT_BOUND", `workspace ${process.env.RETASC_WORKSPACE} is not in the keystore`, "Unset RETASC_WORKSPACE or bind again.");
    return found;
  }
  const marker = findMarker(cwd);
  if (marker?.workspaceId) {
    const found = fromWorkspace(marker.workspaceId, marker.file);
    if (found) return found;
  }
  // The folder (or the repository it is a worktree of) as this machine bound it.
  const dirs = [...new Set([marker?.dir, findProjectFile(cwd)?.dir, path.resolve(cwd), mainWorktree(cwd)].filter((d): d is string => Boolean(d)))];
  for (const dir of dirs) {
    const byPath = Object.entries(workspaces).find(([, w]) => w.path === dir);
    if (byPath) return fromWorkspace(byPath[0], `keystore (${dir})`);
  }
  // A clone of a bound folder elsewhere on this machine: the one key this person has for that
  // project, which goes to the server it was bound with (the file only picks it).
  const project = findProjectFile(cwd)?.value;
  if (project) {
    const same = Object.entries(workspaces).filter(([, w]) => w.url === normalizeUrl(project.url) && w.projectId === project.projectId);
    if (same.length === 1) return fromWorkspace(same[0]![0], `keystore (${project.prefix || project.projectId} at ${project.url})`);
  }
  return null;
}

export function requireBinding(cwd: string): ResolvedBinding {
  const binding = resolveBinding(cwd);
  if (!binding) {
    const project = findProjectFile(cwd)?.value;
    const hint = project
      ? `This folder works in ${project.prefix || "a project"} at ${project.url} (${PROJECT_FILE}); run \`retasc bind\` here to get your own key for it.`
      : "Run `retasc bind` here (or `retasc bind --setup <code>`), or set RETASC_MCP_KEY.";
    throw new CliError("NOT_BOUND", "this folder is not bound to a Retasc project", hint);
  }
  return binding;
}
