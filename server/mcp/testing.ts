import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { Services } from "../context.ts";
import { createLogger } from "../log.ts";
import { handleMcpRequest } from "./http.ts";

/** Test helpers: the official SDK client talking to /mcp, in process or over real HTTP. */
export const inProcessOrigin = "http://retasc.test";

/** Sends requests straight to the /mcp handler: the whole protocol path without a socket. */
export function inProcessFetch(services: Services): typeof fetch {
  const log = createLogger("silent");
  return async (url, init) => handleMcpRequest(new Request(url, init), { services, log });
}

export async function connectClient(
  endpoint: string,
  key: string,
  options: { fetch?: typeof fetch; name?: string } = {},
): Promise<Client> {
  const client = new Client({ name: options.name ?? "retasc-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(endpoint), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  await client.connect(transport);
  return client;
}

/** Calls a tool and returns its structuredContent, failing loudly on an error result. */
export async function callOk<T = Record<string, any>>(client: Client, name: string, args: Record<string, unknown> = {}): Promise<T> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  if (result.isError) throw new Error(`${name} failed: ${JSON.stringify(result.structuredContent)}`);
  return result.structuredContent as T;
}

/** Calls a tool expected to be refused and returns its error envelope. */
export async function callError(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<{ code: string; message: string; hint: string; tellHuman?: string; details?: Record<string, unknown> }> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  if (!result.isError) throw new Error(`${name} unexpectedly succeeded: ${JSON.stringify(result.structuredContent)}`);
  return (result.structuredContent as { error: any }).error;
}
