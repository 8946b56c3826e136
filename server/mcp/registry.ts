import { z } from "zod";
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
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
 * JSON Schema (draft 7, which the SDK's client validator speaks) without the `$schema`
 * marker. Rendered as "input" for both directions: output objects then stay open to
 * fields added later (zod's "output" rendering closes them), and no output schema uses
 * transforms or defaults, where the two renderings would differ.
 */
function jsonSchema(
  schema: z.ZodType,
  direction: "input" | "output",
  override?: (ctx: { zodSchema: unknown; jsonSchema: Record<string, unknown> }) => void,
) {
  const rendered = z.toJSONSchema(schema, { io: "input", target: "draft-7", unrepresentable: "any", ...(override ? { override } : {}) });
  const { $schema: _marker, ...rest } = compact(rendered, direction) as Record<string, unknown>;
  return rest;
}

/**
 * What tools/list publishes is read on every session, so it drops what tells neither a model
 * nor a validator anything: the ±2^53-1 bounds zod puts on every integer, regexes a `format`
 * already names or that spell out an identifier's shape (the field's name and description say
 * it, and the zod schema still checks every call), `additionalProperties: {}` (open is the
 * default), `propertyNames: {type: "string"}` (every key is one), a `type` beside a `const` (in outputs, beside an enum whose values all have it), and
 * `anyOf` of bare types (one `type` list says it); a nullable union is one `type` list beside
 * the other member's keywords.
 * Output schemas also lose their descriptions (they are for validators, and docs/mcp-tools.md
 * carries them) and `required` (outputJsonSchema says why).
 */
function compact(node: unknown, direction: "input" | "output"): unknown {
  if (Array.isArray(node)) return node.map((item) => compact(item, direction));
  if (!node || typeof node !== "object") return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === "minimum" && value === Number.MIN_SAFE_INTEGER) continue;
    if (key === "maximum" && value === Number.MAX_SAFE_INTEGER) continue;
    if (key === "maxLength" && typeof value === "number" && value >= maxPublishedLength) continue;
    if (key === "maxItems" && typeof value === "number" && value >= maxPublishedItems) continue;
    // The end of JavaScript's date range (a dueAt in epoch ms): a guard, not a deadline anyone sets.
    if (key === "maximum" && value === maxDateMs) continue;
    if (key === "pattern" && typeof value === "string" && ("format" in node || value.length > maxPublishedPattern)) continue;
    if (key === "additionalProperties" && isEmptyObject(value)) continue;
    // Every key of a JSON object is a string already.
    if (key === "propertyNames" && JSON.stringify(compact(value, direction)) === '{"type":"string"}') continue;
    if (key === "type" && "const" in node) continue;
    // An output's enum names every value, so a `type` its values all have adds nothing a validator checks.
    if (key === "type" && direction === "output" && enumOfType(node, value)) continue;
    if ((key === "description" || key === "required") && direction === "output") continue;
    out[key] =
      key === "properties"
        ? Object.fromEntries(Object.entries(value as object).map(([name, property]) => [name, compact(property, direction)]))
        : compact(value, direction);
  }
  // `{ anyOf: [{ type: "object", ... }, { type: "null" }] }` says no more than `type: ["object", "null"]`
  // beside the object's keywords, which apply to objects only; so for arrays, strings and numbers
  // with theirs. Not with an enum or a const, which would refuse the null.
  if (Array.isArray(out.anyOf) && out.anyOf.length === 2 && !("type" in out) && bareType(out.anyOf[1]) === "null") {
    const [first] = out.anyOf as Record<string, unknown>[];
    if (typeof first?.type === "string" && !("enum" in first) && !("const" in first)) {
      delete out.anyOf;
      Object.assign(out, first, { type: [first.type, "null"] });
    }
  }
  // A member that is itself a bare `anyOf` (a nullable union) adds its branches to this one.
  if (Array.isArray(out.anyOf)) {
    out.anyOf = (out.anyOf as Record<string, unknown>[]).flatMap((member) =>
      Object.keys(member).length === 1 && Array.isArray(member.anyOf) ? member.anyOf : [member],
    );
  }
  const types = Array.isArray(out.anyOf) ? out.anyOf.map(bareType) : [];
  if (!("type" in out) && types.length > 0 && types.every((type) => type !== undefined)) {
    delete out.anyOf;
    out.type = types.flat();
  }
  const hoisted = direction === "output" && (out.type === undefined || out.type === "object") ? typeOnceInUnion(out) : out;
  return direction === "output" && hoisted.properties ? foldProperties(hoisted) : hoisted;
}

/**
 * An output union of objects (next_issue's claim or its nothing-claimable reply, list_members'
 * person or agent) states `type: "object"` once, beside its `anyOf`: a validator checks the value
 * against both, so the members' own say nothing more (decision 091).
 */
function typeOnceInUnion(schema: Record<string, unknown>): Record<string, unknown> {
  const members = schema.anyOf as Record<string, unknown>[] | undefined;
  if (!Array.isArray(members) || !members.every((member) => member.type === "object")) return schema;
  return { ...schema, type: "object", anyOf: members.map(({ type: _object, ...member }) => member) };
}

/**
 * An output object's fields that share a schema (most are `{type: "string"}` or nullable) are
 * published as one `patternProperties` entry, `"^(title|branch)$": {type: "string"}`, which a
 * validator checks exactly as it checks `properties`: same names, same schema, the object still
 * open to fields added later. A field with a schema of its own stays in `properties` (decision 067).
 */
function foldProperties(node: Record<string, unknown>): Record<string, unknown> {
  const byShape = new Map<string, string[]>();
  for (const [name, schema] of Object.entries(node.properties as object)) {
    // A name with a regex metacharacter would need escaping in a pattern; ours are plain identifiers.
    const shape = /^\w+$/.test(name) ? JSON.stringify(schema) : `${name}\0${JSON.stringify(schema)}`;
    byShape.set(shape, [...(byShape.get(shape) ?? []), name]);
  }
  const properties: Record<string, unknown> = {};
  const patternProperties: Record<string, unknown> = {};
  for (const names of byShape.values()) {
    const schema = (node.properties as Record<string, unknown>)[names[0]!];
    if (names.length === 1) properties[names[0]!] = schema;
    else patternProperties[`^(${names.join("|")})$`] = schema;
  }
  const folded: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    if (key !== "properties") folded[key] = value;
    else {
      if (Object.keys(properties).length > 0) folded.properties = properties;
      if (Object.keys(patternProperties).length > 0) folded.patternProperties = patternProperties;
    }
  }
  return folded;
}
const enumOfType = (node: object, type: unknown) =>
  "enum" in node && Array.isArray(node.enum) && typeof type === "string" && node.enum.every((value) => jsonTypeOf(value) === type);
const jsonTypeOf = (value: unknown) => (value === null ? "null" : Number.isInteger(value) ? "integer" : typeof value);
const isEmptyObject = (value: unknown) => !!value && typeof value === "object" && Object.keys(value).length === 0;
/** The type(s) of a schema that says nothing else, like `{ type: "null" }`. */
const bareType = (schema: unknown) => {
  const keys = Object.keys(schema as object);
  return keys.length === 1 && keys[0] === "type" ? ((schema as { type: string | string[] }).type as string | string[]) : undefined;
};
const maxPublishedPattern = 24;
/**
 * A string's length cap from this size up is a guard against abuse, which no model's argument
 * comes near (a title's 500, a body's 100,000, an opaque id's 100): the zod schema still refuses
 * one past it, in words. Smaller caps say what a value is (a prefix's 10, a label's 64, a color's
 * 7) and stay (decisions 085 and 091).
 */
const maxPublishedLength = 100;
/** The same for a list's length: 50 labels, 100 blockers are guards; no call comes near them (decision 091). */
const maxPublishedItems = 50;
const maxDateMs = 8_640_000_000_000_000;

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
 * setup_status's askHuman, invite_member's)
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

/**
 * Moves each object or enum schema that occurs more than once (next_batch's claim, in two of its
 * branches; list_issues' status, alone or in a list) into `definitions`, referenced where it
 * stood, largest first.
 */
function shareRepeats(schema: Record<string, unknown>, minLength = minSharedLength): NonNullable<Tool["outputSchema"]> {
  const definitions: Record<string, unknown> = {};
  for (;;) {
    const seen = new Map<string, number>();
    const count = (node: unknown): void => {
      if (!node || typeof node !== "object") return;
      const type = (node as { type?: unknown }).type;
      if (!Array.isArray(node) && (type === "object" || (Array.isArray(type) && type.includes("object")) || "enum" in node)) {
        const text = JSON.stringify(node);
        seen.set(text, (seen.get(text) ?? 0) + 1);
      }
      Object.values(node).forEach(count);
    };
    count(schema);
    const repeated = [...seen].filter(([text, n]) => n > 1 && text.length >= minLength).sort((a, b) => b[0].length - a[0].length)[0];
    if (!repeated) break;
    const name = `d${Object.keys(definitions).length}`;
    definitions[name] = JSON.parse(repeated[0]);
    const replace = (node: unknown): unknown => {
      if (!node || typeof node !== "object") return node;
      if (JSON.stringify(node) === repeated[0]) return { $ref: `#/definitions/${name}` };
      if (Array.isArray(node)) return node.map(replace);
      return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, replace(value)]));
    };
    schema = replace(schema) as Record<string, unknown>;
  }
  return { ...schema, ...(Object.keys(definitions).length > 0 ? { definitions } : {}) } as NonNullable<Tool["outputSchema"]>;
}
const minSharedLength = 100;
/** Shorter input repeats pay too: `{"$ref":"#/definitions/d0"}` is about 10 tokens. */
const minSharedInputLength = 60;

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
