import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../config/index.ts";
import { publicDocs } from "./docs.ts";
import { publicPage, publicPagePaths } from "./registry.ts";
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

describe("the written pages and the pages built from configuration", () => {
  const origin = "https://queue.example.com";
  const config = (env: Record<string, string> = {}) => loadConfig({ NODE_ENV: "test", ...env });

  it("fill in this server's origin and install line, and every link between them leads to a page or a doc", () => {
    const paths = publicPagePaths(config());
    expect(paths).toEqual(expect.arrayContaining(["/product", "/compare", "/migrate", "/guides", "/connectors", "/wire", "/pricing"]));
    expect(paths.filter((p) => p.startsWith("/guides/"))).toHaveLength(6);
    const docs = new Set(publicDocs().map((d) => `/docs/${d.slug}`));
    for (const path of paths) {
      const page = publicPage(path, config(), origin)!;
      expect(page.title, path).toMatch(/ · Retasc$/);
      expect(page.markdown, path).not.toContain("{{");
      expect(page.markdown, path).not.toContain("localhost");
      for (const [, target] of page.markdown.matchAll(/\]\(https:\/\/queue\.example\.com(\/[^)#\s]*)/g)) {
        const to = target!.replace(/\.md$/, "");
        expect(paths.includes(to) || docs.has(to), `${path} links to ${target}`).toBe(true);
      }
    }
    expect(publicPage("/product", config(), origin)!.markdown).toContain("npm install -g https://queue.example.com/cli/latest");
    const guides = publicPage("/guides", config(), origin)!.markdown;
    for (const guide of paths.filter((p) => p.startsWith("/guides/"))) expect(guides).toContain(`(${origin}${guide})`);
  });

  it("connectors name the notification channels this server has credentials for, and only those", () => {
    const none = publicPage("/connectors", config(), origin)!.markdown;
    expect(none).toContain("No notification channel is set up on this server yet.");
    const some = publicPage("/connectors", config({ DISCORD_BOT_TOKEN: "t", DISCORD_PUBLIC_KEY: "a".repeat(64), SMTP_URL: "smtp://127.0.0.1:2525", SMTP_FROM: "retasc@example.com" }), origin)!.markdown;
    expect(some).toContain("Set up here: **Discord**, **Email**.");
    expect(some).toContain("Not set up here: Slack, Telegram");
  });

  it("terms and privacy are the operator's files when configured, absent otherwise; a missing file fails at boot", () => {
    expect(publicPage("/terms", config(), origin)).toBeNull();
    expect(publicPagePaths(config())).not.toContain("/terms");
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "retasc-terms-"));
    fs.writeFileSync(path.join(dir, "terms.md"), "# Our terms\n\nBe kind.\n");
    const withTerms = config({ RETASC_TERMS_FILE: path.join(dir, "terms.md") });
    expect(publicPage("/terms", withTerms, origin)!.markdown).toContain("Be kind.");
    expect(publicPagePaths(withTerms)).toContain("/terms");
    expect(publicPage("/privacy", withTerms, origin)).toBeNull();
    expect(() => config({ RETASC_PRIVACY_FILE: path.join(dir, "missing.md") })).toThrow(/RETASC_PRIVACY_FILE.*cannot read/);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
