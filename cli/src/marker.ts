import fs from "node:fs";
import path from "node:path";
import { candidateDirs, readJsonFile } from "./folder.ts";

/**
 * The `retasc` server of a folder's `.mcp.json`: finding it, the form `retasc bind` writes, and
 * what in it would not work on another machine. Other servers in the file are kept as they are.
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

/** What this CLI reads of a `.mcp.json`; other servers in it are kept as they are. */
interface MarkerFile {
  mcpServers?: Record<string, MarkerServer>;
  [other: string]: unknown;
}

export const readMarker = (file: string): MarkerFile | null => readJsonFile(file) as MarkerFile | null;

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
