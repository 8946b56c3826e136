import type { Command, Option } from "./command.ts";

/** `retasc --help`: the commands that are not hidden, each with its summary, then the environment and output rules. */
export function overview(commands: Record<string, Command>): string {
  const names = Object.entries(commands).filter(([, c]) => !c.hidden);
  const width = Math.max(...names.map(([n]) => n.length));
  return [
    "retasc: connect coding agents to a Retasc work queue.",
    "",
    "Usage: retasc <command> [options]     retasc <command> --help",
    "",
    ...names.map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`),
    "",
    "Environment: RETASC_DIR (state, default ~/.retasc), RETASC_DEPLOYMENT_URL, RETASC_MCP_KEY (an",
    "explicit agent key, sent only to RETASC_MCP_URL, which must be exported with it: a key is refused when a",
    "folder's .mcp.json or other MCP client file sets either), RETASC_WORKSPACE (keystore entry),",
    "RETASC_HEARTBEAT_MS (how often `retasc mcp proxy` renews the claims made through it; default 600000).",
    "A key from the keystore goes only to the server it was bound with, whatever the environment or the folder says.",
    "Output: results on stdout (--json: the JSON alone), progress and warnings on stderr; NO_COLOR turns colour off.",
    "Errors print ✗ CODE: message and a hint on stderr and exit 1; a command line that is not understood exits 2.",
  ].join("\n");
}

/** `retasc <command> --help`: its usage, details and options. */
export function help(name: string, command: Command): string {
  const options = Object.entries(command.options);
  const width = Math.max(...options.map(([n, o]) => flagLabel(n, o).length), 10);
  return [
    `retasc ${name}: ${command.summary}`,
    "",
    `Usage: ${command.usage}`,
    ...(command.details ? ["", command.details] : []),
    "",
    "Options:",
    ...options.map(([n, o]) => `  ${flagLabel(n, o).padEnd(width)}  ${o.description}`),
    `  ${"-h, --help".padEnd(width)}  show this help`,
  ].join("\n");
}

const flagLabel = (name: string, option: Option): string => `${option.short ? `-${option.short}, ` : ""}--${name}${option.value ? ` ${option.value}` : ""}`;
