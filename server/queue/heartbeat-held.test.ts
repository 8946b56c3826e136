import { sql } from "drizzle-orm";
import { describe, expect, it, vi } from "vitest";
import { query } from "../../db/client.ts";
import type { Ctx } from "../context.ts";
import { saveIssue } from "../issues/index.ts";
import { TestClock } from "../testing/db.ts";
import { useTestServices } from "../testing/database.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { billingOnConfig, ledgerOf, setBalance } from "../usage/testing.ts";
import { claimIssue, heartbeat } from "./index.ts";
import { renewByHeartbeat } from "./lease.ts";

/**
 * A heartbeat by the live token is one statement (heartbeat-held.ts, decision 072) beside the
 * general path (renewByHeartbeat); they must leave the same rows behind, with billing off and
 * on, and everything but a live token must reach the general path's answers.
 */
const clock = new TestClock();
const env = useTestServices({ clock, config: billingOnConfig() });
const off = (ctx: Ctx): Ctx => ({ ...ctx, config: { ...ctx.config, RETASC_BILLING: "off" } });

async function traceOf(ctx: Ctx, identifier: string) {
  const [issue] = await query<Record<string, unknown>>(
    ctx.db,
    sql`select id, status, fence, lease_expires_at, lease_token_hash is not null as tokened from issues where org_id = ${ctx.principal.orgId} and identifier = ${identifier}`,
  );
  const id = issue!.id as string;
  const [lease] = await query<Record<string, unknown>>(
    ctx.db,
    sql`select fence, expires_at, heartbeat_at, renewed_by, ended_at from leases where issue_id = ${id} order by fence desc limit 1`,
  );
  const beats = await query<Record<string, unknown>>(
    ctx.db,
    sql`select kind, actor_id, key_id, runtime, facts, detail_enc, created_at from activity where issue_id = ${id} and kind = 'heartbeat'`,
  );
  const charges = (await ledgerOf(ctx.db, ctx.principal.orgId))
    .filter((c) => c.issueId === id)
    .map(({ tool, tier, microCredits, userId, keyId, runtime }) => ({ tool, tier, microCredits, userId, keyId, runtime }));
  const { id: _id, ...rest } = issue!;
  return { issue: rest, lease, beats, charges };
}

/** Two issues claimed alike, one renewed by each path at the same instant. */
async function bothPaths(ctx: Ctx) {
  const [fast, general] = [
    await saveIssue(ctx, { title: "fast", work: true, changeType: "feat", noDependency: "heartbeat test" }),
    await saveIssue(ctx, { title: "general", work: true, changeType: "feat", noDependency: "heartbeat test" }),
  ];
  const [fastClaim, generalClaim] = [await claimIssue(ctx, { identifier: fast.identifier }), await claimIssue(ctx, { identifier: general.identifier })];
  clock.advance(30_000);
  const transactions = vi.spyOn(ctx.db, "transaction");
  const fastBeat = await heartbeat(ctx, { identifier: fast.identifier, claimToken: fastClaim.claimToken });
  const fastTransactions = transactions.mock.calls.length;
  transactions.mockRestore();
  const generalBeat = await renewByHeartbeat(ctx, { identifier: general.identifier, claimToken: generalClaim.claimToken });
  return { fast, general, fastBeat, generalBeat, fastTransactions };
}

describe("a heartbeat by the live token", () => {
  it("writes in one statement what the general path writes, billing off", async () => {
    const org = await seedOrg(env.services, { prefix: "HBO" });
    const ctx = off(org.agents.alice.ctx);
    const { fast, general, fastBeat, generalBeat, fastTransactions } = await bothPaths(ctx);
    expect(fastTransactions).toBe(0);
    expect({ ...fastBeat, identifier: "" }).toEqual({ ...generalBeat, identifier: "" });
    const [a, b] = [await traceOf(ctx, fast.identifier), await traceOf(ctx, general.identifier)];
    expect(a).toEqual(b);
    expect(a.lease).toMatchObject({ renewed_by: "heartbeat", ended_at: null });
    expect(a.beats).toHaveLength(1);
    expect(a.beats[0]).toMatchObject({ kind: "heartbeat", actor_id: org.agents.alice.userId, key_id: org.agents.alice.principal.keyId, runtime: "claude-code", facts: { fence: 1 } });
    expect(a.charges).toEqual([]);
  });

  it("and with billing on, charged once like the general path, in one transaction", async () => {
    const org = await seedOrg(env.services, { prefix: "HBN" });
    const ctx = org.agents.alice.ctx;
    const { fast, general, fastTransactions } = await bothPaths(ctx);
    expect(fastTransactions).toBe(1);
    const [a, b] = [await traceOf(ctx, fast.identifier), await traceOf(ctx, general.identifier)];
    expect(a).toEqual(b);
    expect(a.charges.filter((c) => c.tool === "heartbeat")).toEqual([expect.objectContaining({ tier: "heartbeat", microCredits: 100 })]);
  });

  it("answers as the general path does a wrong token, another org's caller, an empty balance and a lapsed lease", async () => {
    const org = await seedOrg(env.services, { prefix: "HBS" });
    const other = await seedOrg(env.services, { prefix: "HBT" });
    const ctx = org.agents.alice.ctx;
    const issue = await saveIssue(ctx, { title: "held", work: true, changeType: "feat", noDependency: "heartbeat test" });
    const claim = await claimIssue(ctx, { identifier: issue.identifier });
    /** The refusal's code by both doors of the function: the heartbeat, and the general path alone. */
    const refusals = async (caller: Ctx, claimToken: string) => {
      const input = { identifier: issue.identifier, claimToken };
      const codes = await Promise.all([heartbeat(caller, input), renewByHeartbeat(caller, input)].map((p) => p.then(() => "renewed", (e: { code?: string }) => e.code)));
      expect(codes[0]).toBe(codes[1]);
      return codes[0];
    };
    expect(await refusals(ctx, "not-the-claim-token")).toBe("CLAIM_MISMATCH");
    expect(await refusals(other.agents.alice.ctx, claim.claimToken)).toBe("NOT_FOUND");
    // Out of credit a heartbeat still renews, so a running agent can wind down (rate-card.ts windDownTools).
    await setBalance(ctx.db, org.orgId, 0);
    expect(await refusals(ctx, claim.claimToken)).toBe("renewed");
    await setBalance(ctx.db, org.orgId, 1_000_000);
    const beats = (await traceOf(ctx, issue.identifier)).beats.length;
    clock.advance(env.services.config.leaseTtlMs + 1);
    expect(await refusals(ctx, claim.claimToken)).toBe("STALE_CLAIM");
    expect((await traceOf(ctx, issue.identifier)).beats).toHaveLength(beats);
  });
});
