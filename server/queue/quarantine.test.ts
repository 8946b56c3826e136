import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { query } from "../../db/client.ts";
import { unquarantineIssue } from "../issues/quarantine.ts";
import { callError, callOk, connectClient, inProcessFetch, inProcessOrigin } from "../mcp/testing.ts";
import { humanCtx } from "../orgs/access.ts";
import { useTestServices } from "../testing/database.ts";
import { TestClock, testConfig } from "../testing/db.ts";
import { seedOrg, type SeededOrg } from "../testing/fixtures.ts";
import { setVerification } from "../verification/settings.ts";
import { reclaimSweep } from "./reclaim.ts";

/**
 * Quarantine (decision 055), from the agents' side over /mcp with the SDK client: an issue whose
 * claims are abandoned K times in a row (lapsed, found by the sweep or by the next claim, or
 * released) with no checkpoint under them is blocked with the reason, never handed out, and
 * dispatched again once a person releases it.
 */
const clock = new TestClock();
const LEASE_MS = 60_000;
const env = useTestServices({ clock, config: testConfig({ LEASE_TTL_SECONDS: String(LEASE_MS / 1000) }) });
const endpoint = `${inProcessOrigin}/mcp`;
let org: SeededOrg;
let agents: Client[];

beforeAll(async () => {
  org = await seedOrg(env.services, { prefix: "QUA" });
  const fetch = inProcessFetch(env.services);
  agents = await Promise.all((["alice", "bob", "carol"] as const).map((who) => connectClient(endpoint, org.agents[who].key, { fetch })));
});
afterAll(async () => {
  await Promise.all((agents ?? []).map((agent) => agent.close()));
});

const file = async (title: string) => (await callOk(agents[0]!, "save_issue", { title, work: true, changeType: "feat", noDependency: "a test" })).identifier as string;
/** An agent claims `identifier` by name and vanishes: its lease lapses. */
const claimAndVanish = async (agent: Client, identifier: string) => {
  await callOk(agent, "claim_issue", { identifier });
  clock.advance(LEASE_MS + 1_000);
};
const person = async () => (await humanCtx(env.services, { orgId: org.orgId, userId: org.agents.alice.userId, runtime: "dash" })).ctx;
const notices = async (identifier: string) =>
  Number(
    (
      await query<{ n: number }>(
        env.services.db,
        sql`select count(*)::int as n from outbox o join issues i on i.id = o.payload->>'issueId'
            where i.org_id = ${org.orgId} and i.identifier = ${identifier} and o.payload->>'kind' = 'issue_quarantined'`,
      )
    )[0]!.n,
  );

describe("an issue that kills every agent that takes it", () => {
  it("is quarantined after three lapsed claims: blocked with the reason, never handed out, released by a person and dispatched again", async () => {
    const poison = await file("poison");
    await claimAndVanish(agents[0]!, poison);
    await reclaimSweep(env.services);
    // The sweep again, and the next claim, find the same lapse: it counts once.
    await reclaimSweep(env.services);
    await claimAndVanish(agents[1]!, poison);
    await claimAndVanish(agents[2]!, poison);
    expect(await callOk(agents[0]!, "get_issue", { identifier: poison })).toMatchObject({ status: "doing" });
    await reclaimSweep(env.services);

    const blocked = await callOk(agents[0]!, "get_issue", { identifier: poison });
    expect(blocked).toMatchObject({ status: "blocked", held: false, quarantine: { reason: "quarantined after 3 abandoned claims" } });
    expect(blocked.quarantine.claims.map((c: { fence: number; ended: string }) => [c.fence, c.ended])).toEqual([[3, "expired"], [2, "expired"], [1, "expired"]]);
    expect(await notices(poison)).toBe(1);
    // Never handed out, by next_issue or by name; no agent may release it.
    for (const agent of agents) expect((await callOk(agent, "next_issue", {})).claimed).toBe(false);
    expect(await callError(agents[1]!, "claim_issue", { identifier: poison })).toMatchObject({ code: "STATUS_NOT_CLAIMABLE" });
    const escape = await callError(agents[1]!, "save_issue", { identifier: poison, status: "todo" });
    expect(escape).toMatchObject({ code: "FORBIDDEN" });
    expect(escape.tellHuman).toContain(`retasc issue unquarantine ${poison}`);
    await expect(unquarantineIssue(org.agents.bob.ctx, { identifier: poison })).rejects.toMatchObject({ code: "FORBIDDEN" });

    expect(await unquarantineIssue(await person(), { identifier: poison })).toEqual({ identifier: poison, status: "todo", released: true });
    const again = await callOk(agents[1]!, "next_issue", {});
    expect(again).toMatchObject({ identifier: poison, claimToken: expect.any(String) });
    // Its count started over: one more lapse does not quarantine it.
    clock.advance(LEASE_MS + 1_000);
    await reclaimSweep(env.services);
    expect(await callOk(agents[0]!, "get_issue", { identifier: poison })).toMatchObject({ status: "doing" });
    await callOk(agents[1]!, "claim_issue", { identifier: poison }).then((c) => callOk(agents[1]!, "save_issue", { identifier: poison, claimToken: c.claimToken, status: "done" }));
  });

  it("a lapse the next claim finds first quarantines it there: that claim takes nothing and next_issue hands out the next issue", async () => {
    const poison = await file("poison found by a claim");
    await claimAndVanish(agents[0]!, poison);
    await claimAndVanish(agents[1]!, poison);
    await claimAndVanish(agents[2]!, poison);
    const healthy = await file("healthy");
    // No sweep: the claim records the third lapse itself.
    const next = await callOk(agents[0]!, "next_issue", {});
    expect(next).toMatchObject({ identifier: healthy });
    expect(await callOk(agents[1]!, "get_issue", { identifier: poison })).toMatchObject({ status: "blocked", held: false });
    await callOk(agents[0]!, "save_issue", { identifier: healthy, claimToken: next.claimToken, status: "done" });
    await unquarantineIssue(await person(), { identifier: poison });
    await callOk(agents[1]!, "claim_issue", { identifier: poison }).then((c) => callOk(agents[1]!, "save_issue", { identifier: poison, claimToken: c.claimToken, status: "done" }));
  });

  it("a checkpoint between claims starts the count again; releases count too, and their notes are kept and shown", async () => {
    const flaky = await file("flaky");
    await claimAndVanish(agents[0]!, flaky);
    const second = await callOk(agents[1]!, "claim_issue", { identifier: flaky });
    await callOk(agents[1]!, "checkpoint", { identifier: flaky, claimToken: second.claimToken, done: "the parser", gotchas: "the lexer hangs on tabs" });
    clock.advance(LEASE_MS + 1_000);
    await reclaimSweep(env.services);
    // Two releases with notes after the checkpointed claim: two in a row, not three.
    for (const [agent, note] of [[agents[2]!, "OOM in the lexer"], [agents[0]!, "same OOM"]] as const) {
      const claimed = await callOk(agent, "claim_issue", { identifier: flaky });
      const released = await callOk(agent, "release_issue", { identifier: flaky, claimToken: claimed.claimToken, note });
      expect(released.status).toBe("doing");
    }
    const third = await callOk(agents[1]!, "claim_issue", { identifier: flaky });
    const released = await callOk(agents[1]!, "release_issue", { identifier: flaky, claimToken: third.claimToken, note: "gave up: OOM" });
    expect(released).toMatchObject({ status: "blocked", held: false });
    expect(released.message).toContain("quarantined after 3 abandoned claims");
    const view = await callOk(agents[0]!, "get_issue", { identifier: flaky });
    expect(view.quarantine.claims.map((c: { fence: number; notes: string[] }) => [c.fence, c.notes])).toEqual([
      [5, ["gave up: OOM"]],
      [4, ["same OOM"]],
      [3, ["OOM in the lexer"]],
    ]);
    expect(view.checkpoint).toMatchObject({ done: "the parser", gotchas: "the lexer hangs on tabs", note: "gave up: OOM" });
  });

  it("takes the project's threshold", async () => {
    await setVerification(await person(), { projectId: org.projectId, mode: "off", quarantineAfter: 1 });
    const once = await file("once");
    const claimed = await callOk(agents[0]!, "claim_issue", { identifier: once });
    expect(await callOk(agents[0]!, "release_issue", { identifier: once, claimToken: claimed.claimToken })).toMatchObject({ status: "blocked" });
    expect((await callOk(agents[0]!, "get_issue", { identifier: once })).quarantine.reason).toBe("quarantined after 1 abandoned claims");
  });
});
