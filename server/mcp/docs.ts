import path from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { toolErrorSchema } from "./errors.ts";
import { describedAs, inputJsonSchema, publishedBy, serverInfo, tools } from "./registry.ts";
import { toolGroups, type ToolDefinition } from "./tool.ts";

/**
 * docs/mcp-tools.md, rendered from the tool registry so the reference cannot drift from
 * what tools/list serves. `npm run docs:mcp` writes it; a test fails when it is stale.
 */
export const mcpToolsDocPath = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../docs/mcp-tools.md");

type JsonSchema = {
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  items?: JsonSchema;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  description?: string;
  default?: unknown;
  minimum?: number;
  maximum?: number;
};

function typeOf(schema: JsonSchema): string {
  if (schema.enum) return schema.enum.map((v) => JSON.stringify(v)).join(" \\| ");
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (schema.anyOf) return schema.anyOf.map(typeOf).join(" \\| ");
  if (schema.type === "array") {
    const item = schema.items ? typeOf(schema.items) : "unknown";
    return item.includes("|") ? `(${item})[]` : `${item}[]`;
  }
  if (Array.isArray(schema.type)) return schema.type.join(" \\| ");
  if (schema.type === "integer" && schema.minimum !== undefined && schema.maximum !== undefined && schema.maximum < 1e6) {
    return `integer ${schema.minimum}..${schema.maximum}`;
  }
  return schema.type ?? "any";
}

const cell = (text: string) => text.replace(/\|/g, "\\|").replace(/\n/g, " ");

function argumentsTable(tool: ToolDefinition): string[] {
  const schema = inputJsonSchema(tool) as JsonSchema;
  const properties = Object.entries(schema.properties ?? {});
  if (properties.length === 0) return ["No arguments."];
  const required = new Set(schema.required ?? []);
  const lines = ["| argument | type | required | notes |", "|---|---|---|---|"];
  for (const [name, property] of properties) {
    const notes = [property.description, property.default !== undefined ? `default ${JSON.stringify(property.default)}` : undefined]
      .filter(Boolean)
      .join("; ");
    lines.push(`| \`${name}\` | ${typeOf(property)} | ${required.has(name) ? "yes" : "no"} | ${cell(notes)} |`);
  }
  return lines;
}

/** A field's description, also when it sits on the schema a `.nullable()` or `.optional()` wraps. */
function describe(field: z.ZodType): string | undefined {
  if (field.description) return field.description;
  const publisher = publishedBy.get(field as z.ZodObject);
  if (publisher) return `the object ${publisher} returns`;
  return field instanceof z.ZodNullable || field instanceof z.ZodOptional ? describe(field.unwrap() as z.ZodType) : undefined;
}

/** The result's fields with their descriptions, which the compact output schemas in tools/list leave out. */
function resultFields(tool: ToolDefinition): string[] {
  const variants = (tool.output instanceof z.ZodUnion ? tool.output.options : [tool.output]) as z.ZodType[];
  return variants.flatMap((variant, index) => {
    const lead = variants.length > 1 ? `Result, form ${index + 1} of ${variants.length}:` : "Result:";
    if (!(variant instanceof z.ZodObject)) return [lead, "", "- a value", ""];
    const fields = Object.entries(variant.shape as Record<string, z.ZodType>).map(([key, field]) => {
      const note = describe(field);
      return `- \`${key}\`${field instanceof z.ZodOptional ? " (optional)" : ""}${note ? `: ${note}` : ""}`;
    });
    return [lead, "", ...fields, ""];
  });
}

function hints(tool: ToolDefinition): string {
  const a = tool.annotations;
  return `readOnly ${a.readOnlyHint}, destructive ${a.destructiveHint}, idempotent ${a.idempotentHint}, openWorld ${a.openWorldHint}`;
}

export function renderToolReference(): string {
  const errorCodes = (toolErrorSchema.shape.error.shape.code.options as string[]).map((c) => `\`${c}\``).join(", ");
  const lines = [
    "# MCP tool reference",
    "",
    "<!-- Generated from server/mcp/registry.ts by `npm run docs:mcp`. Do not edit by hand. -->",
    "",
    `The ${serverInfo.title} MCP server answers \`POST /mcp\` (Streamable HTTP, JSON responses, stateless) and ` +
      "needs `Authorization: Bearer rtsc_...`, an agent key, or an OAuth access token (MCP sign-in, docs/decisions/020); " +
      "without a valid one the answer is 401 with `WWW-Authenticate` naming the protected resource metadata. " +
      "The key (for a token: the key its approval minted) decides the org, the human principal, the project and the runtime.",
    "",
    `There are ${tools.length} tools. Each returns \`structuredContent\` matching its output schema. tools/list ` +
      "publishes the schemas compactly, since agents read it on every session (docs/decisions/012): output schemas " +
      "give each field's type, without descriptions (the results below carry them) and without `required` (every " +
      "field listed is present, null rather than missing, unless it says otherwise), fields of one type named together " +
      "in a `patternProperties` pattern like `^(title|branch)$` (docs/decisions/067), and a claim's `issue` (like " +
      "save_issue's result) is an object whose full schema is get_issue's. Issues are addressed by identifier, " +
      "like `RTSC-42`.",
    "",
    "**Prices** (each metered tool's \"Costs …\") apply when the server runs with billing on (`RETASC_BILLING=on`), " +
      "as tools/list then says; a call is charged once, only when it is accepted and writes, and reads are free. " +
      "With billing off nothing is charged and tools/list names no price.",
    "",
    "**Errors** come back as tool results with `isError: true` and " +
      "`structuredContent: { error: { code, message, hint, tellHuman?, details? } }`. Act on `hint`; relay " +
      `\`tellHuman\` to your human verbatim. Codes: ${errorCodes}. Malformed JSON-RPC, an unknown tool, an oversized ` +
      "body (413) or a foreign `Origin` (403) get protocol errors instead.",
    "",
    `**Where a write landed**: a success of ${tools.filter((tool) => tool.landsIn).map((tool) => `\`${tool.name}\``).join(", ")} ` +
      "that landed something (a claim, an issue, a comment, a placeholder) has a second text block after the JSON, " +
      "naming the org and project, like `— in Acme / Web` (another project than the key's by its prefix; " +
      "`— in Acme, org-wide` for a placeholder), so a transcript shows where it went. `structuredContent` has " +
      "no such field (docs/decisions/080).",
    "",
    "**The handshake**: `initialize`'s `instructions` give the loop every agent follows, then where this key " +
      "works and what `setup_status` answers now, like `This key works in Acme / WEB. setup_status now: READY. " +
      "Ready: next_issue takes the most urgent work; …`, so an agent knows both before its first call.",
  ];
  for (const group of toolGroups) {
    const inGroup = tools.filter((tool) => tool.group === group);
    if (inGroup.length === 0) continue;
    lines.push("", `## ${group[0]!.toUpperCase()}${group.slice(1)}`);
    for (const tool of inGroup) {
      lines.push(
        "",
        `### ${tool.name}`,
        "",
        `*${tool.title}.* ${describedAs(tool, true)}`,
        "",
        `Hints: ${hints(tool)}.`,
        "",
        ...argumentsTable(tool),
        "",
        ...resultFields(tool).slice(0, -1),
      );
    }
  }
  lines.push("");
  return lines.join("\n");
}
