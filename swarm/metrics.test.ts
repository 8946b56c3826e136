import { expect, test } from "vitest";
import { seriesSamples } from "./metrics.ts";

test("seriesSamples reads each series by label set, histograms by their _count", () => {
  const samples = seriesSamples(
    [
      "# HELP retasc_claims_total Claims taken",
      "# TYPE retasc_claims_total counter",
      'retasc_claims_total{tool="next_issue",kind="first"} 3',
      'retasc_claims_total{tool="next_issue",kind="reclaim"} 2',
      'retasc_dispatch_duration_seconds_bucket{le="0.001"} 4',
      "retasc_dispatch_duration_seconds_sum 0.02",
      "retasc_dispatch_duration_seconds_count 5",
      'retasc_issues{status="todo"} 7',
      "other_series 9",
    ].join("\n"),
  );
  expect(Object.fromEntries([...samples].map(([name, byLabels]) => [name, Object.fromEntries(byLabels)]))).toEqual({
    retasc_claims_total: { '{tool="next_issue",kind="first"}': 3, '{tool="next_issue",kind="reclaim"}': 2 },
    retasc_dispatch_duration_seconds_count: { "": 5 },
    retasc_issues: { '{status="todo"}': 7 },
  });
});
