import type { z } from "zod";
import type { Ctx } from "../context.ts";
import type { Landing } from "./footer.ts";

export const toolGroups = [
  "identity",
  "work loop",
  "issues",
  "graph",
  "collaboration",
  "attachments",
  "org",
  "team",
  "observability",
  "import",
] as const;
export type ToolGroup = (typeof toolGroups)[number];

/** All four hints are set on every tool: MCP's defaults (destructive, open world) are wrong for most of ours. */
export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

/**
 * One MCP tool. The input schema is the service's own zod schema (defined once in
 * server/), the output schema describes `structuredContent` on success. The handler
 * only calls server/ functions; the invoke wrapper does auth context, logging and error
 * translation around it. Metering is the services' (server/usage: each tool's tier is in the
 * rate card, charged in the write's own transaction), so every door pays the same.
 */
export interface ToolDefinition<I extends z.ZodObject = z.ZodObject, O extends z.ZodType = z.ZodType> {
  name: string;
  title: string;
  group: ToolGroup;
  /** For the agent: what it does and when to call it. */
  description: string;
  input: I;
  output: O;
  annotations: ToolAnnotations;
  /** Gets the arguments as the input schema parsed them (defaults applied, unknown keys refused). */
  handler(ctx: Ctx, input: z.output<I>): Promise<z.input<O>>;
  /**
   * For a write a person could be wrong about: where this reply says it landed, which the text
   * agents read ends with (a footer naming the org and project, ./footer.ts); null: nothing landed.
   */
  landsIn?(output: z.input<O>): Landing | null;
}

/** Keeps each tool's handler typed against its own schemas while the registry holds them together. */
export function defineTool<I extends z.ZodObject, O extends z.ZodType>(tool: ToolDefinition<I, O>): ToolDefinition {
  return tool as unknown as ToolDefinition;
}

/**
 * The hint sets our tools use, named for what a repeated call does. None reaches outside the
 * deployment (openWorldHint false): every tool acts on this server's own data.
 */
const hints = (readOnly: boolean, destructive: boolean, idempotent: boolean): ToolAnnotations => ({
  readOnlyHint: readOnly,
  destructiveHint: destructive,
  idempotentHint: idempotent,
  openWorldHint: false,
});
/**
 * The hints as tools/list publishes them: a hint equal to the MCP spec's default is left out
 * (readOnlyHint false, idempotentHint false, openWorldHint true), as are destructiveHint and
 * idempotentHint on a read, which the spec gives meaning only on writes. A client reads the same
 * hints for ~10 tokens less per tool on every session (decision 029).
 */
export function publishedHints(annotations: ToolAnnotations): Partial<ToolAnnotations> {
  const published: Partial<ToolAnnotations> = {};
  if (annotations.readOnlyHint) published.readOnlyHint = true;
  else {
    // Kept even where it equals the default (true), so a client that reads a missing hint as false still confirms a removal.
    published.destructiveHint = annotations.destructiveHint;
    if (annotations.idempotentHint) published.idempotentHint = true;
  }
  if (annotations.openWorldHint === false) published.openWorldHint = false;
  return published;
}

/** Reads: change nothing. */
export const readOnly = hints(true, false, true);
/**
 * Adds or edits something (a claim, a comment, a key, an issue); calling again adds or edits
 * again. Not destructive: an edit destroys nothing a client should confirm first.
 */
export const additiveWrite = hints(false, false, false);
/** Adds, renews or gives back without losing anything (a release keeps the checkpoint); calling again changes nothing more. */
export const idempotentWrite = hints(false, false, true);
/**
 * Reads from a tracker outside this server (openWorldHint true, the spec's default) and may add
 * a project and its issues here (run_import); calling again starts another run, which reconciles.
 */
export const outsideWrite: ToolAnnotations = { ...additiveWrite, openWorldHint: true };
/** Removes or revokes (a relation, a key, a person's access): the one kind a client should confirm; calling again finds it already gone. */
export const idempotentDestructiveWrite = hints(false, true, true);
