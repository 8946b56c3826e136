import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { eq, sql } from "drizzle-orm";
import { beforeAll, describe, expect, test } from "vitest";
import { query } from "../../db/client.ts";
import { billingCredits, issues, orgs } from "../../db/schema/index.ts";
import { grantCredit } from "../admin/commands.ts";
import { setSpendCap } from "../billing/index.ts";
import { withPrincipal } from "../with-principal.ts";
import { DomainError } from "../errors.ts";
import { callError, callOk, connectClient, inProcessFetch, inProcessOrigin } from "../mcp/testing.ts";
import { createOrgFor } from "../orgs/account.ts";
import { humanPrincipal } from "../orgs/access.ts";
import { ensureUser } from "../orgs/index.ts";
import { TestClock } from "../testing/db.ts";
import { useTestServices } from "../testing/database.ts";
import { seedOrg, type SeededOrg } from "../testing/fixtures.ts";
import { addCredit, balanceOf } from "./credit.ts";
import { billingOnConfig, ledgerOf, ledgerTotal, setBalance } from "./testing.ts";

const clock = new TestClock(new Date("2026-06-30T11:30:00.000Z").getTime());
const env = useTestServices({ clock, config: billingOnConfig() });
const endpoint = `${inProcessOrigin}/mcp`;

const connect = (key: string) => connectClient(endpoint, key, { fetch: inProcessFetch(env.services) });
const file = (client: Client, title: string) => callOk(client, "save_issue", { title, work: true, changeType: "feat", noDependency: "independent" });

describe("an org out of credit", () => {
  let org: SeededOrg;
  let alice: Client;
  beforeAll(async () => {
    org = await seedOrg(env.services, { name: "Dry Org" });
    alice = await connect(org.agents.alice.key);
  });

  test("a metered write fails BILLING_INACTIVE with tellHuman over /mcp; reads and wind-down still work, and nothing is written", async () => {
    const held = await file(alice, "Held before the credit ran out");
    const kept = await file(alice, "Waits in the queue");
    const claim = await callOk(alice, "claim_issue", { identifier: held.identifier });
    await setBalance(env.services.db, org.orgId, 2_000);
    const before = await ledgerOf(env.services.db, org.orgId);

    const refusal = await callError(alice, "save_issue", { title: "Too late", work: true, changeType: "feat", noDependency: "independent" });
    expect(refusal.code).toBe("BILLING_INACTIVE");
    expect(refusal.tellHuman).toContain("Alice");
    expect(refusal.tellHuman).toMatch(/alice-[a-z0-9]+@example\.com/);
    expect(refusal.tellHuman).toContain("https://retasc.example.com/dash/settings/billing");
    const count = await env.services.db.select({ id: issues.id }).from(issues).where(eq(issues.orgId, org.orgId));
    expect(count.length).toBe(2);

    // next_issue is refused inside its one statement: no lease taken.
    expect((await callError(alice, "next_issue")).code).toBe("BILLING_INACTIVE");
    expect((await callOk(alice, "get_issue", { identifier: kept.identifier })).held).toBe(false);
    // The one-statement finish falls back, and the general path refuses: the work stays held.
    expect((await callError(alice, "save_issue", { identifier: held.identifier, status: "done", claimToken: claim.claimToken })).code).toBe(
      "BILLING_INACTIVE",
    );
    expect((await callOk(alice, "get_issue", { identifier: held.identifier })).status).toBe("doing");
    expect(await ledgerOf(env.services.db, org.orgId)).toEqual(before);

    // Wind-down: heartbeat is paid while the credit covers it, then passes free; checkpoint and release never refuse.
    await callOk(alice, "heartbeat", { identifier: held.identifier, claimToken: claim.claimToken });
    await callOk(alice, "checkpoint", { identifier: held.identifier, claimToken: claim.claimToken, done: "saved my place" });
    await callOk(alice, "release_issue", { identifier: held.identifier, claimToken: claim.claimToken, note: "out of credit" });
    const windDown = (await ledgerOf(env.services.db, org.orgId)).slice(before.length).map((row) => [row.tool, row.microCredits]);
    expect(windDown).toEqual([["heartbeat", 100], ["checkpoint", 0], ["release_issue", 1_000]]);
    expect((await balanceOf(env.services.db, org.orgId)).totalMicroCredits).toBe(900);

    const summary = await callOk(alice, "billing_summary");
    expect(summary.balance.totalMicroCredits).toBe(900);
  });
});

describe("the monthly spend cap", () => {
  test("over the cap, SPEND_CAP with tellHuman; the month starts in the org's time zone; owners only set it", async () => {
    const org = await seedOrg(env.services, { name: "Capped Org" });
    await env.services.db.update(orgs).set({ timeZone: "Pacific/Auckland" }).where(eq(orgs.id, org.orgId));
    const owner = withPrincipal(env.services, humanPrincipal(org.orgId, org.agents.alice.userId, "dash"));
    const member = withPrincipal(env.services, humanPrincipal(org.orgId, org.agents.bob.userId, "dash"));
    expect((await setSpendCap(member, { monthlyUsd: 1 }).catch((e: DomainError) => e.code))).toBe("FORBIDDEN");
    expect(await setSpendCap(owner, { monthlyUsd: 0.012 })).toEqual({ monthlyMicroCredits: 12_000, monthlyUsd: 0.012 });

    // 2026-06-30 23:30 in Auckland: still June there.
    const alice = await connect(org.agents.alice.key);
    const first = await file(alice, "One");
    await file(alice, "Two");
    const refusal = await callError(alice, "save_issue", { title: "Three", work: true, changeType: "feat", noDependency: "independent" });
    expect(refusal.code).toBe("SPEND_CAP");
    expect(refusal.tellHuman).toContain("spend cap");
    expect(refusal.tellHuman).toContain("https://retasc.example.com/dash/settings/billing");
    expect((await callError(alice, "claim_issue", { identifier: first.identifier })).code).toBe("SPEND_CAP");
    expect(await ledgerTotal(env.services.db, org.orgId)).toBe(10_000);

    // Half past midnight on 1 July in Auckland (12:30 UTC on 30 June): a new month there.
    clock.set(new Date("2026-06-30T12:30:00.000Z"));
    const claim = await callOk(alice, "claim_issue", { identifier: first.identifier });
    await callOk(alice, "heartbeat", { identifier: first.identifier, claimToken: claim.claimToken });
    const summary = await callOk(alice, "billing_summary");
    expect(summary.spendCap).toEqual({
      monthlyMicroCredits: 12_000,
      spentThisMonthMicroCredits: 7_100,
      monthStartsAt: "2026-06-30T12:00:00.000Z",
      timeZone: "Pacific/Auckland",
    });
    // Each charge reads the month's start: in PL/pgSQL its statement keeps one plan per
    // connection, where a SQL function's body was parsed and planned again in every transaction (decision 121).
    const languages = await query<{ lanname: string }>(
      env.services.db,
      sql`select l.lanname from pg_proc p join pg_language l on l.oid = p.prolang where p.proname = 'retasc_billing_month_start'`,
    );
    expect(languages).toEqual([{ lanname: "plpgsql" }]);
    // Lifting the cap lifts the refusal.
    await setSpendCap(owner, { monthlyUsd: null });
    await file(alice, "Three");
    clock.set(new Date("2026-06-30T11:30:00.000Z"));
  });
});

describe("credit", () => {
  test("a person's first org gets the signup credit once, as given credit, even when two orgs are created at once", async () => {
    const userId = await ensureUser(env.services.db, `founder-${Date.now()}@example.com`, "Founder");
    const created = await Promise.all([
      createOrgFor(env.services, userId, { name: "First" }),
      createOrgFor(env.services, userId, { name: "Second" }),
    ]);
    const third = await createOrgFor(env.services, userId, { name: "Third" });
    const balances = await Promise.all([...created, third].map((org) => balanceOf(env.services.db, org.orgId)));
    expect(balances.map((b) => b.givenMicroCredits).sort((x, y) => y - x)).toEqual([10_000_000, 0, 0]);
    const signups = await env.services.db.select().from(billingCredits).where(eq(billingCredits.ref, userId));
    expect(signups).toMatchObject([{ kind: "given", source: "signup", microCredits: 10_000_000 }]);
  });

  test("BILLING_SIGNUP_CREDIT sets the amount", async () => {
    const services = { ...env.services, config: billingOnConfig({ BILLING_SIGNUP_CREDIT: "2500000" }) };
    const userId = await ensureUser(env.services.db, `small-${Date.now()}@example.com`);
    const { orgId } = await createOrgFor(services, userId, { name: "Small" });
    expect((await balanceOf(env.services.db, orgId)).givenMicroCredits).toBe(2_500_000);
  });

  test("grant-credit adds given credit with its note; a wrong org or amount is refused", async () => {
    const org = await seedOrg(env.services, { name: "Granted Org" });
    const granted = await grantCredit(env.services, { org: org.orgId, "micro-credits": "3000000", note: "outage on 30 June" });
    expect(granted).toMatchObject({ orgId: org.orgId, microCredits: 3_000_000, note: "outage on 30 June", givenMicroCredits: 13_000_000, totalMicroCredits: 13_000_000 });
    const rows = await env.services.db.select().from(billingCredits).where(eq(billingCredits.orgId, org.orgId));
    expect(rows.map((r) => [r.kind, r.source, r.microCredits, r.note])).toEqual([
      ["given", "signup", 10_000_000, "signup credit"],
      ["given", "grant", 3_000_000, "outage on 30 June"],
    ]);
    await expect(grantCredit(env.services, { org: "no-such-org", "micro-credits": "1", note: "x" })).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(grantCredit(env.services, { org: org.orgId, "micro-credits": "-5", note: "x" })).rejects.toThrow(/at least 1/);
    await expect(grantCredit(env.services, { org: org.orgId, "micro-credits": "5" } as never)).rejects.toThrow(/--note/);
  });

  test("addCredit is idempotent on (org, source, ref); a refund takes what is left of bought credit, never below zero", async () => {
    const org = await seedOrg(env.services, { name: "Bought Org" });
    const at = clock.now();
    const buy = { orgId: org.orgId, kind: "bought" as const, microCredits: 25_000_000, source: "stripe", ref: "cs_test_1", at };
    expect(await env.services.db.transaction((tx) => addCredit(tx, buy))).toEqual({ added: true });
    expect(await env.services.db.transaction((tx) => addCredit(tx, buy))).toEqual({ added: false });
    expect(await balanceOf(env.services.db, org.orgId)).toMatchObject({ givenMicroCredits: 10_000_000, boughtMicroCredits: 25_000_000 });
    // Given credit is spent first.
    const alice = await connect(org.agents.alice.key);
    await file(alice, "Spends given credit");
    expect(await balanceOf(env.services.db, org.orgId)).toMatchObject({ givenMicroCredits: 9_995_000, boughtMicroCredits: 25_000_000 });
    const refund = { ...buy, microCredits: -30_000_000, ref: "refund:ch_1" };
    expect(await env.services.db.transaction((tx) => addCredit(tx, refund))).toEqual({ added: true });
    expect(await balanceOf(env.services.db, org.orgId)).toMatchObject({ givenMicroCredits: 9_995_000, boughtMicroCredits: 0 });
    const [taken] = await env.services.db.select().from(billingCredits).where(eq(billingCredits.ref, "refund:ch_1"));
    expect(taken!.microCredits).toBe(-25_000_000);
  });
});

describe("billing off", () => {
  const off = useTestServices({ clock });
  test("no charge row and no refusal, even at zero credit; billing_summary says it is off", async () => {
    const org = await seedOrg(off.services, { name: "Free Org" });
    await setBalance(off.services.db, org.orgId, 0);
    const alice = await connectClient(endpoint, org.agents.alice.key, { fetch: inProcessFetch(off.services) });
    const issue = await callOk(alice, "save_issue", { title: "Free", work: true, changeType: "feat", noDependency: "independent" });
    const claim = await callOk(alice, "next_issue");
    await callOk(alice, "save_issue", { identifier: issue.identifier, status: "done", claimToken: claim.claimToken });
    expect(await ledgerOf(off.services.db, org.orgId)).toEqual([]);
    const summary = await callOk(alice, "billing_summary");
    expect(summary).toMatchObject({ enabled: false, balance: null });
    expect(summary.note).toMatch(/Billing is off/);
    const { tools } = await alice.listTools();
    expect(tools.some((t) => /micro-credits|\$\d/.test(t.description ?? ""))).toBe(false);
  });
});
