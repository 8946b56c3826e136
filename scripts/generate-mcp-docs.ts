// Writes docs/mcp-tools.md from the MCP tool registry (`npm run docs:mcp`).
import fs from "node:fs";
import { mcpToolsDocPath, renderToolReference } from "../server/mcp/docs.ts";

fs.writeFileSync(mcpToolsDocPath, renderToolReference());
process.stdout.write(`wrote ${mcpToolsDocPath}\n`);
