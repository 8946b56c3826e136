import { describe, expect, it } from "vitest";
import type { RunData } from "./check-data.ts";
import { checkBlockedDispatch } from "./check-finishes.ts";
import type { ActivityRow } from "./check-rows.ts";

/**
 * Check 4 (no blocked issue dispatched) on histories written by hand: a claim must be written
 * after its blocker's finish, by commit, or earlier in the same transaction when a pool sent the
 * finish and the claim in one statement (decision 124). checker.test.ts runs the whole checker on
 * real histories.
 */

const row = (r: Pick<ActivityRow, "id" | "issue_id" | "kind" | "committed_ms" | "xid">): ActivityRow => ({
  created_ms: r.committed_ms! - 1,
  fence: 1,
  by: null,
  verification: null,
  beats: 1,
  last_ms: r.committed_ms! - 1,
  ...r,
});

/** The violations check 4 finds when issue B, blocked by A, is claimed after A's finish is written as given. */
function blockedDispatch(finish: ActivityRow, claim: ActivityRow): string[] {
  const data = {
    activity: [finish, claim].sort((a, b) => a.id - b.id),
    blockersOf: new Map([["B", ["A"]]]),
    finishesOf: new Map([["A", [finish]]]),
    failuresOf: new Map(),
    byId: new Map([
      ["A", { identifier: "T-1" }],
      ["B", { identifier: "T-2" }],
    ]),
    verifies: () => false,
  } as unknown as RunData;
  const found: string[] = [];
  checkBlockedDispatch(data, new Map([["A", finish]]), (kind, message) => found.push(`${kind}: ${message}`));
  return found;
}

describe("check 4: a claim after its blocker's finish", () => {
  it("passes a claim committed after the finish", () => {
    expect(blockedDispatch(row({ id: 1, issue_id: "A", kind: "finished", committed_ms: 1_000, xid: "7" }), row({ id: 2, issue_id: "B", kind: "claimed", committed_ms: 1_001, xid: "8" }))).toEqual([]);
  });

  it("passes a claim written after the finish in the same transaction", () => {
    expect(blockedDispatch(row({ id: 1, issue_id: "A", kind: "finished", committed_ms: 1_000, xid: "7" }), row({ id: 2, issue_id: "B", kind: "claimed", committed_ms: 1_000, xid: "7" }))).toEqual([]);
  });

  it("reports a claim written before the finish in the same transaction", () => {
    expect(blockedDispatch(row({ id: 2, issue_id: "A", kind: "finished", committed_ms: 1_000, xid: "7" }), row({ id: 1, issue_id: "B", kind: "claimed", committed_ms: 1_000, xid: "7" }))).toEqual([
      "blocked-dispatch: T-2 fence 1 was claimed while its blocker T-1 was open",
    ]);
  });

  it("reports a claim of another transaction committed in the finish's millisecond, and one committed before it", () => {
    const finish = row({ id: 1, issue_id: "A", kind: "finished", committed_ms: 1_000, xid: "7" });
    expect(blockedDispatch(finish, row({ id: 2, issue_id: "B", kind: "claimed", committed_ms: 1_000, xid: "8" }))).toHaveLength(1);
    expect(blockedDispatch(finish, row({ id: 2, issue_id: "B", kind: "claimed", committed_ms: 999, xid: "8" }))).toHaveLength(1);
  });
});
