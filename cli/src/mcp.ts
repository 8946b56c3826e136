import { CliError } from "./errors.ts";

/** How a tool refuses: `structuredContent: { error: { code, message, hint, tellHuman?, details? } }`. */
interface ToolError {
  error?: { code?: string; message: string; hint?: string; tellHuman?: string; details?: Record<string, unknown> };
}

/** The CLI command that does what a tool does, for hints written to agents. */
const COMMAND_OF: Record<string, string> = {
  next_issue: "retasc next",
  claim_issue: "retasc claim",
  check_claim: "retasc check-claim",
  heartbeat: "retasc heartbeat",
  checkpoint: "retasc checkpoint",
  release_issue: "retasc release",
  get_issue: "retasc issue show",
  list_issues: "retasc issue list",
};

/**
 * A server hint as a CLI user reads it: tool names as the commands that do the same
 * ("call heartbeat" → "run `retasc heartbeat`"), and example identifiers in the folder's prefix.
 */
export function cliHint(text: string, prefix: string | undefined): string {
  return text
    .replace(/\b([Cc])all (heartbeat|checkpoint|[a-z]+_[a-z_]+)\b/g, (whole, c: string, tool: string) => (COMMAND_OF[tool] ? `${c === "C" ? "Run" : "run"} \`${COMMAND_OF[tool]}\`` : whole))
    .replace(/\b(next_issue|claim_issue|check_claim|release_issue|get_issue|list_issues)\b/g, (tool: string) => `\`${COMMAND_OF[tool]}\``)
    .replace(/\bRTSC-(\d+)\b/g, `${prefix ?? "PFX"}-$1`);
}

/** Calls one MCP tool; `T` is the tool's structuredContent. */
export type CallTool = <T>(name: string, args?: Record<string, unknown>) => Promise<T>;

/**
 * Runs `work` with an MCP client connected to the deployment's /mcp endpoint with the
 * folder's agent key: the same door, tools and rules as any agent.
 */
export async function withMcp<T>(binding: { mcpUrl: string; key: string; workspace?: { prefix: string } | null }, work: (call: CallTool) => Promise<T>): Promise<T> {
  // Loaded on use: most commands never talk MCP, and the SDK is the slowest import.
  const [{ Client }, { StreamableHTTPClientTransport }] = await Promise.all([
    import("@modelcontextprotocol/sdk/client/index.js"),
    import("@modelcontextprotocol/sdk/client/streamableHttp.js"),
  ]);
  const client = new Client({ name: "retasc-cli", version: "0.1.0" });
  const transport = new StreamableHTTPClientTransport(new URL(binding.mcpUrl), {
    requestInit: { headers: { authorization: `Bearer ${binding.key}` } },
  });
  try {
    await client.connect(transport);
  } catch (error) {
    throw connectError(binding.mcpUrl, error as Error);
  }
  try {
    return await work(async <R>(name: string, args: Record<string, unknown> = {}) => {
      const result = await client.callTool({ name, arguments: args });
      if (result.isError) {
        const e = (result.structuredContent as ToolError | undefined)?.error;
        const hint = e?.tellHuman ? `${e.hint} ${e.tellHuman}` : e?.hint;
        if (e?.code) throw new CliError(e.code, e.message, hint === undefined ? undefined : cliHint(hint, binding.workspace?.prefix), e.details);
        throw new CliError("UNAVAILABLE", `${name} failed`, "Try again.");
      }
      return result.structuredContent as R;
    });
  } finally {
    await client.close().catch(() => {});
  }
}

function connectError(url: string, error: Error): CliError {
  const text = String(error.message ?? error);
  if (/401|unauthori[sz]ed|invalid_token/i.test(text)) {
    return new CliError("UNAUTHORIZED", "the server refused this folder's agent key (revoked, or its member suspended)", "Bind the folder again: `retasc bind`.");
  }
  if (/fetch failed|ECONNREFUSED|ENOTFOUND/i.test(text)) {
    return new CliError("UNAVAILABLE", `cannot reach ${url}`, "Is the server running? Check the folder's binding (`retasc whoami`).");
  }
  return new CliError("UNAVAILABLE", `could not connect to ${url}: ${text}`, "Check RETASC_MCP_URL and the server's health.");
}
