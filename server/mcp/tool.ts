import type { z } from "zod";
import type { Ctx } from "../context.ts";
import type { MeterTier } from "../usage/rate-card.ts";

export const toolGroups = [
  "identity",
  "work loop",
  "issues",
  "graph",
  "collaboration",
  "attachments",
  "org",
  "observability",
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
 * How billing treats a tool. `read`: never metered, never refused for billing.
 * `write`: metered and refused when the org has no credit. `wind-down`: metered but
 * always allowed, so a lapsed org can still let go of work cleanly.
 */
export type BillingAccess = "read" | "write" | "wind-down";

export interface Charge {
  tier: MeterTier;
  units: number;
}

/**
 * What a successful call is metered as, logged with each call (`charge`) for the usage figures.
 * Nothing is charged yet, so no description names a price. `charge` refines it per call (free
 * empty polls, per-issue batches).
 */
export interface Metering<I extends z.ZodObject, O extends z.ZodType> {
  tier: MeterTier;
  charge?(input: z.output<I>, output: z.output<O>): Charge | null;
}

/**
 * One MCP tool. The input schema is the service's own zod schema (defined once in
 * server/), the output schema describes `structuredContent` on success. The handler
 * only calls server/ functions; the invoke wrapper does auth context, logging,
 * metering and error translation around it.
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
  access: BillingAccess;
  /** null for reads, which are free. */
  meter: Metering<I, O> | null;
  /** Gets the arguments as the input schema parsed them (defaults applied, unknown keys refused). */
  handler(ctx: Ctx, input: z.output<I>): Promise<z.input<O>>;
}

/** Keeps each tool's handler typed against its own schemas while the registry holds them together. */
export function defineTool<I extends z.ZodObject, O extends z.ZodType>(tool: ToolDefinition<I, O>): ToolDefinition {
  return tool as unknown as ToolDefinition;
}

export function chargeOf(tool: ToolDefinition, input: unknown, output: unknown): Charge | null {
  if (!tool.meter) return null;
  return tool.meter.charge ? tool.meter.charge(input as never, output as never) : { tier: tool.meter.tier, units: 1 };
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
/** Reads: change nothing. */
export const readOnly = hints(true, false, true);
/**
 * Adds or edits something (a claim, a comment, a key, an issue); calling again adds or edits
 * again. Not destructive: an edit destroys nothing a client should confirm first.
 */
export const additiveWrite = hints(false, false, false);
/** Adds, renews or gives back without losing anything (a release keeps the checkpoint); calling again changes nothing more. */
export const idempotentWrite = hints(false, false, true);
/** Removes or revokes (a relation, a key, a person's access): the one kind a client should confirm; calling again finds it already gone. */
export const idempotentDestructiveWrite = hints(false, true, true);
