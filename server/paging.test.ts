import { describe, expect, it } from "vitest";
import { z } from "zod";
import { cursorAt, decodeCursor, encodeCursor, fitting, positionOf } from "./paging.ts";

describe("paging", () => {
  it("hands out cursors it reads back, and refuses one it did not hand out", () => {
    expect(positionOf(cursorAt(450))).toBe(450);
    expect(positionOf(undefined)).toBe(0);
    expect(() => positionOf("not-a-cursor")).toThrow(/cursor: not a cursor this list handed out/);
    expect(() => positionOf("x".repeat(300))).toThrow(/cursor/);
    expect(() => decodeCursor(encodeCursor({ o: 1 }), z.object({ t: z.string() }))).toThrow(/cursor/);
  });

  it("fitting keeps the first item whatever its size", () => {
    expect(fitting([10, 10, 10], 25)).toBe(2);
    expect(fitting([100, 10], 25)).toBe(1);
    expect(fitting([], 25)).toBe(0);
  });
});
