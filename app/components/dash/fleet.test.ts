import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { MemoryRouter } from "react-router";
import { describe, expect, it } from "vitest";
import type { FleetClaim, FleetSnapshot } from "../../../server/dash/fleet.ts";
import { AttentionList } from "./fleet.tsx";

const now = Date.parse("2026-12-05T12:00:00.000Z");
const attention: FleetSnapshot["attention"] = {
  stale: [
    {
      identifier: "WEB-4",
      title: "ship the parser",
      verification: "stale",
      finishedAt: "2026-12-05T09:30:00.000Z",
      staleSince: "2026-12-05T11:30:00.000Z",
      windowMinutes: 120,
      evidence: { commit: "0123456789abcdef", branch: null, pr: null },
    },
  ],
  quarantined: [
    {
      identifier: "WEB-7",
      title: "hangs every agent",
      reason: "quarantined after 3 abandoned claims",
      since: "2026-12-05T11:55:00.000Z",
      abandonedClaims: 3,
      release: { page: "/dash/issues/WEB-7#quarantine", command: "retasc issue unquarantine WEB-7" },
    },
  ],
};
const stalled = { identifier: "WEB-9", title: "spins", runtime: "codex", stalled: true, lastProgressAt: "2026-12-05T11:10:00.000Z" } as FleetClaim;
const render = (a: FleetSnapshot["attention"], claims: FleetClaim[]) =>
  renderToStaticMarkup(createElement(MemoryRouter, null, createElement(AttentionList, { attention: a, claims, now })));

describe("the Fleet's list of what waits on a person (decision 062)", () => {
  it("marks a stale verification, a quarantined issue and a stalled claim in words, with what to do about each", () => {
    const html = render(attention, [stalled, { ...stalled, identifier: "WEB-10", stalled: false }]);
    expect(html).toContain('aria-label="Issues that wait on a person"');
    expect(html).toMatch(/data-kind="stale" data-identifier="WEB-4".*>stale<\/span>/);
    expect(html).toContain("CI verification pending for 2.5 h, past the 120-minute window (commit <span class=\"font-mono\">0123456789ab</span>): what waits on it stays blocked.");
    expect(html).toMatch(/data-kind="quarantined" data-identifier="WEB-7".*>quarantined<\/span>/);
    expect(html).toContain("quarantined after 3 abandoned claims, 5m ago.");
    expect(html).toContain('href="/dash/issues/WEB-7#quarantine"');
    expect(html).toContain("<code class=\"break-all\">retasc issue unquarantine WEB-7</code>");
    expect(html).toMatch(/data-kind="stalled" data-identifier="WEB-9".*>stalled<\/span>/);
    expect(html).toContain("no progress for 50 min");
    expect(html).not.toContain('data-identifier="WEB-10"');
  });

  it("says so when nothing waits", () => {
    expect(render({ stale: [], quarantined: [] }, [])).toContain("Nothing waits on a person.");
  });
});
