import fs from "node:fs";
import path from "node:path";
import { normalizeUrl, serverCli } from "./api.ts";
import { mcpUrlOf } from "./binding.ts";
import { installCommitCheck, type CommitCheck } from "./commit-check.ts";
import { findProjectFile, PROJECT_FILE, readJsonFile, type ProjectFile } from "./folder.ts";
import { MARKER, markerServer, readMarker, SERVER_NAME, type Transport } from "./marker.ts";
import { newWorkspaceId, updateBindings, type Workspace } from "./store.ts";

/**
 * Writing a binding: the keystore entry and the folder's two files (`retasc bind`, `join`,
 * `init`, `mcp install`), the prefix they name after a rename, and the config blocks printed for
 * the other MCP clients.
 */
/** What a folder is bound with: the key, and the org and project it works in. */
export type Bound = Omit<Workspace, "path" | "boundAt">;

/** The other MCP clients `retasc bind` prints config blocks for. */
export type McpClient = "codex" | "opencode" | "cursor" | "cline" | "gemini";

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
