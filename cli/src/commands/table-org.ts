import { type Command, command, url, json, runtime, orgId } from "../command.ts";
import { keyList, keyMint, keyRevoke, keyRotate, membersInvite, membersList, membersRevoke, membersScope, orgCreate, projectCreate } from "./manage.ts";
import { projectVerification, verify } from "./verify.ts";
import { orgDelete } from "./org-delete.ts";
import { projectRenamePrefix } from "./rename-prefix.ts";

/** The command table's part for running an org: orgs, projects and their verification, CI attestations, agent keys, members and invites. */
export const orgCommands: Record<string, Command> = {
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
  "project rename-prefix": command({
    summary: "rename a project's issue prefix: every identifier is rewritten, the old ones still resolve (owner or admin)",
    usage: "retasc project rename-prefix <NEW> [--project <PFX|id>] [--org-id <id>] [--json]",
    positionals: "<NEW>",
    options: {
      project: { type: "string", value: "<PFX|id>", description: "the project, by its prefix (an old one too) or id; default: this folder's project, else the org's only one" },
      prefix: { type: "string", value: "<NEW>", description: "the new prefix, instead of the argument" },
      "org-id": orgId,
      url,
      json,
    },
    details:
      "The new prefix is a project create's: 2-10 letters or digits, a letter first. In one transaction every issue's identifier becomes NEW-N; " +
      "the old prefix stays the project's, so OLD-42 still names NEW-42 on every door (MCP tools, the Dash's links, the CLI, mentions). " +
      "A prefix another project of the org has, now or before a rename of its own, is refused (CONFLICT); renaming back to an old prefix of this project works. " +
      "Branches already handed out keep their names. This machine's bindings to the project, and the folder's .retasc.json, are updated.",
    run: projectRenamePrefix,
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
    usage: "retasc key mint --project-id <id> [--runtime <label>] [--name <label>] [--hosted | --ci] [--org-id <id>] [--install] [--json]",
    options: {
      "project-id": { type: "string", value: "<id>", description: "the project the key works in" },
      runtime,
      name: { type: "string", value: "<label>", description: "what you call the key, shown by `retasc key list`" },
      hosted: {
        type: "boolean",
        description: "a key for a hosted agent or CI, which never runs behind the watchdog proxy: its claims renew by its own calls, and its claim replies say so",
      },
      ci: { type: "boolean", description: "a CI key (rtci_…): attests CI results for the project (retasc verify) and does nothing else" },
      install: { type: "boolean", description: "wire the key into this folder instead of printing it" },
      "org-id": orgId,
      url,
      json,
    },
    details:
      "Members mint keys for themselves; owners manage anyone's, admins those of members. " +
      "A hosted key goes in the runner's secret store, sent as `Authorization: Bearer <key>` to <url>/mcp or exported as RETASC_MCP_KEY; it is never wired into a folder. " +
      "With no proxy, each call of the agent's MCP session renews the claims it took (a client that sends no Mcp-Session-Id must heartbeat or checkpoint itself).",
    run: keyMint,
  }),
  "key list": command({
    summary: "list agent keys (yours; everyone's for owners and admins), with their names and which are hosted",
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
};
