import { parseArgs } from "node:util";
import { CliError } from "./errors.ts";
import { red, setJsonMode } from "./output.ts";
import { bind, init, join, mcpConfig, mcpHeaders, mcpInstall, mcpKey, mcpProxy } from "./commands/connect.ts";
import { keyList, keyMint, keyRevoke, keyRotate, membersInvite, membersList, membersRevoke, membersScope, orgCreate, projectCreate } from "./commands/manage.ts";
import { projectVerification, verify } from "./commands/verify.ts";
import { config, doctor, login, logout, whoami } from "./commands/session.ts";
import { checkClaim, checkpoint, heartbeat, issueList, issueShow, release, tidy, unbind } from "./commands/lease.ts";
import { claim, done, next } from "./commands/work.ts";
import { billing, billingBuy, billingCap } from "./commands/billing.ts";
import { exportOrg } from "./commands/transfer.ts";
import { importFrom } from "./commands/import.ts";
import { connectorAdd, connectorList, connectorRevoke } from "./commands/connectors.ts";
import { issueUnquarantine } from "./commands/quarantine.ts";
import { triage } from "./commands/triage.ts";
import { orgDelete } from "./commands/org-delete.ts";
import { update } from "./commands/update.ts";
import { cliVersion } from "./version.ts";

interface Option {
  type: "string" | "boolean";
  short?: string;
  description: string;
  value?: string;
}

/** The flags parseArgs hands a command with these options: a string or a boolean each, by its type. */
type FlagsOf<O extends Record<string, Option>> = { [K in keyof O]?: O[K]["type"] extends "string" ? string : boolean };

interface Command {
  summary: string;
  usage: string;
  options: Record<string, Option>;
  positionals?: string;
  details?: string;
  hidden?: boolean;
  run: (flags: Record<string, string | boolean | undefined>, positionals: string[]) => Promise<unknown>;
}

type Handler<F> = (flags: F, positionals: string[]) => Promise<unknown>;

/** Flags a handler reads that its command does not declare: none, or the build fails naming them. */
type Undeclared<O, F> = [Exclude<keyof F, keyof O>] extends [never] ? unknown : { undeclaredFlags: Exclude<keyof F, keyof O> };

/**
 * A command whose handler is checked against its options: every flag the handler reads
 * must be an option, of the right type.
 */
function command<const O extends Record<string, Option>, F>(
  spec: Omit<Command, "options" | "run"> & { options: O; run: Handler<FlagsOf<O>> & Handler<F> } & Undeclared<O, F>,
): Command {
  // parseArgs gives each option a value of its declared type, which is what FlagsOf says.
  return { ...spec, run: (flags, positionals) => spec.run(flags as FlagsOf<O>, positionals) };
}

const url = { type: "string", value: "<url>", description: "the deployment (default: RETASC_DEPLOYMENT_URL, the last one signed in to, or http://localhost:3000)" } as const satisfies Option;
const json = { type: "boolean", description: "print the raw payload as JSON on stdout" } as const satisfies Option;
const yes = { type: "boolean", short: "y", description: "replace an existing binding of this folder without asking" } as const satisfies Option;
const runtime = { type: "string", value: "<label>", description: "what runs with the key: claude-code (default), codex, cursor, ci…" } as const satisfies Option;
const orgId = { type: "string", value: "<id>", description: "the org (default: this folder's org, or your only org)" } as const satisfies Option;
const transport = { type: "string", value: "<proxy|http>", description: "how Claude Code connects: proxy (default; `retasc mcp proxy` heartbeats your agent's claims) or http (`retasc mcp headers`)" } as const satisfies Option;
const issueId = { type: "string", value: "<issue>", description: "the issue, like PFX-42 or 42 (default: the issue branch you are on, or your one claim)" } as const satisfies Option;
const workFlags = {
  "all-lanes": { type: "boolean", description: "pull from every lane, not just yours and unassigned issues" },
  base: { type: "string", value: "<ref>", description: "base of a new branch (default: origin/main, else HEAD)" },
  dir: { type: "string", value: "<path>", description: "where the worktree goes (default: ../<repo>-<issue>)" },
  "no-fetch": { type: "boolean", description: "skip fetching origin first" },
  "no-worktree": { type: "boolean", description: "claim only; no git" },
  "print-path": { type: "boolean", description: "print only the worktree path (cd \"$(retasc next --print-path)\")" },
  shell: { type: "boolean", description: "open a shell inside the worktree" },
  json,
  url,
} as const satisfies Record<string, Option>;

export const commands: Record<string, Command> = {
  login: command({
    summary: "sign in with a device code approved in the browser",
    usage: "retasc login [--github | --google] [--url <url>]",
    options: {
      github: { type: "boolean", description: "offer GitHub sign-in first on the approval page (remembered)" },
      google: { type: "boolean", description: "offer Google sign-in first on the approval page (remembered)" },
      url,
      json,
    },
    details: "Prints a URL and a code; open the URL, sign in, check the code and approve. The session is stored in ~/.retasc/config.json (mode 0600).",
    run: login,
  }),
  logout: command({ summary: "forget the session (agent keys stay)", usage: "retasc logout [--url <url>]", options: { url, json }, run: logout }),
  whoami: command({
    summary: "what this folder is bound to, and who is signed in",
    usage: "retasc whoami [--json]",
    options: { json, url },
    details: "The folder block is resolved by the server from the folder's key and needs no login.",
    run: whoami,
  }),
  doctor: command({ summary: "check this folder's wiring, key and server", usage: "retasc doctor [--json]", options: { json, url }, run: doctor }),
  update: command({
    summary: "install the newer CLI from the server this folder is bound to",
    usage: "retasc update [--url <url>] [--json]",
    options: { json, url },
    details:
      "Reads the server's /cli/latest.json and, when it serves a newer version than this one, runs npm install -g with its tarball. " +
      "The server is this folder's binding (from your keystore) or --url, never a cloned repository's .retasc.json alone.",
    run: update,
  }),
  config: command({ summary: "print the resolved paths, URLs and sign-in state", usage: "retasc config [--json]", options: { json, url }, run: config }),
  bind: command({
    summary: "bind this folder: pick or create org and project, mint a key, wire the MCP client",
    usage: "retasc bind [--org-id <id> | --org-name <name>] [--project-id <id> | --project <name|PFX> [--prefix <PFX>]] [--runtime <label>] [-y]\n       retasc bind --setup rtscsetup_…",
    options: {
      "org-id": { type: "string", value: "<id>", description: "bind into this org" },
      "org-name": { type: "string", value: "<name>", description: "bind into the org of this name, creating it if you have none by that name" },
      "project-id": { type: "string", value: "<id>", description: "bind to this project" },
      project: { type: "string", value: "<name|PFX>", description: "the project of this prefix or name, created if missing" },
      prefix: { type: "string", value: "<PFX>", description: "issue prefix of a project created by --project (default: derived from its name)" },
      setup: { type: "string", value: "<code>", description: "a single-use setup code from the Dash: no login, no prompts" },
      runtime,
      transport,
      yes,
      url,
      json,
    },
    details:
      "Writes ./.mcp.json for Claude Code (it runs `retasc mcp proxy` through `npx -y <server>/cli/latest`, so a clone needs no install, or from PATH where the server serves no CLI; with --transport http it reads the key through `retasc mcp headers`) and ./.retasc.json (the deployment, org and project); neither holds a secret or anything of this machine, so both can be committed. The key stays in ~/.retasc/bindings.json. Prints config blocks for Codex, OpenCode, Cursor, Cline and Gemini. Re-binding to the same org and project keeps the key; replacing another binding needs --yes without a terminal.",
    run: bind,
  }),
  join: command({
    summary: "redeem an invite, then bind this folder in that org",
    usage: "retasc join <rtscinv_… | link> [--project-id <id> | --project <PFX>] [--runtime <label>] [--no-bind] [-y]",
    positionals: "<code|link>",
    options: {
      "no-bind": { type: "boolean", description: "redeem only; leave this folder alone" },
      "project-id": { type: "string", value: "<id>", description: "bind to this project" },
      project: { type: "string", value: "<PFX>", description: "bind to the project of this prefix or name" },
      runtime,
      transport,
      yes,
      url,
      json,
    },
    details: "Signs in first when there is no session. Invite codes work once and expire (7 days by default).",
    run: join,
  }),
  init: command({
    summary: "create an org and a project, mint a key and wire this folder, in one go",
    usage: "retasc init --project <name> --prefix <PFX> [--org <name> | --org-id <id>] [--runtime <label>]",
    options: {
      project: { type: "string", value: "<name>", description: "project name (required)" },
      prefix: { type: "string", value: "<PFX>", description: "issue prefix, 2-10 letters or digits (required)" },
      org: { type: "string", value: "<name>", description: "name of the new org (default: <your name>'s org)" },
      "org-id": { type: "string", value: "<id>", description: "use this existing org instead of creating one" },
      runtime,
      transport,
      yes,
      url,
      json,
    },
    details: "Invited to a team? Use `retasc join` instead: init creates a new org.",
    run: init,
  }),
  "org create": command({
    summary: "create an org (you become its owner)",
    usage: "retasc org create --name <name> [--json]",
    options: { name: { type: "string", value: "<name>", description: "the org's name" }, url, json },
    run: orgCreate,
  }),
  "org delete": command({
    summary: "delete an org for good (owner; asks for its name at a terminal)",
    usage: "retasc org delete --org-id <id> [--json]",
    options: { "org-id": { type: "string", value: "<id>", description: "the org to delete" }, url, json },
    details: "Its data key is destroyed first, so nothing of it can be read again, backups included; export it first (retasc export). There is no flag that answers the name.",
    run: orgDelete,
  }),
  "project create": command({
    summary: "create a project (owner or admin)",
    usage: "retasc project create --name <name> --prefix <PFX> [--org-id <id>] [--json]",
    options: {
      name: { type: "string", value: "<name>", description: "the project's name" },
      prefix: { type: "string", value: "<PFX>", description: "its issue prefix: PFX-1, PFX-2, …" },
      "org-id": orgId,
      url,
      json,
    },
    run: projectCreate,
  }),
  "project verification": command({
    summary: "how a project verifies finishes: ci holds dependents until CI passes a finish (owner or admin)",
    usage: "retasc project verification --project-id <id> --mode ci|off [--checks test,lint] [--window <minutes>] [--quarantine-after <n>] [--release-stalled | --no-release-stalled] [--org-id <id>] [--json]",
    options: {
      "project-id": { type: "string", value: "<id>", description: "the project" },
      mode: { type: "string", value: "ci|off", description: "ci: a done needs a commit or request and stays pending until CI passes it; off: done on the agent's word" },
      checks: { type: "string", value: "<a,b>", description: "the required checks (empty: every check reported on the commit)" },
      window: { type: "string", value: "<minutes>", description: "after this long a pending verification reads stale (default 120)" },
      "quarantine-after": { type: "string", value: "<n>", description: "claims abandoned in a row (lapsed or released, no checkpoint) after which an issue is blocked until a person releases it (default 3)" },
      "release-stalled": { type: "boolean", description: "release a stalled claim (kept alive, no checkpoint, comment or write for the stall window) as its holder's release would; default: only mark it" },
      "no-release-stalled": { type: "boolean", description: "only mark stalled claims (the default)" },
      "org-id": orgId,
      url,
      json,
    },
    details: "Results come from the project's GitHub or GitLab connector (check runs, suites, statuses, workflow runs, pipelines) or from a CI key (retasc verify). A red run reopens the issue at High with the failing checks as the next claim's gotchas.",
    run: projectVerification,
  }),
  verify: command({
    summary: "attest a CI result for a finish (CI without a connector; needs RETASC_CI_KEY)",
    usage: "retasc verify <PFX-42> --commit <sha> --status pass|fail --check <name> [--url <run>] [--json]",
    positionals: "<issue>",
    options: {
      commit: { type: "string", value: "<sha>", description: "the commit CI ran (the finish's evidence)" },
      status: { type: "string", value: "pass|fail", description: "the check's result" },
      check: { type: "string", value: "<name>", description: "the check's name, as the project's required checks name it" },
      url: { type: "string", value: "<run>", description: "the run's URL, shown with a failure" },
      json,
    },
    details: "The key is read from RETASC_CI_KEY and the deployment from RETASC_DEPLOYMENT_URL, never from flags or the checkout. A CI key (`retasc key mint --ci`) attests for its project's issues and is refused everywhere else.",
    run: verify,
  }),
  "key mint": command({
    summary: "mint an agent key (shown once)",
    usage: "retasc key mint --project-id <id> [--runtime <label>] [--ci] [--org-id <id>] [--install] [--json]",
    options: {
      "project-id": { type: "string", value: "<id>", description: "the project the key works in" },
      runtime,
      ci: { type: "boolean", description: "a CI key (rtci_…): attests CI results for the project (retasc verify) and does nothing else" },
      install: { type: "boolean", description: "wire the key into this folder instead of printing it" },
      "org-id": orgId,
      url,
      json,
    },
    details: "Members mint keys for themselves; owners manage anyone's, admins those of members.",
    run: keyMint,
  }),
  "key list": command({
    summary: "list agent keys (yours; everyone's for owners and admins)",
    usage: "retasc key list [--org-id <id>] [--all] [--json]",
    options: { all: { type: "boolean", description: "include revoked keys" }, "org-id": orgId, url, json },
    run: keyList,
  }),
  "key rotate": command({
    summary: "replace a key: the new one is shown once, the old one is revoked in the same step",
    usage: "retasc key rotate --key-id <id> [--org-id <id>] [--json]",
    options: { "key-id": { type: "string", value: "<id>", description: "the key to rotate" }, "org-id": orgId, url, json },
    run: keyRotate,
  }),
  "key revoke": command({
    summary: "revoke a key at once",
    usage: "retasc key revoke --key-id <id> [--org-id <id>] [--json]",
    options: { "key-id": { type: "string", value: "<id>", description: "the key to revoke" }, "org-id": orgId, url, json },
    details: "Members revoke their own keys; owners anyone's, admins those of members.",
    run: keyRevoke,
  }),
  "members invite": command({
    summary: "mint a single-use invite code (owner or admin)",
    usage: "retasc members invite [--project-id <id[,id…]>] [--org-id <id>] [--expires-days <1-30>] [--json]",
    options: {
      "project-id": { type: "string", value: "<id[,id…]>", description: "scope the member to these projects (comma-separated; default: every project)" },
      "expires-days": { type: "string", value: "<n>", description: "days until it expires (default 7)" },
      "org-id": orgId,
      url,
      json,
    },
    details: "A scoped member and their agents see only those projects; everything else reads NOT_FOUND.",
    run: membersInvite,
  }),
  "members scope": command({
    summary: "scope a member to some projects, or to all (owner or admin)",
    usage: "retasc members scope --member-id <id> (--project-id <id[,id…]> | --all) [--org-id <id>] [--json]",
    options: {
      "member-id": { type: "string", value: "<id>", description: "the person (`retasc members list` shows member ids)" },
      "project-id": { type: "string", value: "<id[,id…]>", description: "the projects they and their agents see (comma-separated)" },
      all: { type: "boolean", description: "lift the scope: every project" },
      "org-id": orgId,
      url,
      json,
    },
    details: "Only members are scoped (owners and admins see every project); admins scope members only. It applies from their next request.",
    run: membersScope,
  }),
  "members list": command({
    summary: "people and agents of the org, with invites for owners and admins",
    usage: "retasc members list [--org-id <id>] [--json]",
    options: { "org-id": orgId, url, json },
    run: membersList,
  }),
  "members revoke": command({
    summary: "void an unspent invite",
    usage: "retasc members revoke --invite-id <id> [--org-id <id>] [--json]",
    options: { "invite-id": { type: "string", value: "<id>", description: "the invite to void" }, "org-id": orgId, url, json },
    run: membersRevoke,
  }),
  "mcp install": command({
    summary: "wire this folder with a key you already have (from stdin or RETASC_MCP_KEY)",
    usage: "retasc mcp install [--scope project] [--transport <proxy|http>] [--url <url>] < key.txt",
    options: {
      scope: { type: "string", value: "project", description: "only project: a folder decides its org, so user scope is refused" },
      transport,
      yes,
      url,
      json,
    },
    details: "The key is never a flag: flags land in shell history and process lists.",
    run: mcpInstall,
  }),
  "mcp config": command({
    summary: "print config blocks for Codex, OpenCode, Cursor, Cline and Gemini",
    usage: "retasc mcp config [--json]",
    options: { json },
    run: mcpConfig,
  }),
  "mcp key": command({
    summary: "print this folder's key, for export RETASC_MCP_KEY=\"$(retasc mcp key)\" (with RETASC_MCP_URL)",
    usage: "retasc mcp key [--json]",
    options: { json },
    run: mcpKey,
  }),
  "mcp proxy": command({
    summary: "the stdio MCP server .mcp.json runs: relays to /mcp with this folder's key and heartbeats the claims made through it",
    usage: "retasc mcp proxy",
    options: {},
    hidden: true,
    details:
      "Heartbeats every claim taken through it every RETASC_HEARTBEAT_MS (default 600000, 10 minutes) while the agent that started it runs; when the agent exits or is killed its stdin closes, the proxy exits and the leases lapse as they should.",
    run: mcpProxy,
  }),
  "mcp headers": command({
    summary: "the headersHelper Claude Code runs: prints the Authorization header as JSON",
    usage: "retasc mcp headers",
    options: { workspace: { type: "string", value: "<id>", description: "the keystore entry to read (markers written by earlier versions name one)" } },
    hidden: true,
    run: mcpHeaders,
  }),
  next: command({
    summary: "claim whatever dispatch hands you, and open its worktree",
    usage: "retasc next [--all-lanes] [--no-worktree] [--base <ref>] [--dir <path>] [--print-path] [--json]",
    options: workFlags,
    run: next,
  }),
  claim: command({
    summary: "claim an issue over MCP and create its git worktree on the server's branch",
    usage: "retasc claim [PFX-42 | 42] [--no-worktree] [--base <ref>] [--dir <path>] [--print-path] [--json]",
    positionals: "[issue]",
    options: { id: { type: "string", value: "<issue>", description: "the issue (same as the positional)" }, ...workFlags },
    details: "Without an issue it claims the top of your queue, like `retasc next`. The claim is a lease: `retasc heartbeat` or `retasc checkpoint` renews it.",
    run: claim,
  }),
  done: command({
    summary: "finish the issue you hold, and remove the worktree its claim opened",
    usage: "retasc done [--id <PFX-42>] [--pr <number|url>] [--keep-worktree] [--force] [--dry-run] [--json]",
    options: {
      id: issueId,
      pr: { type: "string", value: "<number|url>", description: "the pull/merge request to send as evidence (else the branch's open one is looked up)" },
      "keep-worktree": { type: "boolean", description: "leave the worktree where it is" },
      force: { type: "boolean", description: "finish even with uncommitted changes or no commits on the branch" },
      "dry-run": { type: "boolean", description: "say what it would do, change nothing" },
      json,
      url,
    },
    details:
      "Sends the worktree's HEAD commit and branch as the finish's evidence (a project with verification on needs them; CI then verifies before dependents start), with the branch's open pull/merge request: --pr, else the one the server finds through the project's GitHub or GitLab connector, else (no connector) the one GITHUB_TOKEN/GH_TOKEN or GITLAB_TOKEN finds for the `origin` remote; a line says what was found, or why none was. Refuses (UNFINISHED_WORK) while the issue's worktree has uncommitted changes (changed, staged or untracked files) or its branch has no commits of its own, unless --force. Finishes over MCP with the token of your claim, then removes the worktree `retasc claim` created; the branch stays. A worktree with uncommitted changes (with --force) is kept, and a note on stderr says so. --json adds requestLookup (the lookup's line, when one was made), worktree, worktreeRemoved and, when kept, worktreeKept (why).",
    run: done,
  }),
  heartbeat: command({
    summary: "renew the lease of the issue you hold (or --all of them)",
    usage: "retasc heartbeat [<PFX-42>] [--all] [--json]",
    positionals: "[issue]",
    options: { id: issueId, all: { type: "boolean", description: "every claim this folder's key holds from this machine" }, json, url },
    details: "Only heartbeat and checkpoint renew a lease. `retasc mcp proxy` heartbeats an agent's claims for it while the agent runs.",
    run: heartbeat,
  }),
  checkpoint: command({
    summary: "record handoff notes on the issue you hold, renewing its lease",
    usage: "retasc checkpoint [<PFX-42>] [--done <text>] [--next <text>] [--gotchas <text>] [--note <text>] [--branch <name>] [--json]",
    positionals: "[issue]",
    options: {
      id: issueId,
      done: { type: "string", value: "<text>", description: "what is finished so far" },
      next: { type: "string", value: "<text>", description: "what the next agent should do" },
      gotchas: { type: "string", value: "<text>", description: "traps and surprises" },
      note: { type: "string", value: "<text>", description: "anything else" },
      branch: { type: "string", value: "<name>", description: "the branch the work is on, if not the claim's" },
      json,
      url,
    },
    details: "The latest checkpoint survives release and reclaim: the next claimant resumes from it.",
    run: checkpoint,
  }),
  release: command({
    summary: "give the issue you hold back unfinished (the note is kept for the next claimant)",
    usage: "retasc release [<PFX-42>] [--note <text>] [--json]",
    positionals: "[issue]",
    options: { id: issueId, note: { type: "string", value: "<text>", description: "left as a checkpoint note" }, json, url },
    run: release,
  }),
  "check-claim": command({
    summary: "whether you still hold an issue, who does, and until when",
    usage: "retasc check-claim [<PFX-42>] [--json]",
    positionals: "[issue]",
    options: { id: issueId, json, url },
    run: checkClaim,
  }),
  "issue show": command({
    summary: "an issue: status, lane, lease, checkpoint and body",
    usage: "retasc issue show <PFX-42> [--json]",
    positionals: "<issue>",
    options: { id: issueId, json, url },
    run: issueShow,
  }),
  "issue list": command({
    summary: "issues in dispatch order, most urgent first",
    usage: "retasc issue list [--status <s[,s]>] [--priority <p>] [--label <name>] [--assignee <email|me|none>] [--limit <n>] [--json]",
    options: {
      status: { type: "string", value: "<s[,s]>", description: "todo, doing, blocked, review, done, canceled, or the groups open (default) and active" },
      priority: { type: "string", value: "<p>", description: "urgent, high, medium, low, none (or 1-4, 0)" },
      label: { type: "string", value: "<name>", description: "issues with this label" },
      assignee: { type: "string", value: "<who>", description: "a member's email, me, or none (unassigned)" },
      limit: { type: "string", value: "<n>", description: "at most this many in all (default: every one, read a page at a time)" },
      json,
      url,
    },
    run: issueList,
  }),
  tidy: command({
    summary: "remove the clean worktrees of issues that are done or canceled (branches stay)",
    usage: "retasc tidy [--dry-run] [--json]",
    options: { "dry-run": { type: "boolean", description: "list what it would remove, remove nothing" }, json, url },
    details: "Looks at every worktree of this repository on an issue branch (pfx-42/…); one with uncommitted changes is kept, with the reason.",
    run: tidy,
  }),
  unbind: command({
    summary: "forget this folder's key on this machine, revoking it when signed in",
    usage: "retasc unbind [--keep-key] [--json]",
    options: { "keep-key": { type: "boolean", description: "leave the key working (only forget it here)" }, json, url },
    details: ".mcp.json and .retasc.json stay: they belong to the folder (and its teammates), not to this machine.",
    run: unbind,
  }),
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
    usage: "retasc triage [--org-id <id>] [--json]",
    options: { "org-id": orgId, url, json: { type: "boolean", description: "the conversation on stderr; on stdout, once you stop, what you let in as JSON" } },
    details:
      "Lists what came from outside the team and waits (issues, edits made after acceptance, comments), shows the one you pick in full, " +
      "and lets exactly that text in when you type accept (release for a comment). It runs only at a terminal, and no flag accepts: " +
      "no agent or script can let outside text in.",
    run: triage,
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
    summary: "bring a Linear team, a Jira or Asana project or a CSV into a project: identifiers, threads and history kept (owners and admins)",
    usage:
      "retasc import linear --team <KEY> | jira --site <url> --email <address> --project-key <KEY> | asana --asana-project <gid> | csv --file <path> [--mapping <file.json>]  " +
      "(--dry-run | --new-project <name> [--prefix <PFX>] | --project <PREFIX>) [--org-id <id>] [--json]",
    positionals: "linear|jira|asana|csv",
    options: {
      team: { type: "string", value: "<KEY>", description: "linear: the team's key (ENG) or id; without it, the teams the key sees are listed" },
      site: { type: "string", value: "<url>", description: "jira: your site, https://your-team.atlassian.net" },
      email: { type: "string", value: "<address>", description: "jira: the email of your Atlassian account (the API token comes from RETASC_IMPORT_TOKEN or standard input)" },
      "project-key": { type: "string", value: "<KEY>", description: "jira: the project's key; without it, the projects the account sees are listed" },
      "asana-project": { type: "string", value: "<gid>", description: "asana: the project's gid (or its URL, or its name); without it, the projects the token sees are listed" },
      file: { type: "string", value: "<path>", description: "csv: the file to import" },
      name: { type: "string", value: "<name>", description: "csv: what the file is (default: its file name); the same name imported again reconciles" },
      mapping: { type: "string", value: "<file.json>", description: "jira, asana, csv: {statuses, priorities} by the source's names (csv also {columns}); csv without it uses the mapping guessed from the header, printed" },
      "dry-run": { type: "boolean", description: "print the counts, the status and priority mapping, the people to be placeholders and what stays behind; write nothing" },
      "new-project": { type: "string", value: "<name>", description: "import into a new project, its prefix the source's key (asana, csv: --prefix)" },
      prefix: { type: "string", value: "<PFX>", description: "asana, csv: the new project's prefix" },
      project: { type: "string", value: "<PREFIX>", description: "import into this existing project (again: reconciles in place); linear and jira need the source's key as its prefix" },
      "poll-ms": { type: "string", value: "<ms>", description: "how often progress is read (default 1000)" },
      "org-id": orgId,
      url,
      json: { type: "boolean", description: "print the dry run or the finished run's status as JSON (no progress lines)" },
    },
    details:
      "A Linear personal API key, a Jira API token or an Asana personal access token comes from RETASC_IMPORT_TOKEN or standard input (retasc import linear … < key.txt), never a flag; " +
      "the server uses it for this run only and stores it nowhere. Progress is drawn on stderr until the import is done.",
    run: importFrom,
  }),
};

function overview(): string {
  const names = Object.entries(commands).filter(([, c]) => !c.hidden);
  const width = Math.max(...names.map(([n]) => n.length));
  return [
    "retasc: connect coding agents to a Retasc work queue.",
    "",
    "Usage: retasc <command> [options]     retasc <command> --help",
    "",
    ...names.map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`),
    "",
    "Environment: RETASC_DIR (state, default ~/.retasc), RETASC_DEPLOYMENT_URL, RETASC_MCP_KEY (an",
    "explicit agent key, sent only to RETASC_MCP_URL, which must be exported with it: a key is refused when a",
    "folder's .mcp.json or other MCP client file sets either), RETASC_WORKSPACE (keystore entry),",
    "RETASC_HEARTBEAT_MS (how often `retasc mcp proxy` renews the claims made through it; default 600000).",
    "A key from the keystore goes only to the server it was bound with, whatever the environment or the folder says.",
    "Output: results on stdout (--json: the JSON alone), progress and warnings on stderr; NO_COLOR turns colour off.",
    "Errors print ✗ CODE: message and a hint on stderr and exit 1; a command line that is not understood exits 2.",
  ].join("\n");
}

function help(name: string, command: Command): string {
  const options = Object.entries(command.options);
  const width = Math.max(...options.map(([n, o]) => flagLabel(n, o).length), 10);
  return [
    `retasc ${name}: ${command.summary}`,
    "",
    `Usage: ${command.usage}`,
    ...(command.details ? ["", command.details] : []),
    "",
    "Options:",
    ...options.map(([n, o]) => `  ${flagLabel(n, o).padEnd(width)}  ${o.description}`),
    `  ${"-h, --help".padEnd(width)}  show this help`,
  ].join("\n");
}

const flagLabel = (name: string, option: Option): string => `${option.short ? `-${option.short}, ` : ""}--${name}${option.value ? ` ${option.value}` : ""}`;

/** Own names only: `retasc constructor` is not Object's constructor. */
const commandNamed = (name: string): Command | undefined => (Object.hasOwn(commands, name) ? commands[name] : undefined);

function findCommand(argv: string[]): { name: string; command: Command; rest: string[] } | null {
  const two = argv.slice(0, 2).join(" ");
  const command = commandNamed(two);
  if (command) return { name: two, command, rest: argv.slice(2) };
  const one = argv[0] ?? "";
  const single = commandNamed(one);
  if (single) return { name: one, command: single, rest: argv.slice(1) };
  return null;
}

/** Exit codes: 1 a command that failed, 2 a command line that was not understood. */
const USAGE = 2;

function report(error: unknown, exitCode = 1): number {
  const mark = red(process.stderr, "✗");
  if (error instanceof CliError) {
    process.stderr.write(`${mark} ${error.code}: ${error.message}\n`);
    if (error.hint) process.stderr.write(`  ${error.hint}\n`);
    return exitCode;
  }
  const e = error as Error | undefined;
  process.stderr.write(`${mark} INTERNAL: ${e?.message ?? String(error)}\n  This is a bug in retasc; please report it with \`retasc config\` output.\n`);
  if (process.env.RETASC_DEBUG) process.stderr.write(`${e?.stack}\n`);
  return 1;
}

/** parseArgs' refusal in a line of our own: which option or argument, not Node's wording. */
function usageError(error: unknown, name: string, command: Command): CliError {
  const e = error as Error & { code?: string };
  const option = /'(-{1,2}[^' ]+)/.exec(e.message)?.[1];
  const help = `Run \`retasc ${name} --help\`.`;
  switch (e.code) {
    case "ERR_PARSE_ARGS_UNKNOWN_OPTION":
      return new CliError("INVALID_INPUT", `unknown option ${option ?? ""} for retasc ${name}`.replace("  ", " "), help);
    case "ERR_PARSE_ARGS_INVALID_OPTION_VALUE": {
      const declared = option ? command.options[option.replace(/^-+/, "")] : undefined;
      return new CliError("INVALID_INPUT", declared?.type === "boolean" ? `${option} takes no value` : `${option ?? "an option"} needs a value${declared?.value ? ` (${option} ${declared.value})` : ""}`, help);
    }
    case "ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL": {
      const extra = /'([^']*)'/.exec(e.message)?.[1];
      return new CliError("INVALID_INPUT", `retasc ${name} takes no argument${extra ? ` (got ${extra})` : ""}`, help);
    }
    default:
      return new CliError("INVALID_INPUT", `could not read the options of retasc ${name}`, help);
  }
}

/** Runs one command line; returns the exit code. */
export async function main(argv: string[]): Promise<number> {
  if (argv.length === 0 || argv[0] === "--help" || argv[0] === "-h" || argv[0] === "help") {
    process.stdout.write(`${overview()}\n`);
    return 0;
  }
  if (argv[0] === "--version" || argv[0] === "-v") {
    process.stdout.write(`${cliVersion()}\n`);
    return 0;
  }
  const found = findCommand(argv);
  if (!found) {
    const group = Object.entries(commands).filter(([name, c]) => name.startsWith(`${argv[0]} `) && !c.hidden);
    if (group.length && (argv.length === 1 || argv[1] === "--help" || argv[1] === "-h")) {
      process.stdout.write(`${group.map(([name, c]) => `retasc ${name.padEnd(16)} ${c.summary}`).join("\n")}\n`);
      return argv.length === 1 ? USAGE : 0;
    }
    return report(new CliError("INVALID_INPUT", `unknown command: ${argv.slice(0, 2).join(" ")}`, "Run `retasc --help` for the list."), USAGE);
  }
  const { command } = found;
  let parsed;
  try {
    parsed = parseArgs({
      args: found.rest,
      options: { ...Object.fromEntries(Object.entries(command.options).map(([n, o]) => [n, { type: o.type, ...(o.short ? { short: o.short } : {}) }])), help: { type: "boolean", short: "h" } },
      allowPositionals: Boolean(command.positionals),
      strict: true,
    });
  } catch (error) {
    return report(usageError(error, found.name, command), USAGE);
  }
  if (parsed.values.help) {
    process.stdout.write(`${help(found.name, command)}\n`);
    return 0;
  }
  setJsonMode((parsed.values as Record<string, unknown>).json === true);
  try {
    await command.run(parsed.values, parsed.positionals);
    return 0;
  } catch (error) {
    return report(error);
  }
}
