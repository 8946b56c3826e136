import { describe, expect, it } from "vitest";
import { activityWords } from "./activity-text.ts";

const names = { attachments: new Map([["att-1", "trace.txt"]]), issues: null };
const say = (kind: string, detail: Record<string, unknown>, runtime: string | null = "codex") => activityWords({ kind, runtime, detail }, names);

describe("the activity log in words", () => {
  it("says a claim, its lease and fence, never the JSON", () => {
    expect(say("claimed", { fence: 1, review: false, expiresAt: "2026-12-02T14:28:09.000Z" })).toEqual({
      label: "claimed",
      text: "claimed by codex, lease to 14:28 UTC, fence 1",
    });
    expect(say("claimed", { fence: 2, review: true, expiresAt: "2026-12-02T09:05:00.000Z" }).label).toBe("claimed for review");
  });

  it("says a heartbeat, and a run of them kept in one row as its count and last beat (decision 105)", () => {
    expect(say("heartbeat", { fence: 1 })).toEqual({ label: "heartbeat", text: "lease renewed by codex, fence 1" });
    expect(say("heartbeat", { fence: 2, beats: 12, lastAt: "2026-12-02T14:05:30.000Z" })).toEqual({
      label: "heartbeats",
      text: "lease renewed 12 times by codex, the last at 14:05 UTC, fence 2",
    });
  });

  it("says when outside text went back to triage and what a person accepted (decision 038)", () => {
    expect(say("triage_held", { reason: "edited", source: "GitHub acme/web#12" }, "retasc")).toEqual({
      label: "back in triage",
      text: "changed at the source (GitHub acme/web#12) after it was accepted: the new text waits for a person; agents keep the accepted text",
    });
    expect(say("triage_accepted", { reason: "filed", sha256: "a".repeat(64) }, "dash").text).toBe("the text shown was accepted on the Dash, SHA-256 aaaaaaaaaaaa…");
    expect(say("comment_held", { source: "@stranger on GitHub" }, "retasc").text).toBe("a comment by @stranger on GitHub from outside the team waits for a person");
  });

  it("tells a handoff to review from a finish", () => {
    expect(say("finished", { from: "doing", to: "review", fence: 3 })).toEqual({ label: "to review", text: "handed to review by codex, fence 3, the lease ended" });
    expect(say("finished", { from: "doing", to: "done", fence: 1 })).toEqual({ label: "finished", text: "done by codex, fence 1, the lease ended" });
  });

  it("names attachments, checkpoints, reclaims, relations and updates", () => {
    expect(say("attachment_added", { attachmentId: "att-1", size: 520, contentType: "text/plain" }).text).toBe("added trace.txt (520 B, text/plain)");
    expect(say("attachment_added", { attachmentId: "gone" }).text).toBe("added an attachment");
    expect(say("checkpoint", { fence: 1, done: "parser", next: "tests" }).text).toBe("saved by codex, fence 1 · done: parser · next: tests");
    expect(say("reclaimed", { fence: 2, runtime: "cursor", expiredAt: "2026-12-02T10:00:00.000Z" }, "retasc").text).toBe(
      "lease of cursor expired at 10:00 UTC, fence 2, the issue is available again",
    );
    expect(say("relation_added", { source: "WEB-1", target: "WEB-2", type: "blocks" }).text).toBe("WEB-1 blocks WEB-2");
    // A viewer scoped to some projects (decision 042) is told an issue outside them exists, never which.
    const scoped = { ...names, issues: new Set(["WEB-1"]) };
    expect(activityWords({ kind: "relation_added", runtime: null, detail: { source: "WEB-1", target: "OPS-2", type: "blocks" } }, scoped).text).toBe(
      "WEB-1 blocks an issue outside your projects",
    );
    expect(activityWords({ kind: "created", runtime: null, detail: { work: true, blockedBy: ["OPS-2", "WEB-1"] } }, scoped).text).toBe(
      "created as work, blocked by an issue outside your projects, WEB-1",
    );
    expect(say("updated", { fields: ["title", "priority"], priority: 1 }).text).toBe("changed title, priority set to urgent");
    expect(say("created", { work: true, priority: 0, blockedBy: [] }).text).toBe("created as work by codex, priority none, depends on nothing");
    expect(say("status_changed", { from: "doing", to: "canceled", reason: "duplicate" }).text).toBe("doing → canceled: duplicate");
  });

  it("says an unknown kind's plain facts and skips nested ones", () => {
    expect(say("something_new", { count: 3, nested: { a: 1 } })).toEqual({ label: "something new", text: "count 3" });
  });
});
