import fs from "node:fs";
import type { Config } from "../config/index.ts";
import { configuredChannels } from "../notify/bindings.ts";
import type { PublicPage } from "./pages.ts";

/**
 * Pages whose content is this server's configuration: `/connectors` (what it can connect to),
 * and `/terms` and `/privacy` (the operator's own text, absent when not configured).
 */
const channelNames = { slack: "Slack", discord: "Discord", telegram: "Telegram", email: "Email" } as const;

/** `/connectors`: intake, CI verification, notifications and importers, as this server is set up. */
export function connectorsPage(config: Config, origin: string): PublicPage {
  const channels = configuredChannels(config);
  const on = (Object.keys(channelNames) as (keyof typeof channelNames)[]).filter((c) => channels[c]);
  const off = (Object.keys(channelNames) as (keyof typeof channelNames)[]).filter((c) => !channels[c]);
  const markdown = [
    "# Connectors on this server",
    "",
    "What this Retasc server connects to. Intake and importers are set up by an org's owners and admins on the Dash; notification channels need the operator's credentials first.",
    "",
    "## Intake: issues in from GitHub and GitLab",
    "",
    `- **GitHub** repositories: a signed webhook per connector (Issues, Issue comments, Pull requests), created on the Dash (Settings › Connectors) or with \`retasc connectors add\`.`,
    `- **GitLab** projects on ${new URL(config.GITLAB_URL).host} or a self-managed GitLab at a public address: the same, with GitLab's secret token.`,
    "",
    "Members' issues come in ready to work on; outsiders' issues, edits and comments wait until a person reads and releases them. A connector with a token closes the source issue when its Retasc issue is done or canceled.",
    "",
    "## CI verification",
    "",
    "In a project that verifies finishes, the same GitHub and GitLab connectors read check runs, check suites, statuses, workflow runs and pipelines. Other CI systems attest with a CI key: `retasc verify <identifier> --commit <sha> --status pass|fail --check <name>`.",
    "",
    "## Notifications",
    "",
    on.length > 0 ? `Set up here: ${on.map((c) => `**${channelNames[c]}**`).join(", ")}. Each person connects their own on the Dash (Settings › Notifications) and picks what they hear about.` : "No notification channel is set up on this server yet.",
    ...(off.length > 0 ? ["", `Not set up here: ${off.map((c) => channelNames[c]).join(", ")} (the operator adds their credentials: see ${origin}/docs/operations).`] : []),
    "",
    "## Importers",
    "",
    "- **Linear**: a team, with its comments, relations and people, from a personal API key.",
    "- **Jira Cloud and Data Center**: a project, from a site and an email with an API token (Cloud) or a personal access token (Data Center).",
    "- **Asana**: a project with its subtasks, dependencies and comments, from a personal access token.",
    "- **Shortcut**: a team's stories with their epics, story links and threaded comments, from an API token.",
    "- **ClickUp**: a List or a Space with its subtasks, dependencies and threaded comments, from a personal API token.",
    "- **CSV**: any export (Trello, GitHub Projects, a spreadsheet), with a column picked for each field.",
    "",
    `Each runs from the Dash (Settings › Import) or \`retasc import <linear|jira|asana|shortcut|clickup|csv>\`, with a dry run first. What comes over: ${origin}/migrate.`,
    "",
  ].join("\n");
  return { path: "/connectors", title: "Connectors · Retasc", description: `What the Retasc server at ${origin} connects to: GitHub and GitLab intake, CI verification, notifications and importers.`, markdown };
}

const legal = {
  "/terms": { key: "RETASC_TERMS_FILE", title: "Terms of service", description: "The terms of service of this Retasc server." },
  "/privacy": { key: "RETASC_PRIVACY_FILE", title: "Privacy notice", description: "How this Retasc server's operator handles personal data." },
} as const;

/** `/terms` and `/privacy`: the operator's Markdown file, or null when there is none. */
export function operatorPage(pagePath: string, config: Pick<Config, "RETASC_TERMS_FILE" | "RETASC_PRIVACY_FILE">): PublicPage | null {
  const page = legal[pagePath as keyof typeof legal];
  const file = page && config[page.key];
  if (!page || !file) return null;
  return { path: pagePath, title: `${page.title} · Retasc`, description: page.description, markdown: fs.readFileSync(file, "utf8") };
}

export const operatorPagePaths = (config: Pick<Config, "RETASC_TERMS_FILE" | "RETASC_PRIVACY_FILE">) =>
  (Object.keys(legal) as (keyof typeof legal)[]).filter((p) => config[legal[p].key]);
