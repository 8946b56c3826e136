import { z } from "zod";
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import { jsonSchema, minSharedInputLength, shareRepeats } from "./json-schema.ts";
import { attachmentOutput, checkpointOutput, claimedIssueOutput, claimOutput, issueOutput, issueSummaryOutput } from "./outputs.ts";
import { priceNote } from "../usage/rate-card.ts";
import { publishedHints, type ToolDefinition } from "./tool.ts";
import { attachmentTools } from "./tools/attachments.ts";
import { collaborationTools } from "./tools/collaboration.ts";
import { identityTools } from "./tools/identity.ts";
import { graphTools, issueTools } from "./tools/issues.ts";
import { analyticsTools, queueTools, projectTools, rateCardOutput, usageTools } from "./tools/observability.ts";
import { connectorTools, memberTools } from "./tools/org.ts";
import { askHumanOutput, teamTools } from "./tools/team.ts";
import { importRunOutput, importTools } from "./tools/imports.ts";
import { workTools } from "./tools/work.ts";

export const serverInfo = { name: "retasc", title: "Retasc", version: "1.0.0" };

export const serverInstructions = [
  "Retasc is a work queue for coding agents. Start with whoami; setup_status says what to do next when unsure.",
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
  ...teamTools,
  ...queueTools,
  ...projectTools,
  ...usageTools,
  ...analyticsTools,
  ...importTools,
];

export const toolsByName: ReadonlyMap<string, ToolDefinition> = new Map(tools.map((tool) => [tool.name, tool]));

/**
 * The input schema. A tool without arguments publishes no empty `properties`, and a schema
 * repeated within one tool (a status enum taken alone or as a list) is published once, in
 * `definitions`. No `additionalProperties: false`: an argument the schema does not name is
 * refused by invokeTool, before any query, naming the accepted ones, as a long string is by its
 * cap (decisions 085 and 091); clients that build strict function definitions add it themselves,
 * as they must already for the nested objects (save_issue's evidence, run_import's mapping).
 */
export function inputJsonSchema(tool: ToolDefinition): Tool["inputSchema"] {
  const { properties, additionalProperties: _closed, ...rest } = jsonSchema(tool.input, "input");
  const named = properties && Object.keys(properties).length > 0 ? { properties } : {};
  return shareRepeats({ ...rest, type: "object", ...named }, minSharedInputLength) as Tool["inputSchema"];
}

/**
 * Shapes published in full by one tool only: the others that return them (save_issue, and each
 * claim, which nests the issue; claim_issue and next_batch, which return next_issue's claim;
 * the attachment tools, which return list_attachments' attachment; the checkpoint in a claim and
 * an issue; next_batch's peek, list_issues' summary; usage_summary's rate card, billing_summary's;
 * setup_status's askHuman, invite_member's; import_history's import runs, latest_import's)
 * publish `{ type: "object" }` there. The issue's schema is otherwise the largest part of
 * tools/list, six times over. The type checker still holds each handler to the full zod schema.
 */
export const publishedBy: ReadonlyMap<z.ZodObject, string> = new Map<z.ZodObject, string>([
  [issueOutput, "get_issue"],
  [claimedIssueOutput, "get_issue"],
  [claimOutput, "next_issue"],
  [attachmentOutput, "list_attachments"],
  [checkpointOutput, "checkpoint"],
  [issueSummaryOutput, "list_issues"],
  [rateCardOutput, "billing_summary"],
  [askHumanOutput, "invite_member"],
  [importRunOutput, "latest_import"],
]);

/**
 * What `structuredContent` holds on success: each field's type. Output schemas carry no
 * `required` (every field listed is present, null rather than missing, unless the reference
 * says optional), which also lets the error envelope of an `isError` result, `{ error }`,
 * conform without an error branch repeated in every tool: the SDK's client checks error
 * results against this schema too. docs/mcp-tools.md documents the envelope once.
 */
export function outputJsonSchema(tool: ToolDefinition): NonNullable<Tool["outputSchema"]> {
  const schema = jsonSchema(tool.output, "output", ({ zodSchema, jsonSchema: rendered }) => {
    const publisher = publishedBy.get(zodSchema as z.ZodObject);
    if (publisher === undefined || publisher === tool.name) return;
    for (const key of Object.keys(rendered)) delete rendered[key];
    rendered.type = "object";
  });
  return shareRepeats({ type: "object", ...schema });
}


const listed = new Map<boolean, Tool[]>();

/** A tool's description, ending with its price as charged when billing is on (server/usage/rate-card.ts priceNote). */
export function describedAs(tool: ToolDefinition, priced: boolean): string {
  const price = priced ? priceNote(tool.name) : null;
  return price ? `${tool.description} ${price}` : tool.description;
}

/**
 * The tools/list answer, built once per process (for billing on, `priced`, and off): it never
 * changes while the server runs. Without titles: the spec makes them optional, for display, with
 * the name shown instead, and a model reads nothing in them the name and description do not say;
 * docs/mcp-tools.md prints them (decision 052).
 */
export function listedTools(priced = false): Tool[] {
  let answer = listed.get(priced);
  if (!answer) {
    answer = tools.map((tool) => {
      const outputSchema = outputJsonSchema(tool);
      return {
        name: tool.name,
        description: describedAs(tool, priced),
        inputSchema: inputJsonSchema(tool),
        // `{type: "object"}` alone (a shape another tool publishes) checks nothing structuredContent does not already hold to.
        ...(Object.keys(outputSchema).length > 1 ? { outputSchema } : {}),
        annotations: publishedHints(tool.annotations),
      };
    });
    listed.set(priced, answer);
  }
  return answer;
}
