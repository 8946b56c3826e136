import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startApp, migratedDataDir, type AppProcess } from "../../server/testing/app-process.ts";
import { createTestDatabase, testDriver, type TestDatabase } from "../../server/testing/db.ts";
import { startFakeStripe, type FakeStripe } from "../../test/fakes/stripe.ts";
import { cliPost, signUp } from "../../server/testing/world.ts";
import { retasc as runCli } from "./testing.ts";

/**
 * `retasc billing`, `billing buy` and `billing cap` as npm installed them, against the built app
 * with billing on and the fake Stripe API: the Checkout URL the CLI prints is paid on the fake
 * Checkout page, whose signed webhook credits the org, and the CLI then shows the new balance.
 */
let fake: FakeStripe;
let app: AppProcess;
let database: TestDatabase | null = null;
let retascDir: string;
let orgId: string;

/** `retasc …` as the owner, against the server their ~/.retasc names. */
const retasc = (args: string[]) => runCli({ retascDir }, args, { env: { NO_COLOR: "1" } });

beforeAll(async () => {
  fake = await startFakeStripe();
  database = testDriver === "postgres" ? await createTestDatabase({ max: 2 }) : null;
  app = await startApp({
    ...(database ? { DATABASE_URL: database.url! } : { RETASC_DATA_DIR: migratedDataDir() }),
    RETASC_EMAIL_PASSWORD: "on",
    RETASC_BILLING: "on",
    STRIPE_SECRET_KEY: fake.secretKey,
    STRIPE_WEBHOOK_SECRET: fake.webhookSecret,
    STRIPE_API_URL: fake.url,
  });
  fake.webhookUrl = `${app.url}/webhooks/stripe`;
  const person = await signUp(app.url, "Petra");
  orgId = (await cliPost(app.url, person.token, "orgs", { name: "Petra's org" })).orgId;
  // The session `retasc login` would have stored after the device flow.
  retascDir = fs.mkdtempSync(path.join(os.tmpdir(), "retasc-billing-"));
  const session = { token: person.token, user: { id: person.userId, email: person.email, name: "Petra" }, signedInAt: new Date().toISOString() };
  fs.writeFileSync(path.join(retascDir, "config.json"), JSON.stringify({ sessions: { [app.url]: session }, defaultUrl: app.url }), { mode: 0o600 });
});
afterAll(async () => {
  await app?.stop();
  await database?.close();
  await fake?.close();
  fs.rmSync(retascDir, { recursive: true, force: true });
});

describe("retasc billing", () => {
  it("buys a pack through the Checkout URL it prints, and shows the credit once Stripe confirms", async () => {
    const before = JSON.parse((await retasc(["billing", "--json"])).stdout);
    expect(before.summary).toMatchObject({ enabled: true, balance: { boughtMicroCredits: 0 } });

    const buy = await retasc(["billing", "buy", "25"]);
    expect(buy.code).toBe(0);
    const url = buy.stdout.trim();
    expect(url).toMatch(new RegExp(`^${fake.url}/c/pay/cs_test_[0-9a-f]+$`));
    expect(buy.stderr).toContain("Pay $25 with Stripe Checkout");
    const [sent] = fake.requests.filter((r) => r.path === "/v1/checkout/sessions");
    expect(sent!.form).toMatchObject({ client_reference_id: orgId, metadata: { pack: "25" } });

    // Paying on the Checkout page delivers the signed webhook, then redirects to the Dash.
    const paid = await fetch(url, { method: "POST", redirect: "manual" });
    expect(paid.status).toBe(303);
    expect(paid.headers.get("location")).toMatch(new RegExp(`^${app.url}/dash/settings/billing\\?checkout=paid&session_id=cs_test_`));
    expect(fake.problems).toEqual([]);

    const after = await retasc(["billing"]);
    expect(after.code).toBe(0);
    const given = before.summary.balance.givenMicroCredits / 1_000_000;
    expect(after.stdout).toContain(`Balance:     $${(given + 25).toFixed(2)} ($${given.toFixed(2)} given, $25.00 bought)`);
    expect(after.stdout).toContain("no cap");
  });

  it("sets and lifts the monthly cap", async () => {
    const set = await retasc(["billing", "cap", "50"]);
    expect(set.code).toBe(0);
    expect(set.stdout + set.stderr).toContain("Monthly spend cap set to $50.00.");
    expect(JSON.parse((await retasc(["billing", "--json"])).stdout).summary.spendCap.monthlyMicroCredits).toBe(50_000_000);
    expect((await retasc(["billing"])).stdout).toContain("cap $50.00");
    const off = await retasc(["billing", "cap", "off", "--json"]);
    expect(JSON.parse(off.stdout)).toEqual({ monthlyMicroCredits: null, monthlyUsd: null });
  });

  it("refuses a pack or cap it cannot send, before calling the server", async () => {
    const requests = fake.requests.length;
    const pack = await retasc(["billing", "buy", "30"]);
    expect(pack).toMatchObject({ code: 1, stdout: "" });
    expect(pack.stderr).toContain("✗ INVALID_INPUT: billing buy takes one pack: 10, 25, 50, 100 (US dollars)");
    const cap = await retasc(["billing", "cap", "lots"]);
    expect(cap.code).toBe(1);
    expect(cap.stderr).toContain("✗ INVALID_INPUT: billing cap takes a monthly amount in US dollars, or off");
    expect(fake.requests.length).toBe(requests);
  });

  it("says what an org id it cannot act in is", async () => {
    const other = await retasc(["billing", "--org-id", crypto.randomUUID()]);
    expect(other.code).toBe(1);
    expect(other.stderr).toContain("✗ NOT_FOUND");
  });
});
