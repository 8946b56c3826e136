import { expect, test } from "vitest";
import { longestBlockerChains } from "./forecast.ts";

const issue = (n: number) => ({ id: `i${n}`, identifier: `A-${n}` });
const blocks = (from: number, to: number) => ({ source_id: `i${from}`, target_id: `i${to}` });

test("each open issue's longest chain of open blockers, and the longest of all, first blocker first", () => {
  const open = [0, 1, 2, 3, 4, 5, 6, 7].map(issue);
  // 0 → 1 → 2 → 3 and 4 → 3; 5 ⇄ 6 is a cycle; 7's blocker is not open (done), so it does not count.
  const { depthOf, criticalChain } = longestBlockerChains(open, [blocks(0, 1), blocks(1, 2), blocks(2, 3), blocks(4, 3), blocks(5, 6), blocks(6, 5), blocks(99, 7)]);
  expect(criticalChain).toEqual(["A-0", "A-1", "A-2", "A-3"]);
  expect(Object.fromEntries(depthOf)).toMatchObject({ i0: 1, i1: 2, i2: 3, i3: 4, i4: 1, i7: 1 });
  expect([depthOf.get("i5"), depthOf.get("i6")].sort()).toEqual([1, 2]);
});

test("no chain without a blocker; a chain 50,000 long is capped at 200 and overflows nothing", () => {
  expect(longestBlockerChains([issue(1), issue(2)], []).criticalChain).toEqual([]);
  const open = Array.from({ length: 50_000 }, (_, n) => issue(n));
  const edges = open.slice(1).map((_, n) => blocks(n, n + 1));
  const { depthOf, criticalChain } = longestBlockerChains([...open].reverse(), edges);
  expect(depthOf.get("i49999")).toBe(200);
  expect(criticalChain).toHaveLength(200);
});
