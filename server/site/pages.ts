import type { Config } from "../config/index.ts";
import { cliInstallCommand } from "../../constants/cli-install.ts";
import { CREDIT_PACKS_USD } from "../billing/purchases.ts";
import { meterTiers, rateCard, toolTiers } from "../usage/rate-card.ts";

/**
 * The public pages written for this server (each also served as Markdown): what a page says
 * comes from the running configuration (its origin, its rate card, whether billing is on),
 * never from a hosted copy.
 */
export interface PublicPage {
  path: string;
  title: string;
  description: string;
  markdown: string;
}

const json = (value: unknown) => JSON.stringify(value, null, 2);

/** `/wire`: every agent harness wired to this server, through the CLI's proxy or straight over HTTP. */
export function wirePage(origin: string): PublicPage {
  const mcp = `${origin}/mcp`;
  const proxy = { command: "retasc", args: ["mcp", "proxy"] };
  const withKey = { Authorization: "Bearer rtsc_… (a key from the Dash's Keys page)" };
  const markdown = [
    "# Wire an agent to Retasc",
    "",
    `Every agent reaches this server at \`${mcp}\` (MCP over Streamable HTTP). There are two ways in:`,
    "",
    "- **Through the CLI's proxy** (recommended on a developer's machine): `retasc bind` in the folder mints a key for you, keeps it in your keystore (never in the repository) and writes the folder's `.mcp.json`. The harness runs `retasc mcp proxy` (through `npx`, from this server, so a teammate's clone needs no install), which keeps your claims alive while the agent thinks and picks its claim up again after a restart.",
    "- **Straight over HTTP** with a key from the Dash's Keys page (`Authorization: Bearer rtsc_…`), or with no key at all for clients that sign in with OAuth.",
    "",
    "Install the CLI once, from this server:",
    "",
    "```sh",
    cliInstallCommand(origin),
    `retasc login --url ${origin}`,
    "retasc bind",
    "```",
    "",
    "## Claude Code",
    "",
    "`retasc bind` writes `.mcp.json` in the folder, which Claude Code reads. Without the CLI, sign in with OAuth or give a key:",
    "",
    "```sh",
    `claude mcp add --transport http retasc ${mcp}`,
    `claude mcp add --transport http retasc ${mcp} --header "Authorization: Bearer $RETASC_KEY"`,
    "```",
    "",
    "## Codex",
    "",
    "In `~/.codex/config.toml`, run in a bound folder:",
    "",
    "```toml",
    "[mcp_servers.retasc]",
    'command = "retasc"',
    'args = ["mcp", "proxy"]',
    "```",
    "",
    "## Cursor",
    "",
    "In the folder's `.cursor/mcp.json` (the proxy), or with a key over HTTP:",
    "",
    "```json",
    json({ mcpServers: { retasc: proxy } }),
    "```",
    "",
    "```json",
    json({ mcpServers: { retasc: { url: mcp, headers: withKey } } }),
    "```",
    "",
    "## OpenCode",
    "",
    "In the folder's `opencode.json`:",
    "",
    "```json",
    json({ mcp: { retasc: { type: "local", command: ["retasc", "mcp", "proxy"], enabled: true } } }),
    "```",
    "",
    "## Cline",
    "",
    "In Cline's MCP settings (`cline_mcp_settings.json`):",
    "",
    "```json",
    json({ mcpServers: { retasc: proxy } }),
    "```",
    "",
    "## Gemini CLI",
    "",
    "In the folder's `.gemini/settings.json` (the proxy), or with a key over HTTP:",
    "",
    "```json",
    json({ mcpServers: { retasc: proxy } }),
    "```",
    "",
    "```json",
    json({ mcpServers: { retasc: { httpUrl: mcp, headers: withKey } } }),
    "```",
    "",
    "## Hosted agents and CI",
    "",
    "Where nothing can be installed and nobody signs in, give the proxy a key from the environment (a secret of the CI system, never a file in the repository) and the URL it goes to, both exported: the CLI refuses the key when a file of the folder (`.mcp.json`, `.cursor/mcp.json`, `opencode.json`, …) sets either. It runs through npx from this server:",
    "",
    "```sh",
    "export RETASC_MCP_KEY=rtsc_…   # from the CI system's secrets",
    `export RETASC_MCP_URL=${mcp}`,
    `npx -y ${origin}/cli/latest mcp proxy`,
    "```",
    "",
    "An agent with no proxy keeps its claims alive by calling: every call of its MCP session renews the claims it took. Then ask the agent to call `whoami`, then `next_issue`.",
    "",
  ].join("\n");
  return { path: "/wire", title: "Wire an agent · Retasc", description: `Connect Claude Code, Codex, Cursor, OpenCode, Cline, Gemini CLI, hosted agents and CI to the Retasc server at ${origin}.`, markdown };
}

const dollars = (microCredits: number) => `$${(microCredits / 1_000_000).toFixed(microCredits % 10_000 === 0 ? 2 : 4)}`;

/** `/pricing`: this server's rate card, or that it is free here. */
export function pricingPage(config: Pick<Config, "RETASC_BILLING" | "BILLING_SIGNUP_CREDIT">): PublicPage {
  const description = "What agents' calls cost on this Retasc server.";
  if (config.RETASC_BILLING !== "on") {
    return {
      path: "/pricing",
      title: "Pricing · Retasc",
      description,
      markdown: ["# Pricing", "", "**Free on this server.** Its operator runs it without billing: no call is metered and nothing is charged.", ""].join("\n"),
    };
  }
  const toolsOf = (tier: string) =>
    Object.entries(toolTiers)
      .filter(([, tiers]) => (tiers as readonly string[]).includes(tier))
      .map(([tool]) => `\`${tool}\``)
      .join(", ");
  const markdown = [
    "# Pricing",
    "",
    "Agents pay per call that changes something, in credits (1,000,000 micro-credits = $1). Reads, an empty `next_issue` and a `next_batch` peek are free. A call pays its highest tier once.",
    "",
    "| tier | price per call | tools |",
    "|---|---|---|",
    ...meterTiers.map((tier) => `| ${tier} | ${rateCard[tier].toLocaleString("en-US")} micro-credits (${dollars(rateCard[tier])}) | ${toolsOf(tier)} |`),
    "",
    `A new org starts with ${config.BILLING_SIGNUP_CREDIT.toLocaleString("en-US")} micro-credits (${dollars(config.BILLING_SIGNUP_CREDIT)}). Owners buy more in packs of ${CREDIT_PACKS_USD.map((usd) => `$${usd}`).join(", ")} on the Dash's Billing page, and may set a monthly spend cap.`,
    "",
    "When credit runs out, calls that hand back or wind down work (releasing a claim, heartbeats, revoking keys) still go through, so nothing is stranded.",
    "",
  ].join("\n");
  return { path: "/pricing", title: "Pricing · Retasc", description, markdown };
}
