import { z } from "zod";
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import { toolErrorSchema } from "./errors.ts";
import type { ToolDefinition } from "./tool.ts";
import { attachmentTools } from "./tools/attachments.ts";
import { collaborationTools } from "./tools/collaboration.ts";
import { identityTools } from "./tools/identity.ts";
import { graphTools, issueTools } from "./tools/issues.ts";
import { queueTools, projectTools, usageTools } from "./tools/observability.ts";
import { connectorTools, memberTools } from "./tools/org.ts";
import { workTools } from "./tools/work.ts";

export const serverInfo = { name: "retasc", title: "Retasc", version: "1.0.0" };

export const serverInstructions = [
  "Retasc is a work queue for coding agents. Start with whoami.",
  "The loop: next_issue claims the most urgent unblocked issue for you and returns a claimToken and a branch;",
  "heartbeat (or checkpoint) before the lease expires; checkpoint what you did, what is next and any gotchas;",
  "finish with save_issue (status done, or review with a reviewer as assignee) passing the claimToken,",
  "or give the work back with release_issue. A refused call returns isError with error.code and a hint to act on;",
  "relay error.tellHuman to your human verbatim.",
].join(" ");

/** Every tool, group by group in the order of toolGroups (tool.ts), as tools/list and docs/mcp-tools.md list them. */
export const tools: readonly ToolDefinition[] = [
  ...identityTools,
  ...workTools,
  ...issueTools,
  ...graphTools,
  ...collaborationTools,
  ...attachmentTools,
  ...memberTools,
  ...connectorTools,
  ...queueTools,
  ...projectTools,
  ...usageTools,
];

export const toolsByName: ReadonlyMap<string, ToolDefinition> = new Map(tools.map((tool) => [tool.name, tool]));

/**
 * JSON Schema (draft 7, which the SDK's client validator speaks) without the `$schema`
 * marker. Rendered as "input" for both directions: output objects then stay open to
 * fields added later (zod's "output" rendering closes them), and no output schema uses
 * transforms or defaults, where the two renderings would differ.
 */
function jsonSchema(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _marker, ...rest } = z.toJSONSchema(schema, { io: "input", target: "draft-7", unrepresentable: "any" });
  return rest;
}

/** The input schema; arguments it does not name are refused, so it says so. */
export function inputJsonSchema(tool: ToolDefinition): Tool["inputSchema"] {
  return { ...jsonSchema(tool.input), type: "object", additionalProperties: false };
}

/** What `structuredContent` holds: the tool's result, or on `isError` the error envelope. */
export function outputJsonSchema(tool: ToolDefinition): NonNullable<Tool["outputSchema"]> {
  return { type: "object", ...jsonSchema(z.union([tool.output, toolErrorSchema])) };
}

let listed: Tool[] | undefined;

/** The tools/list answer, built once per process: it never changes while the server runs. */
export function listedTools(): Tool[] {
  listed ??= tools.map((tool) => ({
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: inputJsonSchema(tool),
    outputSchema: outputJsonSchema(tool),
    annotations: { title: tool.title, ...tool.annotations },
  }));
  return listed;
}
