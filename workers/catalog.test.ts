import { describe, expect, it } from "vitest";
import { z } from "zod";
import { testConfig } from "../server/testing/db.ts";
import { DomainError } from "../server/errors.ts";
import { backoffMs, errorLabel } from "./catalog.ts";
import { isPermanent, PermanentJobError } from "./job.ts";

describe("job failure policy", () => {
  it("retries what may pass and gives up on what cannot", () => {
    expect(isPermanent(new Error("connection reset"))).toBe(false);
    expect(isPermanent(Object.assign(new Error("deadlock"), { code: "40P01" }))).toBe(false);
    expect(isPermanent(new DomainError("UNAVAILABLE", "down", "later"))).toBe(false);
    expect(isPermanent(new DomainError("RATE_LIMITED", "slow down", "later"))).toBe(false);
    expect(isPermanent(new DomainError("NOT_FOUND", "issue gone", "none"))).toBe(true);
    expect(isPermanent(new DomainError("INVALID_INPUT", "bad", "none"))).toBe(true);
    expect(isPermanent(new PermanentJobError("no"))).toBe(true);
    expect(isPermanent(z.object({ a: z.string() }).safeParse({}).error)).toBe(true);
  });

  it("labels failures by class or code, never by message", () => {
    expect(errorLabel(new DomainError("NOT_FOUND", "issue 'secret title' gone", "none"))).toBe("NOT_FOUND");
    expect(errorLabel(Object.assign(new Error("value (secret) violates"), { code: "23505" }))).toBe("Error:23505");
    expect(errorLabel(new TypeError("secret"))).toBe("TypeError");
  });

  it("backs off exponentially from JOB_BACKOFF_MS, capped at an hour", () => {
    expect([1, 2, 3, 4].map((n) => backoffMs(1_000, n))).toEqual([1_000, 2_000, 4_000, 8_000]);
    expect(backoffMs(1_000, 40)).toBe(3_600_000);
  });

  it("sweeps every 30 s (reclaim) and 60 s (SLA) unless configured", () => {
    expect(testConfig()).toMatchObject({ RECLAIM_SWEEP_MS: 30_000, SLA_SWEEP_MS: 60_000 });
    expect(testConfig({ RECLAIM_SWEEP_MS: "1000", SLA_SWEEP_MS: "1000" })).toMatchObject({ RECLAIM_SWEEP_MS: 1_000, SLA_SWEEP_MS: 1_000 });
  });
});
