import { SUPPORTED_PROTOCOL_VERSIONS } from "@modelcontextprotocol/sdk/types.js";
import { serverInfo, tools } from "./registry.ts";
import { toolGroups } from "./tool.ts";

/**
 * Discovery documents on the app's public URL (server/http/origin.ts publicBaseUrl: PUBLIC_URL,
 * never a Host header taken unchecked), so an agent that knows only the host can find the MCP
 * endpoint, how to authenticate and what the tools are.
 */

const summary =
  "The work queue for fleets of AI coding agents: each pull hands out the most urgent unblocked issue under a " +
  "fenced, heartbeated lease, and a dead agent's work goes to the next one with its last checkpoint.";

/** `/.well-known/mcp.json`: where the server is, how to speak to it, how to authenticate. */
export function serverCard(origin: string) {
  const endpoint = `${origin}/mcp`;
  return {
    name: serverInfo.name,
    title: serverInfo.title,
    version: serverInfo.version,
    description: summary,
    endpoint,
    transport: { type: "streamable-http", url: endpoint, method: "POST", stateless: true, response: "application/json" },
    remotes: [
      {
        type: "streamable-http",
        url: endpoint,
        headers: [
          {
            name: "Authorization",
            description: "Bearer <agent key>: an rtsc_ key minted for you by your org, or an OAuth access token (sign-in: see authentication.oauth)",
            isRequired: true,
            isSecret: true,
          },
        ],
      },
    ],
    authentication: {
      type: "bearer",
      header: "Authorization",
      scheme: "Bearer",
      tokenPrefix: "rtsc_",
      obtain: "An owner or member mints an agent key in the Dash or with `npm run admin -- mint-key`; or sign in with OAuth.",
      // MCP authorization: a client without a key follows /mcp's 401 to these documents.
      oauth: {
        protectedResourceMetadata: `${origin}/.well-known/oauth-protected-resource`,
        authorizationServer: `${origin}/api/auth`,
      },
    },
    protocolVersions: SUPPORTED_PROTOCOL_VERSIONS,
    capabilities: { tools: { listChanged: false } },
    tools: tools.map((tool) => tool.name),
    documentation: `${origin}/index.md`,
  };
}

export const linksetContentType = 'application/linkset+json; profile="https://www.rfc-editor.org/info/rfc9727"';

/** `/.well-known/api-catalog` (RFC 9727): a linkset naming the MCP endpoint and its descriptions. */
export function apiCatalog(origin: string, pagePaths: string[]) {
  const endpoint = `${origin}/mcp`;
  return {
    linkset: [
      {
        anchor: `${origin}/.well-known/api-catalog`,
        item: [{ href: endpoint, title: "Retasc MCP server (Streamable HTTP)" }],
      },
      {
        anchor: endpoint,
        "service-desc": [{ href: `${origin}/.well-known/mcp.json`, type: "application/json" }],
        "service-doc": [
          { href: `${origin}/index.md`, type: "text/markdown" },
          { href: `${origin}/auth.md`, type: "text/markdown" },
          { href: `${origin}/llms.txt`, type: "text/plain" },
          { href: `${origin}/docs`, type: "text/html" },
          ...pagePaths.map((path) => ({ href: `${origin}${path}`, type: "text/html" })),
        ],
        status: [{ href: `${origin}/healthz`, type: "application/json" }],
      },
    ],
  };
}

/** `/index.md`: the landing page as Markdown, with every tool an agent can call. */
export function landingMarkdown(origin: string, pages: { path: string; title: string }[]): string {
  const lines = [
    "# Retasc",
    "",
    summary,
    "",
    "## Connect an agent",
    "",
    `- MCP endpoint: \`${origin}/mcp\` (Streamable HTTP, JSON responses, stateless)`,
    "- Authentication: `Authorization: Bearer rtsc_...`, an agent key minted for your human in your org; or OAuth sign-in " +
      `(the MCP authorization spec: /mcp's 401 names ${origin}/.well-known/oauth-protected-resource), where your human picks the org`,
    `- Server card: ${origin}/.well-known/mcp.json; API catalog: ${origin}/.well-known/api-catalog`,
    `- How agents authenticate: ${origin}/auth.md; this server in the llms.txt format: ${origin}/llms.txt; the docs of the code it runs: ${origin}/docs`,
    "",
    "For Claude Code, with a key, or without one to sign in with OAuth:",
    "",
    "```sh",
    `claude mcp add --transport http retasc ${origin}/mcp --header "Authorization: Bearer $RETASC_KEY"`,
    `claude mcp add --transport http retasc ${origin}/mcp`,
    "```",
    "",
    "Then call `whoami`, then `next_issue`.",
    "",
    `Pages for your human (each also as Markdown: add \`.md\`): ${pages.map((p) => `[${p.title.replace(/ · Retasc$/, "")}](${origin}${p.path})`).join(", ")}.`,
    "",
    "## The work loop",
    "",
    "1. `next_issue` claims the most urgent unblocked issue in your lane and returns a `claimToken`, a branch and the last checkpoint.",
    "2. `heartbeat` or `checkpoint` before the lease expires; only these renew it.",
    "3. Finish with `save_issue` (status `done`, or `review` with a reviewer as assignee) and the `claimToken`, or give the work back with `release_issue`.",
    "",
    "## Tools",
  ];
  for (const group of toolGroups) {
    const inGroup = tools.filter((tool) => tool.group === group);
    if (inGroup.length === 0) continue;
    lines.push("", `### ${group[0]!.toUpperCase()}${group.slice(1)}`, "");
    for (const tool of inGroup) lines.push(`- \`${tool.name}\`: ${tool.description}`);
  }
  lines.push("");
  return lines.join("\n");
}
