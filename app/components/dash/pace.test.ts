import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import type { FleetSnapshot } from "../../../server/dash/fleet.ts";
import { drainWords, PacePicture } from "./pace.tsx";

const charts: FleetSnapshot["charts"] = {
  range: "day",
  bucketHours: 1,
  buckets: [],
  totals: { finished: 6, medianClaimToDoneMs: 600_000, reclaimed: 0, staleRefused: 0 },
};
const forecast: FleetSnapshot["forecast"] = {
  window: "24h",
  finished: 6,
  perHour: 18,
  medianClaimToDoneMs: 600_000,
  ready: 4,
  open: 9,
  readyHours: 4 / 18,
  readyEta: null,
  openHours: 1,
  openEta: null,
  criticalChain: ["FCS-4", "FCS-5", "FCS-6"],
  containers: [{ identifier: "FCS-1", open: 3, hours: 1, eta: null }],
  reason: null,
};

describe("the Fleet page's drain forecast", () => {
  it("says when the ready queue and the backlog drain, the critical chain and each container", () => {
    const html = renderToStaticMarkup(createElement(PacePicture, { charts, forecast }));
    expect(html).toContain("finished in the last 24 h");
    expect(html).toContain("Median first claim to done: 10 min.");
    expect(html).toContain("the 4 ready issues drain in about 13 min, all 9 open issues in about 1.0 h.");
    expect(html).toContain("FCS-4 → FCS-5 → FCS-6");
    expect(html).toMatch(/FCS-1<\/span>: 3 open issues, done in about 1.0 h/);
  });

  it("says plainly when there is no pace to forecast from, and when the queue is drained", () => {
    const none = { ...forecast, perHour: null, readyHours: null, openHours: null, reason: "no finish in the last 24h to measure a pace from" };
    expect(drainWords(none)).toBe("9 open issues, 4 ready; no finish in the last 24h to measure a pace from.");
    expect(drainWords({ ...forecast, open: 0, ready: 0 })).toBe("Nothing is open: the queue is drained.");
    expect(drainWords({ ...forecast, perHour: 40, readyHours: 0.005 })).toBe(
      "At 40 finished an hour (over the active part of the last 24h) the 4 ready issues drain in under a minute, all 9 open issues in about 1.0 h.",
    );
  });
});
