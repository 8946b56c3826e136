import { type Command, command, url, json, yes, transport } from "../command.ts";
import { mcpConfig, mcpHeaders, mcpInstall, mcpKey, mcpProxy } from "./mcp-wiring.ts";
import { hookPreCommit } from "./hook.ts";

/** The command table's part for the MCP client's side: install, config blocks, the key, and the proxy and headers helper .mcp.json runs. */
export const mcpCommands: Record<string, Command> = {
  "mcp install": command({
    summary: "wire this folder with a key you already have (from stdin or RETASC_MCP_KEY)",
    usage: "retasc mcp install [--scope project] [--transport <proxy|http>] [--url <url>] < key.txt",
    options: {
      scope: { type: "string", value: "project", description: "only project: a folder decides its org, so user scope is refused" },
      transport,
      yes,
      url,
      json,
    },
    details: "The key is never a flag: flags land in shell history and process lists.",
    run: mcpInstall,
  }),
  "mcp config": command({
    summary: "print config blocks for Codex, OpenCode, Cursor, Cline and Gemini",
    usage: "retasc mcp config [--json]",
    options: { json },
    run: mcpConfig,
  }),
  "mcp key": command({
    summary: "print this folder's key, for export RETASC_MCP_KEY=\"$(retasc mcp key)\" (with RETASC_MCP_URL)",
    usage: "retasc mcp key [--json]",
    options: { json },
    run: mcpKey,
  }),
  "mcp proxy": command({
    summary: "the stdio MCP server .mcp.json runs: relays to /mcp with this folder's key and heartbeats the claims made through it",
    usage: "retasc mcp proxy",
    options: {},
    hidden: true,
    details:
      "Heartbeats every claim taken through it every RETASC_HEARTBEAT_MS (default 600000, 10 minutes) while the agent that started it runs; when the agent exits or is killed its stdin closes, the proxy exits and the leases lapse as they should.",
    run: mcpProxy,
  }),
  "hook pre-commit": command({
    summary: "the git pre-commit check bind installs: refuses a commit whose .mcp.json, .retasc.json or other MCP client file holds an agent key",
    usage: "retasc hook pre-commit",
    options: {},
    hidden: true,
    details:
      "Reads what is staged (not the working files) of .retasc.json and the MCP client files (.mcp.json, .cursor/mcp.json, .gemini/settings.json, .vscode/mcp.json, opencode.json, .codex/config.toml, .claude/settings*.json) anywhere in the repository, " +
      "and exits 1 with KEY_IN_COMMIT naming each file that holds a key (rtsc_… or rtci_…), never the key. `retasc bind` writes .git/hooks/pre-commit to run it; a repository with a pre-commit hook of its own adds this line to it.",
    run: hookPreCommit,
  }),
  "mcp headers": command({
    summary: "the headersHelper Claude Code runs: prints the Authorization header as JSON",
    usage: "retasc mcp headers",
    options: { workspace: { type: "string", value: "<id>", description: "the keystore entry to read (markers written by earlier versions name one)" } },
    hidden: true,
    run: mcpHeaders,
  }),
};
