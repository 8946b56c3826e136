import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../config/index.ts";
import { runEntry } from "../../testing/app-process.ts";

/** RETASC_BILLING=on needs the Stripe keys; the start says so in one line. Off (the default) needs nothing. */
describe("billing configuration", () => {
  it("is off by default and then needs no Stripe keys", () => {
    const config = loadConfig({});
    expect(config.RETASC_BILLING).toBe("off");
    expect(config.STRIPE_API_URL).toBe("https://api.stripe.com");
  });

  it("refuses billing on without the Stripe keys, naming each missing one", () => {
    expect(() => loadConfig({ RETASC_BILLING: "on" })).toThrow(ConfigError);
    expect(() => loadConfig({ RETASC_BILLING: "on" })).toThrow(/RETASC_BILLING=on needs STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET/);
    expect(() => loadConfig({ RETASC_BILLING: "on", STRIPE_SECRET_KEY: "sk_test_1" })).toThrow(/needs STRIPE_WEBHOOK_SECRET \(/);
    expect(loadConfig({ RETASC_BILLING: "on", STRIPE_SECRET_KEY: "sk_test_1", STRIPE_WEBHOOK_SECRET: "whsec_1", STRIPE_API_URL: "http://127.0.0.1:12111" })).toMatchObject({
      RETASC_BILLING: "on",
      STRIPE_API_URL: "http://127.0.0.1:12111",
    });
    expect(() => loadConfig({ RETASC_BILLING: "yes" })).toThrow(/RETASC_BILLING must be on or off/);
  });

  it("stops the server at start with one line saying what is missing", () => {
    const result = runEntry("main.ts", [], { RETASC_BILLING: "on", STRIPE_SECRET_KEY: "sk_test_1" });
    expect(result.status).toBe(1);
    expect(result.stderr.trim().split("\n")).toEqual([
      "✗ retasc could not start: invalid configuration: RETASC_BILLING=on needs STRIPE_WEBHOOK_SECRET (from the Stripe dashboard: API keys, and the webhook endpoint for /webhooks/stripe)",
    ]);
  });
});
