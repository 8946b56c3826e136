import { describe, expect, it } from "vitest";
import { fitting, pageOf, REPLY_BUDGET_BYTES } from "./paging.ts";

describe("pageOf", () => {
  it("pages a list by count and by bytes, each item once, and refuses a cursor it did not hand out", () => {
    const items = Array.from({ length: 450 }, (_, i) => ({ i, text: i % 100 === 0 ? "z".repeat(200_000) : "short" }));
    const seen: number[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const { page, nextCursor } = pageOf(items, cursor);
      expect(page.length).toBeLessThanOrEqual(200);
      // One item over the budget alone still goes out; otherwise a page stays within it.
      if (page.length > 1) expect(JSON.stringify(page).length).toBeLessThanOrEqual(REPLY_BUDGET_BYTES + page.length);
      seen.push(...page.map((p) => p.i));
      cursor = nextCursor;
      pages++;
    } while (cursor);
    expect(seen).toEqual(items.map((p) => p.i));
    expect(pages).toBeGreaterThan(3);
    expect(pageOf([1, 2, 3], undefined)).toEqual({ page: [1, 2, 3] });
    expect(() => pageOf(items, "not-a-cursor")).toThrow(/cursor: not a cursor this list handed out/);
    expect(() => pageOf(items, "x".repeat(300))).toThrow(/cursor/);
  });

  it("fitting keeps the first item whatever its size", () => {
    expect(fitting([10, 10, 10], 25)).toBe(2);
    expect(fitting([100, 10], 25)).toBe(1);
    expect(fitting([], 25)).toBe(0);
  });
});
