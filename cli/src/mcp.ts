import { CliError } from "./errors.ts";

/** How a tool refuses: `structuredContent: { error: { code, message, hint, tellHuman?, details? } }`. */
interface ToolError {
  error?: { code?: string; message: string; hint?: string; tellHuman?: string; details?: Record<string, unknown> };
}

/** Calls one MCP tool; `T` is the tool's structuredContent. */
export type CallTool = <T>(name: string, args?: Record<string, unknown>) => Promise<T>;

/**
 * Runs `work` with an MCP client connected to the deployment's /mcp endpoint with the
 * folder's agent key: the same door, tools and rules as any agent.
 */
export async function withMcp<T>(binding: { mcpUrl: string; key: string }, work: (call: CallTool) => Promise<T>): Promise<T> {
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
        if (e?.code) throw new CliError(e.code, e.message, e.tellHuman ? `${e.hint} ${e.tellHuman}` : e.hint, e.details);
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
