import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { deploymentUrl, normalizeUrl, type UrlFlag } from "./api.ts";
import { CliError } from "./errors.ts";
import { newWorkspaceId, readBindings, updateBindings, type Workspace } from "./store.ts";

/**
 * How a folder is wired to Retasc. The folder holds a secret-free `./.mcp.json` whose
 * `retasc` server names the MCP URL and a `headersHelper` command (Claude Code runs it to
 * get the Authorization header); the helper reads the key from the keystore by workspace
 * id. RETASC_MCP_KEY (explicit key) and RETASC_WORKSPACE override the folder's marker.
 */
export const MARKER = ".mcp.json";
export const SERVER_NAME = "retasc";
const WORKSPACE_FLAG = /--workspace\s+(ws_[0-9a-f]+)/;

/** The nearest `.mcp.json` wired to retasc: its folder, and the keystore entry its helper names. */
export interface Marker {
  dir: string;
  file: string;
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

export const mcpUrlOf = (url: string): string => process.env.RETASC_MCP_URL || `${url}/mcp`;

/** What this CLI reads of a `.mcp.json`; other servers in it are kept as they are. */
interface MarkerFile {
  mcpServers?: Record<string, { type?: string; url?: unknown; headersHelper?: unknown }>;
  [other: string]: unknown;
}

function readMarker(file: string): MarkerFile | null {
  try {
    const value: unknown = JSON.parse(fs.readFileSync(file, "utf8"));
    return value && typeof value === "object" ? (value as MarkerFile) : null;
  } catch {
    return null;
  }
}

/**
 * The nearest `.mcp.json` with a retasc server, from `start` upwards, then in the main
 * worktree of the git repository (claim worktrees live beside it).
 */
export function findMarker(start: string): Marker | null {
  const candidates: string[] = [];
  for (let dir = path.resolve(start); ; dir = path.dirname(dir)) {
    candidates.push(dir);
    if (path.dirname(dir) === dir) break;
  }
  const main = mainWorktree(start);
  if (main) candidates.push(main);
  for (const dir of candidates) {
    const file = path.join(dir, MARKER);
    const server = readMarker(file)?.mcpServers?.[SERVER_NAME];
    if (!server) continue;
    const helper = typeof server.headersHelper === "string" ? server.headersHelper : "";
    return { dir, file, workspaceId: WORKSPACE_FLAG.exec(helper)?.[1] ?? null, url: typeof server.url === "string" ? server.url : null };
  }
  return null;
}

function mainWorktree(cwd: string): string | null {
  try {
    const common = execFileSync("git", ["rev-parse", "--path-format=absolute", "--git-common-dir"], {
      cwd,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    }).trim();
    return path.basename(common) === ".git" ? path.dirname(common) : null;
  } catch {
    return null;
  }
}

/** The folder's agent key and where to use it, or null when nothing is bound. */
export function resolveBinding(cwd: string, flags: UrlFlag = {}): ResolvedBinding | null {
  if (process.env.RETASC_MCP_KEY) {
    const url = deploymentUrl(flags);
    return { key: process.env.RETASC_MCP_KEY, url, mcpUrl: mcpUrlOf(url), source: "RETASC_MCP_KEY", workspaceId: null, workspace: null };
  }
  const { workspaces } = readBindings();
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
  // A marker written on another machine (or a lost id): fall back to the folder's path.
  const dir = marker?.dir ?? path.resolve(cwd);
  const byPath = Object.entries(workspaces).find(([, w]) => w.path === dir);
  return byPath ? fromWorkspace(byPath[0], `keystore (${dir})`) : null;
}

export function requireBinding(cwd: string, flags: UrlFlag = {}): ResolvedBinding {
  const binding = resolveBinding(cwd, flags);
  if (!binding) {
    throw new CliError("NOT_BOUND", "this folder is not bound to a Retasc project", "Run `retasc bind` here (or `retasc bind --setup <code>`), or set RETASC_MCP_KEY.");
  }
  return binding;
}

/** The command that runs this CLI: `retasc` when that is on PATH and is us, else node + this file. */
export function launcherCommand(): string {
  const self = fs.realpathSync(fileURLToPath(new URL("./bin.js", import.meta.url)));
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (!dir) continue;
    try {
      if (fs.realpathSync(path.join(dir, "retasc")) === self) return "retasc";
    } catch {
      // not there
    }
  }
  return `${JSON.stringify(process.execPath)} ${JSON.stringify(self)}`;
}

/**
 * Stores the key in the keystore and writes the folder's marker, keeping any other MCP
 * servers already in ./.mcp.json.
 */
export async function wireFolder(input: Bound & { dir: string }): Promise<{ workspaceId: string; marker: string; mcpUrl: string }> {
  const dir = path.resolve(input.dir);
  const url = normalizeUrl(input.url);
  const existing = findMarker(dir);
  const workspaceId = existing && existing.dir === dir && existing.workspaceId ? existing.workspaceId : newWorkspaceId();
  await updateBindings((bindings) => {
    bindings.workspaces[workspaceId] = {
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
  });
  const file = path.join(dir, MARKER);
  const marker = readMarker(file) ?? {};
  marker.mcpServers ??= {};
  marker.mcpServers[SERVER_NAME] = {
    type: "http",
    url: mcpUrlOf(url),
    headersHelper: `${launcherCommand()} mcp headers --workspace ${workspaceId}`,
  };
  const temp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temp, `${JSON.stringify(marker, null, 2)}\n`);
  fs.renameSync(temp, file);
  return { workspaceId, marker: file, mcpUrl: mcpUrlOf(url) };
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
