import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, afterEach, beforeAll, expect, test } from "vitest";
import { callError, callOk, connectClient, startSeededApp, type SeededApp } from "./testing.ts";

/** Leases over real HTTP on the built app, with a lease short enough to lapse during the test. */
const LEASE_SECONDS = 3;
let seeded: SeededApp;
const clients: Client[] = [];

beforeAll(async () => {
  seeded = await startSeededApp(["EXP"], { LEASE_TTL_SECONDS: String(LEASE_SECONDS) });
});
afterEach(({ task }) => {
  // The server's side of a failure (its error log lines) belongs in the test report.
  if (task.result?.state === "fail") process.stderr.write(`app output:\n${seeded?.app.output().slice(-8000)}\n`);
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => {})));
  await seeded?.close();
});

async function client(who: "alice" | "bob" | "carol") {
  const c = await connectClient(seeded.endpoint, seeded.orgs.EXP!.people[who].key, { name: who });
  clients.push(c);
  return c;
}

test("an expired lease is reclaimed by the next claimant and every late write of the old holder is refused", async () => {
  const [alice, bob, carol] = [await client("alice"), await client("bob"), await client("carol")];
  const issue = await callOk(alice, "save_issue", { title: "Flaky job", work: true, changeType: "feat", noDependency: "standalone" });

  const stale = await callOk(bob, "next_issue");
  expect(stale).toMatchObject({ identifier: issue.identifier, fence: 1 });
  await callOk(bob, "checkpoint", { identifier: issue.identifier, claimToken: stale.claimToken, done: "found the race" });

  await new Promise((r) => setTimeout(r, LEASE_SECONDS * 1000 + 500));
  expect(await callOk(bob, "check_claim", { identifier: issue.identifier })).toMatchObject({ held: false, youHold: false });

  const fresh = await callOk(carol, "next_issue");
  expect(fresh).toMatchObject({ identifier: issue.identifier, fence: 2 });
  expect(fresh.checkpoint).toMatchObject({ done: "found the race" });

  const late = [
    ["heartbeat", { identifier: issue.identifier, claimToken: stale.claimToken }],
    ["checkpoint", { identifier: issue.identifier, claimToken: stale.claimToken, done: "overwrite attempt" }],
    ["save_issue", { identifier: issue.identifier, status: "done", claimToken: stale.claimToken }],
    ["release_issue", { identifier: issue.identifier, claimToken: stale.claimToken }],
  ] as const;
  for (const [name, args] of late) {
    const error = await callError(bob, name, args);
    expect(error.code, name).toBe("STALE_CLAIM");
    expect(error.hint.length).toBeGreaterThan(0);
  }

  const after = await callOk(alice, "get_issue", { identifier: issue.identifier });
  expect(after.status).toBe("doing");
  expect(after.checkpoint).toMatchObject({ done: "found the race" });
  expect(await callOk(carol, "save_issue", { identifier: issue.identifier, status: "done", claimToken: fresh.claimToken })).toMatchObject({
    status: "done",
  });
  // usage_summary is the caller's own meter: carol's claim (which recorded the reclaim) and finish, none of bob's refused writes.
  const usage = await callOk(carol, "usage_summary");
  expect(usage.byKind).toEqual(expect.arrayContaining([{ kind: "claimed", count: 1 }, { kind: "finished", count: 1 }]));
  expect(usage.writesThisMonth).toBe(2);
});
