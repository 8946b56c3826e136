/**
 * Prints, as JSON, the bytes of new space one agent call's metrics take once warm: a request, a
 * tool call and its claim through server/metrics (ours), and one observation through
 * prom-client's Histogram (theirs). Run as its own process by server/metrics/recorders.test.ts:
 * under the test runner's module transform the functions are not optimized as they are in the
 * server, so numbers are boxed there and the reading would measure the runner.
 */
import v8 from "node:v8";
import vm from "node:vm";
import { Histogram } from "prom-client";
import { metrics } from "../metrics/index.ts";

v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc") as () => void;
const newSpaceUsed = () => v8.getHeapSpaceStatistics().find((space) => space.space_name === "new_space")!.space_used_size;
const WARM = 50_000;
const MEASURED = 2_000;

// Each loop is written out rather than passed to a shared helper: a helper's call site would see
// several functions, stop inlining them, and box the numbers it passes (its own allocations).
const claim = { claimToken: "rtclm_x", fence: 1 };
for (let i = 0; i < WARM; i++) {
  metrics.httpRequest("mcp", 200, i % 7);
  metrics.toolCall("next_issue", i % 7, null);
  metrics.claimsIn("next_issue", claim);
}
gc();
let before = newSpaceUsed();
for (let i = 0; i < MEASURED; i++) {
  metrics.httpRequest("mcp", 200, i % 7);
  metrics.toolCall("next_issue", i % 7, null);
  metrics.claimsIn("next_issue", claim);
}
const ours = (newSpaceUsed() - before) / MEASURED;

const histogram = new Histogram({ name: "probe_seconds", help: "probe", labelNames: ["tool", "outcome"], registers: [] });
for (let i = 0; i < WARM; i++) histogram.observe({ tool: "next_issue", outcome: "ok" }, (i % 7) / 1000);
gc();
before = newSpaceUsed();
for (let i = 0; i < MEASURED; i++) histogram.observe({ tool: "next_issue", outcome: "ok" }, (i % 7) / 1000);
const theirs = (newSpaceUsed() - before) / MEASURED;

process.stdout.write(`${JSON.stringify({ ours, theirs })}\n`);
