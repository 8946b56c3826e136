/**
 * The floor of the MCP stack (bench/mcp-floor.ts): the official SDK's stateless Streamable HTTP
 * server on node:http, a fresh McpServer and transport per request as Retasc's /mcp is served,
 * answering one tool that does nothing. No auth, no database: what any MCP server on this
 * machine pays per call. `PORT` says where; it prints "listening" when ready.
 */
import http from "node:http";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";

const server = http.createServer((req, res) => {
  const mcp = new McpServer({ name: "floor", version: "1.0.0" });
  mcp.registerTool("noop", { description: "Does nothing." }, async () => ({ content: [{ type: "text", text: "ok" }] }));
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on("close", () => {
    void transport.close();
    void mcp.close();
  });
  mcp
    .connect(transport)
    .then(() => transport.handleRequest(req, res))
    .catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
    });
});
server.listen(Number(process.env.PORT), "127.0.0.1", () => process.stdout.write("listening\n"));
