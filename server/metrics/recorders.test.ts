import { spawnSync } from "node:child_process";
import { Counter, Histogram, Registry, type Metric } from "prom-client";
import { describe, expect, it } from "vitest";
import { cleanEnv } from "../testing/app-process.ts";
import { PairCounter, PairHistogram } from "./recorders.ts";

const bounds = [0.001, 0.01, 0.1, 1];

describe("the allocation-free recorders", () => {
  it("scrape exactly as prom-client's histogram and counter do, for the same observations", async () => {
    const theirs = new Registry();
    const ours = new Registry();
    const histogram = new Histogram({ name: "t_seconds", help: "h", labelNames: ["door", "status"], buckets: bounds, registers: [theirs] });
    const bare = new Histogram({ name: "t_bare_seconds", help: "b", buckets: bounds, registers: [theirs] });
    const counter = new Counter({ name: "t_total", help: "c", labelNames: ["tool", "kind"], registers: [theirs] });
    const pairHistogram = new PairHistogram("t_seconds", "h", ["door", "status"], bounds);
    const pairBare = new PairHistogram("t_bare_seconds", "b", [], bounds);
    const pairCounter = new PairCounter("t_total", "c", ["tool", "kind"]);
    for (const metric of [pairHistogram, pairBare, pairCounter]) ours.registerMetric(metric as unknown as Metric);

    const samples: [string, number, number][] = [["mcp", 200, 0.0004], ["mcp", 200, 0.02], ["dash", 500, 3], ["mcp", 429, 0.001], ["mcp", 200, 0.5]];
    for (const [door, status, seconds] of samples) {
      histogram.observe({ door, status: String(status) }, seconds);
      pairHistogram.observeMs(door, status, seconds * 1000);
      bare.observe(seconds);
      pairBare.observeMs("", "", seconds * 1000);
      counter.inc({ tool: door, kind: String(status) });
      pairCounter.inc(door, status);
    }
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });

  it("record an agent call's series without allocating, where prom-client allocates on each", () => {
    const probe = spawnSync(process.execPath, ["--import", "tsx", "server/testing/metrics-allocation-probe.ts"], { encoding: "utf8", env: cleanEnv() });
    expect(probe.status, probe.stderr).toBe(0);
    const { ours, theirs } = JSON.parse(probe.stdout) as { ours: number; theirs: number };
    // The reading sees prom-client's labels object and key string on each observation...
    expect(theirs).toBeGreaterThan(50);
    // ...and nothing of ours for a request, a tool call and its claim (a byte is the reading itself).
    expect(ours).toBeLessThan(4);
  });
});
