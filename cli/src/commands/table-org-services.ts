import { type Command, command, url, json, orgId } from "../command.ts";
import { billing, billingBuy, billingCap } from "./billing.ts";
import { exportOrg } from "./transfer.ts";
import { importFrom } from "./import.ts";
import { connectorAdd, connectorList, connectorRevoke } from "./connectors.ts";
import { issueUnquarantine } from "./quarantine.ts";
import { triage } from "./triage.ts";
import { identity } from "./identity.ts";

/** The command table's part for an org's services: billing, connectors, the quarantine release, triage, export and import. */
export const serviceCommands: Record<string, Command> = {
  billing: command({
    summary: "the org's credit (given and bought), this month's spend against the cap, recent charges",
    usage: "retasc billing [--org-id <id>] [--json]",
    options: { "org-id": orgId, url, json },
    details: "Owners and admins see the org's balance and everyone's charges; members their own.",
    run: billing,
  }),
  "billing buy": command({
    summary: "buy a credit pack: prints the Stripe Checkout URL to pay at (owner or admin)",
    usage: "retasc billing buy <10|25|50|100> [--org-id <id>] [--json]",
    positionals: "<usd>",
    options: { "org-id": orgId, url, json },
    run: billingBuy,
  }),
  "billing cap": command({
    summary: "set the org's monthly spend cap in US dollars, or lift it with off (owner)",
    usage: "retasc billing cap <usd|off> [--org-id <id>] [--json]",
    positionals: "<usd|off>",
    options: { "org-id": orgId, url, json },
    run: billingCap,
  }),
  "connector add": command({
    summary: "connect a repository's issues to a project: prints the webhook URL and its secret (shown once) and the provider's steps (owner or admin)",
    usage: "retasc connector add <github|gitlab> <owner/name> --project <PREFIX> [--base-url <url>] [--token-stdin] [--pull-requests --reviewer <email>] [--org-id <id>] [--json]",
    positionals: "<github|gitlab> <repository>",
    options: {
      project: { type: "string", value: "<PREFIX>", description: "the project its issues go to" },
      "base-url": { type: "string", value: "<url>", description: "a self-hosted GitLab" },
      "token-stdin": { type: "boolean", description: "read a write-back token (closes the source when an issue is done) from standard input" },
      "pull-requests": { type: "boolean", description: "outsiders' pull/merge requests become review items on the reviewer's lane" },
      reviewer: { type: "string", value: "<email>", description: "the member who reviews them (needed with --pull-requests)" },
      "org-id": orgId,
      url,
      json,
    },
    run: connectorAdd,
  }),
  "connector list": command({
    summary: "list the org's connectors: Pending or Connected, last delivery, last error",
    usage: "retasc connector list [--org-id <id>] [--json]",
    options: { "org-id": orgId, url, json },
    run: connectorList,
  }),
  "connector revoke": command({
    summary: "disconnect a connector: its webhooks are refused from now on (owner or admin)",
    usage: "retasc connector revoke <id> [--org-id <id>] [--json]",
    positionals: "<id>",
    options: { "org-id": orgId, url, json },
    run: connectorRevoke,
  }),
  "issue unquarantine": command({
    summary: "release an issue agents kept abandoning (quarantined) back to the queue, as a person",
    usage: "retasc issue unquarantine <PFX-N> [--org-id <id>] [--json]",
    positionals: "<PFX-N>",
    options: { "org-id": orgId, url, json },
    details:
      "An issue whose claims lapsed or were released several times in a row with no checkpoint is blocked with the reason, and no agent is handed it. " +
      "Read what the agents wrote (the issue page on the Dash, or get_issue's quarantine), then release it: it goes back to todo and its count starts over.",
    run: issueUnquarantine,
  }),
  triage: command({
    summary: "read outsiders' issues and comments waiting for a person, and let one in after reading it (interactive only)",
    usage: "retasc triage [PFX-42] [--org-id <id>] [--json]",
    positionals: "[issue]",
    options: { "org-id": orgId, url, json: { type: "boolean", description: "the conversation on stderr; on stdout, once you stop, what you let in as JSON" } },
    details:
      "Lists what came from outside the team and waits (issues, edits made after acceptance, comments), shows the one you pick in full, " +
      "and lets exactly that text in when you type accept (release for a comment); named, an issue's own text (or its held comments) is shown at once. It runs only at a terminal, and no flag accepts: " +
      "no agent or script can let outside text in.",
    run: triage,
  }),
  identity: command({
    summary: "claim an imported person (a placeholder with your verified email) as yourself: their history becomes yours (interactive only)",
    usage: "retasc identity [--org-id <id>] [--json]",
    options: { "org-id": orgId, url, json: { type: "boolean", description: "the conversation on stderr; on stdout, once you stop, what you claimed or dismissed as JSON" } },
    details:
      "Lists the people an import (Linear, Jira, Asana, Shortcut, ClickUp, CSV) carried into the org whose email is your verified one, asks which is you, " +
      "and claims it when you type me: their issues, comments, attachments and activity move to your account for good. " +
      "none says none of them is you (they are not offered again). It runs only at a terminal; no flag answers it.",
    run: identity,
  }),
  export: command({
    summary: "the whole org, decrypted, as JSON (everything; imports back) or CSV (issues or comments), owners and admins",
    usage: "retasc export [--format json|csv] [--table issues|comments] [--out <file>] [--org-id <id>] [--json]",
    options: {
      format: { type: "string", value: "<json|csv>", description: "json (default): everything, the format of docs/export-format.md; csv: one table" },
      table: { type: "string", value: "<issues|comments>", description: "the table a CSV export holds (default issues)" },
      out: { type: "string", value: "<file>", description: "write to this file (mode 0600) instead of standard output" },
      "org-id": orgId,
      url,
      json: { type: "boolean", description: "with --out, print {out, bytes, format} as JSON instead of the sentence (without --out, the export itself is the output)" },
    },
    details: "Streamed as it is read: an org of any size exports in flat memory.",
    run: exportOrg,
  }),
  import: command({
    summary: "bring a Linear or Shortcut team, a Shortcut epic, a Jira or Asana project, a ClickUp List or Space or a CSV into a project: identifiers, threads and history kept (owners and admins)",
    usage:
      "retasc import linear --team <KEY> | jira --site <url> [--email <address>] --project-key <KEY> | asana --asana-project <gid> | shortcut (--team <name> | --epic <id or name>) | clickup (--list | --space) <id or URL> | csv --file <path> [--mapping <file.json>]  " +
      "(--dry-run | --new-project <name> [--prefix <PFX>] | --project <PREFIX>) [--keep-credential] [--org-id <id>] [--json]  |  retasc import kept | again <source> <id> | forget <source> <id>",
    positionals: "linear|jira|asana|shortcut|clickup|csv|kept|again|forget",
    options: {
      team: { type: "string", value: "<KEY>", description: "linear: the team's key (ENG) or id; shortcut: the team's name, @mention or id; without it (or --epic), the teams the credential sees are listed (shortcut: and its epics)" },
      epic: { type: "string", value: "<id>", description: "shortcut, instead of --team: one epic, by its id, URL or name: the epic (a container) and its stories, whatever their team" },
      site: { type: "string", value: "<url>", description: "jira: your site, https://your-team.atlassian.net or your Data Center's URL" },
      email: { type: "string", value: "<address>", description: "jira: Cloud: the email of your Atlassian account (the API token comes from RETASC_IMPORT_TOKEN or standard input); a Data Center site takes a personal access token alone" },
      "project-key": { type: "string", value: "<KEY>", description: "jira: the project's key; without it, the projects the account sees are listed" },
      "asana-project": { type: "string", value: "<gid>", description: "asana: the project's gid (or its URL, or its name); without it, the projects the token sees are listed" },
      list: { type: "string", value: "<id>", description: "clickup: the List's id or URL; without it or --space, the Spaces and Lists the token sees are listed" },
      space: { type: "string", value: "<id>", description: "clickup: the Space's id or URL: every List in it" },
      file: { type: "string", value: "<path>", description: "csv: the file to import" },
      name: { type: "string", value: "<name>", description: "csv: what the file is (default: its file name); the same name imported again reconciles" },
      mapping: { type: "string", value: "<file.json>", description: "every source: {statuses, priorities} by the source's names (csv also {columns}); csv without it uses the mapping guessed from the header, printed" },
      "dry-run": { type: "boolean", description: "print the counts, the status and priority mapping, the people to be placeholders and what stays behind; write nothing" },
      "new-project": { type: "string", value: "<name>", description: "import into a new project, its prefix the source's key (asana, shortcut, clickup, csv: --prefix)" },
      prefix: { type: "string", value: "<PFX>", description: "asana, shortcut, clickup, csv: the new project's prefix" },
      project: { type: "string", value: "<PREFIX>", description: "import into this existing project (again: reconciles in place); linear and jira need the source's key as its prefix" },
      "keep-credential": { type: "boolean", description: "keep the credential, sealed under the org's key, so `retasc import again <source> <id>` imports the same team or project later without it; `retasc import kept` lists them, `retasc import forget <source> <id>` removes one" },
      "poll-ms": { type: "string", value: "<ms>", description: "how often progress is read (default 1000)" },
      "org-id": orgId,
      url,
      json: { type: "boolean", description: "print the dry run or the finished run's status as JSON (no progress lines)" },
    },
    details:
      "A Linear personal API key, a Jira API token (Cloud) or personal access token (Data Center), an Asana personal access token, a Shortcut API token or a ClickUp personal API token comes from RETASC_IMPORT_TOKEN or standard input (retasc import linear … < key.txt), never a flag; " +
      "the server uses it for this run only and stores it nowhere unless you pass --keep-credential. Progress is drawn on stderr until the import is done.",
    run: importFrom,
  }),
};
