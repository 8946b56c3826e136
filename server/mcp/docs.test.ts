import fs from "node:fs";
import { expect, test } from "vitest";
import { mcpToolsDocPath, renderToolReference } from "./docs.ts";

test("docs/mcp-tools.md is what the registry renders (run `npm run docs:mcp` after changing a tool)", () => {
  const committed = fs.existsSync(mcpToolsDocPath) ? fs.readFileSync(mcpToolsDocPath, "utf8") : "";
  expect(committed === renderToolReference(), "docs/mcp-tools.md is stale: run `npm run docs:mcp`").toBe(true);
});
