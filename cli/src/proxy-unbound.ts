import type { CliError } from "./errors.ts";
import { cliVersion } from "./version.ts";

/**
 * `retasc mcp proxy` in a folder that is not bound: what `retasc setup` wires at user level runs
 * in every folder a harness opens, bound or not. Here there is no key and no origin to send one
 * to, so the proxy answers on its own over stdio and opens no connection: `initialize` (whose
 * instructions say the folder is not bound and what to run), `tools/list` with one tool,
 * `setup_status` (the server's name for "where does setup stand"), and any tool call with
 * NOT_BOUND, in the server's refusal shape. Nothing leaves the machine, so no key goes anywhere
 * (decisions 037, 056).
 */
export const UNBOUND_STATE = "NOT_BOUND";

/** What the agent is told, from the refusal `requireBinding` gave for this folder (one home for its wording). */
export function unboundAnswer(folder: string, refusal: CliError) {
  const next = `This folder (${folder}) is not bound to a Retasc project, so no key is sent anywhere. Tell your human: ${refusal.hint ?? "run `retasc bind` here."} Then restart the agent.`;
  return { state: UNBOUND_STATE, next, folder };
}

export async function runUnboundProxy(folder: string, refusal: CliError, log: (line: string) => void): Promise<void> {
  const [{ Server }, { StdioServerTransport }, { CallToolRequestSchema, ListToolsRequestSchema }] = await Promise.all([
    import("@modelcontextprotocol/sdk/server/index.js"),
    import("@modelcontextprotocol/sdk/server/stdio.js"),
    import("@modelcontextprotocol/sdk/types.js"),
  ]);
  const answer = unboundAnswer(folder, refusal);
  log(`retasc mcp proxy: ✗ ${refusal.code}: ${refusal.message}; answering here, keyless (setup_status only), until \`retasc bind\` is run in ${folder}`);
  const server = new Server(
    { name: "retasc", version: cliVersion() },
    { capabilities: { tools: {} }, instructions: `Retasc: ${answer.next} Until then only setup_status answers.` },
  );
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: [
      {
        name: "setup_status",
        title: "Setup status",
        description: "Call when unsure what to do next: where setup stands and what to do. In this folder: not bound yet.",
        inputSchema: { type: "object" as const, properties: {} },
        outputSchema: {
          type: "object" as const,
          properties: { state: { type: "string" }, next: { type: "string" }, folder: { type: "string" } },
          required: ["state", "next", "folder"],
        },
        annotations: { readOnlyHint: true, openWorldHint: false },
      },
    ],
  }));
  server.setRequestHandler(CallToolRequestSchema, (request) => {
    if (request.params.name === "setup_status") return { content: [{ type: "text" as const, text: JSON.stringify(answer) }], structuredContent: answer };
    const error = { code: UNBOUND_STATE, message: `${request.params.name} needs a bound folder: ${folder} is not bound to a Retasc project`, hint: answer.next };
    return { isError: true, content: [{ type: "text" as const, text: JSON.stringify({ error }) }], structuredContent: { error } };
  });
  const transport = new StdioServerTransport();
  const done = new Promise<void>((resolve) => {
    server.onclose = resolve;
    process.stdin.once("end", resolve);
    process.stdin.once("close", resolve);
    for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.once(signal, () => resolve());
  });
  await server.connect(transport);
  await done;
  await server.close().catch(() => {});
}
