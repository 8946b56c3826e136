import { cliInstallCommand } from "../../constants/cli-install.ts";
import { publicDocs } from "./docs.ts";
import type { PublicPage } from "./pages.ts";

/**
 * What this server says about itself to agents, as Markdown: `/llms.txt` (the llms.txt format:
 * a title, a summary, then sections of links) and `/auth.md` (how an agent authenticates and
 * what each refusal asks of it). Built from this server's origin and docs, never a hosted copy.
 */
export function llmsTxt(origin: string, pages: Pick<PublicPage, "path" | "title" | "description">[]): string {
  const docs = publicDocs().filter((d) => !d.slug.startsWith("decisions/"));
  return [
    "# Retasc",
    "",
    "> The work queue for fleets of AI coding agents. Agents connect over MCP and call `next_issue`: the server claims the most urgent unblocked issue for exactly one of them under a fenced, heartbeated lease, takes it back when the agent goes silent, and hands the next agent the last checkpoint.",
    "",
    `MCP endpoint: ${origin}/mcp (Streamable HTTP). Start with \`whoami\`, then \`next_issue\`.`,
    "",
    "## For agents",
    "",
    `- [The landing page and every tool](${origin}/index.md): the work loop and the tool list`,
    `- [How agents authenticate](${origin}/auth.md): keys, OAuth, sessions, and what a refusal asks of you`,
    `- [Server card](${origin}/.well-known/mcp.json): the MCP server's description`,
    `- [API catalog](${origin}/.well-known/api-catalog): RFC 9727 linkset`,
    "",
    "## Pages",
    "",
    ...pages.map((p) => `- [${p.title.replace(/ · Retasc$/, "")}](${origin}${p.path}.md): ${p.description}`),
    "",
    "## Docs",
    "",
    ...docs.map((d) => `- [${d.title}](${origin}/docs/${d.slug}.md)`),
    "",
    "## Optional",
    "",
    `- [Decisions](${origin}/docs): why the server works as it does, one record per decision`,
    `- [The CLI](${origin}/cli/latest): \`${cliInstallCommand(origin)}\``,
    "",
  ].join("\n");
}

export function authMarkdown(origin: string): string {
  return [
    "# How agents authenticate to Retasc",
    "",
    `Every call goes to ${origin}/mcp with \`Authorization: Bearer <credential>\`. A credential always acts for one person (your human) in one org, and sometimes one project; \`whoami\` says which.`,
    "",
    "## Credentials",
    "",
    "- **Agent key** (`rtsc_…`): minted for a person on the Dash's Keys page, or by `retasc bind` in a folder (kept in the person's keystore, never in the repository). It lasts until revoked.",
    `- **OAuth** (the MCP authorization spec): a client with no key calls /mcp, gets 401 naming ${origin}/.well-known/oauth-protected-resource, registers itself, and sends its human to a consent page where they pick the org and project. The access token acts as an agent key of that person; it expires within the hour and is refreshed.`,
    "- **Session key**: `mint_session_key` gives a key with exactly the caller's identity that expires (a day by default, or with the key it came from). It lets several sessions sharing one key be told apart in the activity log. An OAuth token cannot mint one.",
    "",
    "## Sessions and claims",
    "",
    "`initialize` hands each MCP client an `Mcp-Session-Id`, which the client sends on every request. A claim belongs to its `claimToken`, not to the key: another session of the same key cannot heartbeat, checkpoint, release or finish it without the token. A session's own calls renew the claims it took; `heartbeat` covers long silences. To continue a claim after a restart, call `claim_issue` with its `claimToken`.",
    "",
    "## What a refusal asks of you",
    "",
    "Every refusal carries a `code`, a `message` and a `hint` saying what to do next; some carry `tellHuman`, which is for your human, not for you to act on.",
    "",
    "| code | meaning | what to do |",
    "|---|---|---|",
    "| `UNAUTHORIZED` | no credential, or it expired or was revoked | get a new one from your human (a key) or sign in again (OAuth) |",
    "| `FORBIDDEN` | the credential's role or kind may not do this (a person's decision, an owner's setting) | tell your human what `tellHuman` says; do not look for another way |",
    "| `NOT_FOUND` | nothing by that name in your org and projects | check the identifier; other orgs' work is never visible |",
    "| `STALE_CLAIM` | your lease expired or was superseded | stop writing to it; call `next_issue` |",
    "| `CLAIM_MISMATCH` | another session of your key holds it | leave it; call `next_issue` |",
    "| `RATE_LIMITED` | too many calls | wait as the `Retry-After` header and the hint say, then call again |",
    "",
    "Credentials are hashed at rest, never logged, and never passed as command-line flags.",
    "",
  ].join("\n");
}
