import { z } from "zod";
import type { Tool } from "@modelcontextprotocol/sdk/types.js";

/** How a tool's zod schemas are rendered for tools/list: JSON Schema, compacted, repeats shared (./registry.ts publishes them). */

/**
 * JSON Schema (draft 7, which the SDK's client validator speaks) without the `$schema`
 * marker. Rendered as "input" for both directions: output objects then stay open to
 * fields added later (zod's "output" rendering closes them), and no output schema uses
 * transforms or defaults, where the two renderings would differ.
 */
export function jsonSchema(
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
 * carries them) and `required` (outputJsonSchema in ./registry.ts says why).
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
 * Moves each object or enum schema that occurs more than once (next_batch's claim, in two of its
 * branches; list_issues' status, alone or in a list) into `definitions`, referenced where it
 * stood, largest first.
 */
export function shareRepeats(schema: Record<string, unknown>, minLength = minSharedLength): NonNullable<Tool["outputSchema"]> {
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
export const minSharedInputLength = 60;
