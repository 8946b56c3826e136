import fs from "node:fs";
import path from "node:path";
import { normalizeUrl, serverCli } from "./api.ts";
import { installCommitCheck, type CommitCheck } from "./commit-check.ts";
import { CliError } from "./errors.ts";
import { folderFileSettingKeyEnv } from "./folder-env.ts";
import { candidateDirs, findProjectFile, mainWorktree, PROJECT_FILE, readJsonFile, type ProjectFile } from "./folder.ts";
import { newWorkspaceId, readBindings, updateBindings, type Workspace } from "./store.ts";

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
 */
export const MARKER = ".mcp.json";
export const SERVER_NAME = "retasc";
/** What markers written by earlier CLIs named: a keystore entry of the machine that wrote them. */
const WORKSPACE_FLAG = /--workspace\s+(ws_[0-9a-f]+)/;

/** How Claude Code reaches the server: through the local proxy (the watchdog), or straight over HTTP. */
export type Transport = "proxy" | "http";

/** The `retasc` server of a `.mcp.json`, as this CLI reads it. */
export interface MarkerServer {
  type?: string;
  url?: unknown;
  headersHelper?: unknown;
  command?: unknown;
  args?: unknown;
}

/** The nearest `.mcp.json` wired to retasc: its folder, its retasc server, and the keystore entry a legacy helper names. */
export interface Marker {
  dir: string;
  file: string;
  server: MarkerServer;
  workspaceId: string | null;
  url: string | null;
}

export interface ResolvedBinding {
  key: string;
  url: string;
  mcpUrl: string;
  /** Where the key came from, for `retasc whoami` and `retasc config`. */
  source: string;
  workspaceId: string | null;
  workspace: Workspace | null;
}

/** What a folder is bound with: the key, and the org and project it works in. */
export type Bound = Omit<Workspace, "path" | "boundAt">;

/** The other MCP clients `retasc bind` prints config blocks for. */
export type McpClient = "codex" | "opencode" | "cursor" | "cline" | "gemini";

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

/** What this CLI reads of a `.mcp.json`; other servers in it are kept as they are. */
interface MarkerFile {
  mcpServers?: Record<string, MarkerServer>;
  [other: string]: unknown;
}

const readMarker = (file: string): MarkerFile | null => readJsonFile(file) as MarkerFile | null;

/** The nearest `.mcp.json` with a retasc server. */
export function findMarker(start: string): Marker | null {
  for (const dir of candidateDirs(start)) {
    const file = path.join(dir, MARKER);
    const server = readMarker(file)?.mcpServers?.[SERVER_NAME];
    if (!server || typeof server !== "object") continue;
    const helper = typeof server.headersHelper === "string" ? server.headersHelper : "";
    return { dir, file, server, workspaceId: WORKSPACE_FLAG.exec(helper)?.[1] ?? null, url: typeof server.url === "string" ? server.url : null };
  }
  return null;
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

/** A headersHelper that runs this CLI's `mcp headers`, however it names the binary. */
const HEADERS_HELPER = /\bretasc\b.*\bmcp\s+headers\b/;

/**
 * Every MCP server of the `.mcp.json` files around a folder whose headers helper is
 * `retasc mcp headers`, with the URL the client sends those headers to, whatever the server's
 * name: a repository may add a server of another name that runs the helper.
 */
export function headersHelperTargets(start: string): { file: string; name: string; url: string }[] {
  const targets: { file: string; name: string; url: string }[] = [];
  for (const dir of candidateDirs(start)) {
    const file = path.join(dir, MARKER);
    const servers = readMarker(file)?.mcpServers;
    if (!servers || typeof servers !== "object") continue;
    for (const [name, server] of Object.entries(servers)) {
      if (server && typeof server.headersHelper === "string" && HEADERS_HELPER.test(server.headersHelper) && typeof server.url === "string") {
        targets.push({ file, name, url: server.url });
      }
    }
  }
  return targets;
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

/**
 * Why a `.mcp.json` retasc server would not work on another machine: absolute paths (this
 * machine's node, this clone's CLI) and keystore ids of the machine that wrote it.
 */
export function machineLocalParts(server: MarkerServer): string[] {
  const problems: string[] = [];
  const absolute = /(^|[\s"'=])(\/|~\/|[A-Za-z]:[\\/])/;
  const fields: [string, unknown][] = [["command", server.command], ["headersHelper", server.headersHelper], ...(Array.isArray(server.args) ? server.args.map((a, i): [string, unknown] => [`args[${i}]`, a]) : [])];
  for (const [name, value] of fields) {
    if (typeof value !== "string") continue;
    if (absolute.test(value)) problems.push(`${name} names an absolute path (${value})`);
    const id = WORKSPACE_FLAG.exec(value)?.[1];
    if (id) problems.push(`${name} names ${id}, a keystore entry of the machine that wrote it`);
  }
  return problems;
}

/** The first folder on PATH holding `command`, or null. */
export function onPath(command: string): string | null {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (!dir) continue;
    const file = path.join(dir, command);
    try {
      fs.accessSync(file, fs.constants.X_OK);
      return file;
    } catch {
      // not there
    }
  }
  return null;
}

/** The headers helper the HTTP form of `.mcp.json` runs. */
export const HEADERS_HELPER_COMMAND = "retasc mcp headers";

/**
 * The `retasc` server entry of `.mcp.json`: nothing of this machine. The proxy runs through
 * `npx -y <server>/cli/latest` when the server serves its CLI, so a teammate who clones the
 * repository needs no install (and gets the server's CLI); else `retasc` from PATH.
 */
export function markerServer(transport: Transport, mcpUrl: string, servedCli: string | null): MarkerServer {
  if (transport === "http") return { type: "http", url: mcpUrl, headersHelper: HEADERS_HELPER_COMMAND };
  if (servedCli) return { type: "stdio", command: "npx", args: ["-y", servedCli, "mcp", "proxy"] };
  return { type: "stdio", command: "retasc", args: ["mcp", "proxy"] };
}

function writeFileAtomic(file: string, text: string): void {
  const temp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temp, text);
  fs.renameSync(temp, file);
}

/**
 * Stores the key in the keystore under the folder's path and writes the folder's two files,
 * keeping any other MCP servers already in ./.mcp.json.
 */
export async function wireFolder(
  input: Bound & { dir: string; transport?: Transport },
): Promise<{ workspaceId: string; marker: string; projectFile: string; mcpUrl: string; transport: Transport; commitCheck: CommitCheck }> {
  const dir = path.resolve(input.dir);
  const url = normalizeUrl(input.url);
  const transport = input.transport ?? "proxy";
  const workspaceId = await updateBindings((bindings) => {
    const id = Object.entries(bindings.workspaces).find(([, w]) => w.path === dir)?.[0] ?? newWorkspaceId();
    bindings.workspaces[id] = {
      path: dir,
      url,
      orgId: input.orgId,
      orgName: input.orgName,
      projectId: input.projectId,
      prefix: input.prefix,
      keyId: input.keyId,
      key: input.key,
      runtime: input.runtime,
      boundAt: new Date().toISOString(),
    };
    return id;
  });
  // The CLI this server serves, run through npx by the marker's proxy and by the commit hook where retasc is not installed.
  const served = (await serverCli(url)) ? `${url}/cli/latest` : null;
  const servedCli = transport === "proxy" ? served : null;
  const file = path.join(dir, MARKER);
  const marker = readMarker(file) ?? {};
  marker.mcpServers ??= {};
  marker.mcpServers[SERVER_NAME] = markerServer(transport, mcpUrlOf(url), servedCli);
  writeFileAtomic(file, `${JSON.stringify(marker, null, 2)}\n`);
  const projectFile = path.join(dir, PROJECT_FILE);
  const project: ProjectFile = { url, orgId: input.orgId, projectId: input.projectId, prefix: input.prefix };
  writeFileAtomic(projectFile, `${JSON.stringify(project, null, 2)}\n`);
  // The two files are committed: the repository's hook refuses a commit that puts a key in them.
  const commitCheck = installCommitCheck(dir, served);
  return { workspaceId, marker: file, projectFile, mcpUrl: mcpUrlOf(url), transport, commitCheck };
}

/**
 * After a project's prefix was renamed (decision 089): the keystore's bindings to it on this server
 * and the nearest `.retasc.json` naming it say the new prefix. Old identifiers still resolve, so
 * this is for what the CLI shows; returns the project file it rewrote, if any (it is committed).
 */
export async function renamePrefixHere(input: { url: string; projectId: string; prefix: string; cwd: string }): Promise<{ workspaces: number; projectFile: string | null }> {
  const url = normalizeUrl(input.url);
  const workspaces = await updateBindings((bindings) => {
    let changed = 0;
    for (const workspace of Object.values(bindings.workspaces)) {
      if (workspace.projectId === input.projectId && normalizeUrl(workspace.url) === url && workspace.prefix !== input.prefix) {
        workspace.prefix = input.prefix;
        changed++;
      }
    }
    return changed;
  });
  const found = findProjectFile(input.cwd);
  if (!found || found.value.projectId !== input.projectId || normalizeUrl(found.value.url) !== url || found.value.prefix === input.prefix) {
    return { workspaces, projectFile: null };
  }
  const raw = readJsonFile(found.file) ?? {};
  writeFileAtomic(found.file, `${JSON.stringify({ ...raw, prefix: input.prefix }, null, 2)}\n`);
  return { workspaces, projectFile: found.file };
}

/**
 * Config blocks for other MCP clients. They read the key from RETASC_MCP_KEY, which
 * `export RETASC_MCP_KEY="$(retasc mcp key)"` sets from the keystore.
 */
export function clientBlocks(mcpUrl: string): Record<McpClient, { file: string; text: string }> {
  return {
    codex: {
      file: "~/.codex/config.toml",
      text: `[mcp_servers.retasc]\nurl = "${mcpUrl}"\nbearer_token_env_var = "RETASC_MCP_KEY"`,
    },
    opencode: {
      file: "opencode.json",
      text: JSON.stringify(
        { $schema: "https://opencode.ai/config.json", mcp: { retasc: { type: "remote", url: mcpUrl, headers: { Authorization: "Bearer {env:RETASC_MCP_KEY}" } } } },
        null,
        2,
      ),
    },
    cursor: {
      file: ".cursor/mcp.json",
      text: JSON.stringify({ mcpServers: { retasc: { url: mcpUrl, headers: { Authorization: "Bearer ${env:RETASC_MCP_KEY}" } } } }, null, 2),
    },
    cline: {
      file: "cline_mcp_settings.json (MCP Servers → Configure)",
      text: JSON.stringify(
        { mcpServers: { retasc: { type: "streamableHttp", url: mcpUrl, headers: { Authorization: "Bearer <paste the output of: retasc mcp key>" } } } },
        null,
        2,
      ),
    },
    gemini: {
      file: ".gemini/settings.json",
      text: JSON.stringify({ mcpServers: { retasc: { httpUrl: mcpUrl, headers: { Authorization: "Bearer $RETASC_MCP_KEY" } } } }, null, 2),
    },
  };
}
