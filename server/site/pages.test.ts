import { describe, expect, it } from "vitest";
import { CREDIT_PACKS_USD } from "../billing/purchases.ts";
import { meterTiers, rateCard } from "../usage/rate-card.ts";
import { pricingPage, wirePage } from "./pages.ts";

describe("the public pages say what this server runs", () => {
  it("pricing is the running rate card, signup credit and packs, or free when billing is off", () => {
    const on = pricingPage({ RETASC_BILLING: "on", BILLING_SIGNUP_CREDIT: 2_500_000 }).markdown;
    for (const tier of meterTiers) expect(on).toContain(`| ${tier} | ${rateCard[tier].toLocaleString("en-US")} micro-credits`);
    expect(on).toMatch(/\| dispatch \| [^|]+ \| `next_issue`, `next_batch`, `claim_issue`/);
    expect(on).toContain("A new org starts with 2,500,000 micro-credits ($2.50)");
    for (const usd of CREDIT_PACKS_USD) expect(on).toContain(`$${usd}`);
    expect(pricingPage({ RETASC_BILLING: "off", BILLING_SIGNUP_CREDIT: 2_500_000 }).markdown).toContain("**Free on this server.**");
  });

  it("wire fills in this server's origin for every harness", () => {
    const { markdown } = wirePage("https://queue.example.com");
    for (const harness of ["Claude Code", "Codex", "Cursor", "OpenCode", "Cline", "Gemini CLI", "Hosted agents and CI"]) expect(markdown).toContain(`## ${harness}`);
    expect(markdown).toContain("claude mcp add --transport http retasc https://queue.example.com/mcp");
    expect(markdown).toContain("npm install -g https://queue.example.com/cli/latest");
    expect(markdown).toContain("npx -y https://queue.example.com/cli/latest mcp proxy");
    expect(markdown).not.toContain("localhost");
  });
});
