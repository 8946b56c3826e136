import crypto from "node:crypto";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { and, eq, isNotNull } from "drizzle-orm";
import { beforeAll, describe, expect, test } from "vitest";
import { activity, connectors, issues, leases } from "../../db/schema/index.ts";
import { activityDetail } from "../activity/index.ts";
import { balanceOf } from "./credit.ts";
import { callError, callOk, connectClient, inProcessFetch, inProcessOrigin } from "../mcp/testing.ts";
import { TestClock } from "../testing/db.ts";
import { useTestServices } from "../testing/database.ts";
import { seedOrg, type SeededOrg } from "../testing/fixtures.ts";
import { rateCard, type MeterTier } from "./rate-card.ts";
import { billingOnConfig, ledgerOf, ledgerTotal } from "./testing.ts";

/**
 * Exactly-once metering through /mcp (the official SDK client, in process): every metered tool
 * accepted, refused and retried, against the ledger and the activity log.
 */
const clock = new TestClock();
const env = useTestServices({ clock, config: billingOnConfig() });
const endpoint = `${inProcessOrigin}/mcp`;

let org: SeededOrg;
let alice: Client;
let bob: Client;

beforeAll(async () => {
  org = await seedOrg(env.services);
  const fetch = inProcessFetch(env.services);
  alice = await connectClient(endpoint, org.agents.alice.key, { fetch });
  bob = await connectClient(endpoint, org.agents.bob.key, { fetch });
});

/** Each accepted call the test makes, with the tier it must pay; the clock moves on so each call's rows share one instant. */
const expected: { tool: string; tier: MeterTier }[] = [];
async function accepted<T = Record<string, any>>(client: Client, tool: string, tier: MeterTier | null, args: Record<string, unknown> = {}) {
  const result = await callOk<T>(client, tool, args);
  if (tier) expected.push({ tool, tier });
  clock.advance(1);
  return result;
}
async function refused(client: Client, tool: string, args: Record<string, unknown>, code: string) {
  const before = await ledgerOf(env.services.db, org.orgId);
  expect((await callError(client, tool, args)).code, tool).toBe(code);
  expect(await ledgerOf(env.services.db, org.orgId), `${tool} refused with ${code} charged nothing`).toEqual(before);
  clock.advance(1);
}

/** What the activity log says was paid: one price per call (the rows a call wrote share its key and instant), its highest tier. */
async function pricedFromActivity(): Promise<number> {
  const cipher = await env.services.keyring.forOrg(env.services.db, org.orgId);
  const rows = await env.services.db.select().from(activity).where(and(eq(activity.orgId, org.orgId), isNotNull(activity.actorId)));
  const tierOf = (row: typeof activity.$inferSelect): MeterTier | null => {
    switch (row.kind) {
      case "claimed":
      case "relation_added":
        return "dispatch";
      case "created":
      case "checkpoint":
      case "commented":
      case "attachment_added":
        return "work";
      case "updated":
        return (activityDetail(cipher, row).fields as string[]).includes("body") ? "work" : "bookkeeping";
      case "finished":
      case "status_changed":
      case "comment_retracted":
      case "relation_removed":
      case "attachment_obsoleted":
        return "bookkeeping";
      case "released":
      case "key.session_minted":
      case "member.suspended":
      case "member.reactivated":
      case "agent.retired":
      case "connector.revoked":
        return "plumbing";
      case "heartbeat":
        return "heartbeat";
      default:
        throw new Error(`activity kind ${row.kind} has no tier in this test`);
    }
  };
  const calls = new Map<string, number>();
  for (const row of rows) {
    const tier = tierOf(row);
    const key = `${row.keyId}|${row.createdAt.toISOString()}`;
    calls.set(key, Math.max(calls.get(key) ?? 0, tier ? rateCard[tier] : 0));
  }
  return [...calls.values()].reduce((sum, price) => sum + price, 0);
}

describe("exactly-once metering over /mcp", () => {
  test("every metered tool, accepted, refused and retried: one ledger row per accepted write, at its tier, as the key that acted", async () => {
    const file = (title: string, extra: Record<string, unknown> = {}) =>
      accepted<{ identifier: string }>(alice, "save_issue", "work", { title, work: true, changeType: "feat", noDependency: "independent", ...extra });
    const a = (await file("Alpha", { priority: 1 })).identifier;
    const b = (await file("Beta", { priority: 2 })).identifier;
    const d = (await file("Delta", { priority: 3 })).identifier;
    const e = (await file("Epsilon", { priority: 3 })).identifier;
    const container = (await accepted<{ identifier: string }>(alice, "save_issue", "work", { title: "Box", work: false, changeType: "feat", noDependency: "a container" })).identifier;

    // Refused: nothing written, nothing charged.
    await refused(alice, "save_issue", { title: "no dependency said", work: true, changeType: "feat" }, "INVALID_INPUT");
    await refused(alice, "claim_issue", { identifier: container }, "CONTAINER");
    await refused(alice, "save_comment", { issue: "RTSC-999", body: "hello" }, "NOT_FOUND");
    await refused(alice, "heartbeat", { identifier: a, claimToken: "rtclm_wrong" }, "STALE_CLAIM");

    await accepted(alice, "add_relation", "dispatch", { sourceId: a, targetId: b, type: "related" });
    await accepted(alice, "remove_relation", "bookkeeping", { sourceId: a, targetId: b, type: "related" });
    // Retried: the relation is already gone, nothing is written, nothing is charged.
    await accepted(alice, "remove_relation", null, { sourceId: a, targetId: b, type: "related" });
    await accepted(alice, "add_relation", "dispatch", { sourceId: d, targetId: e, type: "blocks" });
    await refused(alice, "add_relation", { sourceId: e, targetId: d, type: "blocks" }, "CYCLE");
    await accepted(alice, "remove_relation", "bookkeeping", { sourceId: d, targetId: e, type: "blocks" });

    await accepted(alice, "save_issue", "bookkeeping", { identifier: a, priority: 2 });
    await accepted(alice, "save_issue", "work", { identifier: a, body: "the details" });
    // A body edit with a bookkeeping edit pays the higher tier once.
    await accepted(alice, "save_issue", "work", { identifier: a, body: "more details", title: "Alpha!" });
    const comment = await accepted<{ id: string }>(alice, "save_comment", "work", { issue: a, body: "a finding" });
    await refused(bob, "retract_comment", { comment: comment.id, note: "not mine" }, "FORBIDDEN");
    await accepted(alice, "retract_comment", "bookkeeping", { comment: comment.id, note: "wrong issue" });
    await accepted(alice, "save_label", "bookkeeping", { name: "billing" });
    const link = await accepted<{ id: string }>(alice, "save_attachment", "work", { issue: a, url: "https://example.com/pr/1" });
    await accepted(alice, "obsolete_attachment", "bookkeeping", { attachment: link.id, reason: "superseded" });
    // Retried: already obsolete, nothing written.
    await accepted(alice, "obsolete_attachment", null, { attachment: link.id, reason: "superseded" });

    const claim = await accepted<{ claimToken: string }>(alice, "claim_issue", "dispatch", { identifier: a });
    await refused(bob, "claim_issue", { identifier: a }, "ALREADY_CLAIMED");
    await accepted(alice, "heartbeat", "heartbeat", { identifier: a, claimToken: claim.claimToken });
    await accepted(alice, "checkpoint", "work", { identifier: a, claimToken: claim.claimToken, done: "half" });
    await accepted(alice, "release_issue", "plumbing", { identifier: a, claimToken: claim.claimToken });
    await refused(alice, "release_issue", { identifier: a, claimToken: claim.claimToken }, "STALE_CLAIM");

    // A peek is free; a claim pays dispatch, and the one-statement finish bookkeeping.
    const peek = await accepted<{ issues: unknown[] }>(alice, "next_batch", null, { n: 2 });
    expect(peek.issues.length).toBe(2);
    const next = await accepted<{ identifier: string; claimToken: string }>(alice, "next_issue", "dispatch");
    await accepted(alice, "save_issue", "bookkeeping", { identifier: next.identifier, status: "done", claimToken: next.claimToken });
    // Retried after success: alreadyFinished, nothing written.
    const again = await accepted<{ alreadyFinished?: boolean }>(alice, "save_issue", null, { identifier: next.identifier, status: "done", claimToken: next.claimToken });
    expect(again.alreadyFinished).toBe(true);
    // A batch that claims several pays dispatch once.
    const batch = await accepted<{ claims: unknown[] }>(alice, "next_batch", "dispatch", { n: 3, claim: true });
    expect(batch.claims.length).toBe(3);
    // Nothing left: an empty next_issue is free.
    const empty = await accepted<{ claimed: boolean }>(alice, "next_issue", null);
    expect(empty.claimed).toBe(false);

    await accepted(alice, "mint_session_key", "plumbing", { label: "metered" });
    const agent = await org.agentFor("bob", "to-retire");
    await accepted(alice, "retire_member", "plumbing", { memberId: agent.principal.keyId });
    await accepted(alice, "retire_member", null, { memberId: agent.principal.keyId });
    const { members } = await callOk(alice, "list_members", { query: "carol" });
    const carol = members.find((m: { kind: string }) => m.kind === "human");
    await refused(bob, "suspend_member", { memberId: carol.memberId }, "FORBIDDEN");
    await accepted(alice, "suspend_member", "plumbing", { memberId: carol.memberId });
    await accepted(alice, "suspend_member", null, { memberId: carol.memberId });
    await accepted(alice, "reactivate_member", "plumbing", { memberId: carol.memberId });

    const cipher = await env.services.keyring.forOrg(env.services.db, org.orgId);
    const connectorId = crypto.randomUUID();
    await env.services.db.insert(connectors).values({
      id: connectorId,
      orgId: org.orgId,
      projectId: org.projectId,
      provider: "github",
      repo: "acme/web",
      webhookSecretEnc: cipher.encrypt("whsec-test"),
    });
    await accepted(alice, "revoke_connector", "plumbing", { connectorId });
    await accepted(alice, "revoke_connector", null, { connectorId });

    const ledger = await ledgerOf(env.services.db, org.orgId);
    expect(ledger.map((row) => [row.tool, row.tier, row.microCredits])).toEqual(expected.map((call) => [call.tool, call.tier, rateCard[call.tier]]));
    for (const row of ledger) {
      expect(row).toMatchObject({ userId: org.agents.alice.userId, keyId: org.agents.alice.principal.keyId, runtime: "claude-code" });
    }
    const total = expected.reduce((sum, call) => sum + rateCard[call.tier], 0);
    expect(await ledgerTotal(env.services.db, org.orgId)).toBe(total);
    // The activity log tells the same story (save_label writes no activity row).
    expect(await pricedFromActivity()).toBe(total - rateCard.bookkeeping);
    // Given credit: the signup credit less what was spent.
    expect(await balanceOf(env.services.db, org.orgId)).toEqual({
      givenMicroCredits: env.services.config.BILLING_SIGNUP_CREDIT - total,
      boughtMicroCredits: 0,
      totalMicroCredits: env.services.config.BILLING_SIGNUP_CREDIT - total,
    });
    // The charges of claims name their issues.
    const claimedIssue = await env.services.db.select({ id: issues.id }).from(issues).where(eq(issues.identifier, a));
    expect(ledger.find((row) => row.tool === "claim_issue")!.issueId).toBe(claimedIssue[0]!.id);
    // Every lease taken was paid for: claim_issue, next_issue and one next_batch of three.
    const taken = await env.services.db.select().from(leases).where(eq(leases.orgId, org.orgId));
    expect(taken.length).toBe(5);
  });

  test("usage_summary is the caller's own meter this month; bob, who wrote nothing, spent nothing", async () => {
    const usage = await callOk(alice, "usage_summary");
    expect(usage.metered).toBe(true);
    expect(usage.spentMicroCredits).toBe(await ledgerTotal(env.services.db, org.orgId));
    expect(usage.byTool).toEqual(expect.arrayContaining([{ tool: "next_batch", tier: "dispatch", calls: 1, microCredits: 7_000 }]));
    expect((await callOk(bob, "usage_summary")).spentMicroCredits).toBe(0);
  });

  test("usage_summary splits what touched an issue by its changeType, with none as \"none\" (decision 059)", async () => {
    // One of the issues was filed before changeType existed.
    const [filed] = await env.services.db.select({ id: issues.id }).from(issues).where(eq(issues.orgId, org.orgId)).limit(1);
    await env.services.db.update(issues).set({ changeType: null }).where(eq(issues.id, filed!.id));
    const typeOf = new Map((await env.services.db.select({ id: issues.id, changeType: issues.changeType }).from(issues).where(eq(issues.orgId, org.orgId))).map((i) => [i.id, i.changeType ?? "none"]));
    const expected: Record<string, number> = {};
    for (const row of await ledgerOf(env.services.db, org.orgId)) {
      if (row.issueId) expected[typeOf.get(row.issueId)!] = (expected[typeOf.get(row.issueId)!] ?? 0) + row.microCredits;
    }
    expect(Object.keys(expected)).toContain("none");
    const usage = await callOk(alice, "usage_summary");
    const split = Object.fromEntries(usage.byChangeType.map((r: { changeType: string; microCredits: number }) => [r.changeType, r.microCredits]));
    expect(split).toEqual(expected);
    expect(usage.byChangeType.every((r: { writes: number }) => r.writes > 0)).toBe(true);
  });

  test("billing_summary: the owner sees balance and cap; a member only their own spend", async () => {
    const owner = await callOk(alice, "billing_summary");
    expect(owner).toMatchObject({ enabled: true, spendCap: { monthlyMicroCredits: null, timeZone: "UTC" }, purchases: [] });
    expect(owner.balance.totalMicroCredits).toBe(env.services.config.BILLING_SIGNUP_CREDIT - (await ledgerTotal(env.services.db, org.orgId)));
    expect(owner.spendCap.spentThisMonthMicroCredits).toBe(await ledgerTotal(env.services.db, org.orgId));
    const member = await callOk(bob, "billing_summary");
    expect(member).toMatchObject({ enabled: true, balance: null, spendCap: null, yourSpendThisMonthMicroCredits: 0 });
  });

  test("a file attachment pays the work tier per started MiB", async () => {
    const { identifier } = await callOk(alice, "save_issue", { title: "Has a trace", work: true, changeType: "feat", noDependency: "independent" });
    const mib = 1024 * 1024;
    for (const size of [10, mib, mib + 1, 5 * mib + mib / 2]) {
      const before = (await ledgerOf(env.services.db, org.orgId)).length;
      const contentBase64 = Buffer.alloc(size, "a").toString("base64");
      await callOk(alice, "save_attachment_file", { issue: identifier, filename: "trace.txt", contentBase64 });
      const rows = (await ledgerOf(env.services.db, org.orgId)).slice(before);
      expect(rows.map((row) => [row.tool, row.tier, row.microCredits]), `${size} bytes`).toEqual([
        ["save_attachment_file", "work", rateCard.work * Math.ceil(size / mib)],
      ]);
      clock.advance(1);
    }
    const { tools } = await alice.listTools();
    expect(tools.find((t) => t.name === "save_attachment_file")!.description).toMatch(/ \(\$0\.005 per started MiB\)$/);
  });

  test("tools/list states the price of each metered tool when billing is on", async () => {
    const { tools } = await alice.listTools();
    expect(tools.find((t) => t.name === "next_issue")!.description).toMatch(/ \(\$0\.007 if it claims\)$/);
    expect(tools.find((t) => t.name === "heartbeat")!.description).toMatch(/ \(\$0\.0001\)$/);
    expect(tools.find((t) => t.name === "get_issue")!.description).not.toMatch(/\$/);
  });
});
