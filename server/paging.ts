import { z } from "zod";
import { invalidInput } from "./errors.ts";

/**
 * Every list a door answers is paged: at most `limit` items and at most REPLY_BUDGET_BYTES of
 * them, so no single reply, whatever an org or an outsider piled into one issue, can take a
 * server's memory or its event loop (issue 37: an 80 MB list_comments). A page that stops short
 * says where the next begins with an opaque `nextCursor`, which the caller sends back as `cursor`.
 */
export const REPLY_BUDGET_BYTES = 256 * 1024;

/** The arguments every paged list takes (additive: without them, the first page). */
export const pageArgs = {
  // No length in the schema (every token of tools/list counts): decodeCursor refuses a long one.
  cursor: z.string().optional(),
  limit: z.number().int().min(1).max(200).optional(),
};

/** An opaque cursor for a keyset position. */
export const encodeCursor = (position: Record<string, string | number>): string => Buffer.from(JSON.stringify(position)).toString("base64url");

/** The position a cursor names, or INVALID_INPUT when it is not one this list handed out. */
export function decodeCursor<T extends z.ZodType>(cursor: string | undefined, shape: T): z.infer<T> | null {
  if (cursor === undefined) return null;
  try {
    if (cursor.length > 200) throw new Error("too long");
    const parsed = shape.safeParse(JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")));
    if (parsed.success) return parsed.data;
  } catch {
    // refused below
  }
  throw invalidInput("cursor: not a cursor this list handed out", "Send back the nextCursor of the previous page unchanged, or leave cursor out for the first page.");
}

/**
 * How many of `sizes` (each item's bytes, in order) fit one reply: as many as the budget holds,
 * and always the first (one item alone is bounded by its own schema).
 */
export function fitting(sizes: number[], budget = REPLY_BUDGET_BYTES): number {
  let used = 0;
  for (let i = 0; i < sizes.length; i++) {
    used += sizes[i]!;
    if (used > budget && i > 0) return i;
  }
  return sizes.length;
}

const offsetCursor = z.object({ o: z.number().int().min(0) });

/** A cursor that is a position in a list whose order the caller cannot key on (dispatch order). */
export const positionOf = (cursor: string | undefined): number => decodeCursor(cursor, offsetCursor)?.o ?? 0;
export const cursorAt = (position: number): string => encodeCursor({ o: position });
