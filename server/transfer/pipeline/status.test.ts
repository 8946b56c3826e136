import { describe, expect, it } from "vitest";
import { etaSecondsOf } from "./status.ts";

describe("etaSecondsOf: how long a run's step has left, at its pace so far", () => {
  const began = new Date("2026-12-06T12:00:00Z");
  const at = (seconds: number) => new Date(began.getTime() + seconds * 1000);
  const run = (phase: "fetching" | "applying" | "linking" | "done" | "failed", done: number, total: number) => ({ phase, done, total, createdAt: began });

  it("is the rest of the step at the pace kept: a quarter done in 10 s leaves about 30 s", () => {
    expect(etaSecondsOf(run("fetching", 500, 2000), at(10))).toBe(30);
    expect(etaSecondsOf(run("applying", 1500, 2000), at(30))).toBe(10);
  });

  it("says nothing without a pace (nothing done yet, or under 2 s in) or once the step is over", () => {
    expect(etaSecondsOf(run("fetching", 0, 2000), at(10))).toBeNull();
    expect(etaSecondsOf(run("fetching", 100, 2000), at(1))).toBeNull();
    expect(etaSecondsOf(run("applying", 2000, 2000), at(10))).toBeNull();
    expect(etaSecondsOf(run("linking", 10, 2000), at(10))).toBeNull();
    expect(etaSecondsOf(run("done", 10, 2000), at(10))).toBeNull();
  });

  it("never says less than a second while work is left", () => {
    expect(etaSecondsOf(run("applying", 1999, 2000), at(3))).toBe(1);
  });
});
