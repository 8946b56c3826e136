import { parseArgs } from "node:util";
import { z } from "zod";
import { loadConfig } from "../config/index.ts";
import { boot } from "../boot.ts";
import { describeFatal } from "../fatal.ts";
import type { Services } from "../context.ts";
import { bootstrap, bootstrapInput, grantCredit, grantCreditInput, mintKey, mintKeyInput, setPassword, setPasswordInput } from "./commands.ts";
import { readSecretLine } from "./secret.ts";
import { connect, connectInput } from "./connect.ts";
import { rotateMasterKey, rotateMasterKeyInput } from "./rotate-master-key.ts";
import { deleteOrgCommand, deleteOrgCommandInput } from "./delete-org.ts";
import { orgFreeze, orgFreezeInput, orgUnfreeze } from "./org-freeze.ts";
import { writeOrgExport } from "../transfer/admin.ts";
import { importExport, importInput } from "../transfer/import.ts";
import { setVerificationCommand } from "../verification/settings.ts";
import { renamePrefixCommand } from "../orgs/rename-prefix.ts";

/**
 * Operator commands for a server with no browser yet: `npm run admin -- <command>`.
 * They boot like the server (migrations first), so they work on a brand-new database.
 */
const usage = `usage: npm run admin -- <command> [options]

  bootstrap --org <name> --project <name> --prefix <PFX> --email <email> [--json]
      create an org, its owner, a project and an agent key
  mint-key --org <orgId> --email <email> --runtime <label> [--project <projectId>] [--ci] [--json]
      mint an agent key for a person (added as a member if needed); --ci: a CI key for the
      project, which attests verification results (retasc verify) and does nothing else
  rename-prefix --org <orgId> [--project <PFX|projectId>] --prefix <NEW> [--json]
      rename a project's issue prefix: every identifier becomes NEW-N in one transaction and
      the old prefix stays the project's, so OLD-42 still names NEW-42 (decision 089)
  set-verification --project <projectId> --mode ci|off [--checks a,b] [--window-minutes <n>] [--stall-minutes <n>]
                   [--quarantine-after <n>] [--release-stalled | --no-release-stalled] [--json]
      how the project verifies finishes: ci holds dependents until CI passes a finish;
      --checks names the required checks (none: every check reported on the commit);
      --stall-minutes: a live claim with no checkpoint, comment or status write for this long
      reads stalled in check_claim (default 45); --quarantine-after: claims abandoned in a row
      (lapsed or released, no checkpoint) after which an issue is blocked until a person
      releases it (default 3); --release-stalled: the stall sweep releases stalled claims
      (as their holders' release would) instead of only marking them (default off)
  set-password --email <email> [--json] < password.txt
      set or replace a person's email + password sign-in; the password is one line
      on standard input (asked for without echo on a terminal), never a flag
  grant-credit --org <orgId> --micro-credits <n> --note <text> [--json]
      give an org credit (1,000,000 micro-credits = $1), recorded as given credit with the note
  connect --provider github|gitlab --org <orgId> --project <projectId> --repo <owner/name>
          [--base-url <url>] [--token-stdin] [--pull-requests --reviewer <email>] [--json]
      connect a repository's issues to a project; prints the webhook URL and its secret (shown
      once); with --token-stdin the write-back token is one line on standard input; with
      --pull-requests outsiders' pull/merge requests go to the reviewer's lane for review
  export --org <orgId> --format json|csv [--table issues|comments]
      the whole org, decrypted, to standard output (JSON: everything, docs/export-format.md;
      CSV: the issues, or the comments)
  import --file <export.json> --org-name <name> [--json]
      a JSON export brought back as a new org; prints its orgId
  delete-org --org <orgId> [--json]
      delete an org for good: its data key is destroyed at once (nothing of it decrypts again,
      backups included), its keys, sessions, jobs and connectors end, and its rows are removed
      in the background by the job runner (docs/operations.md)
  org-freeze --org <orgId> [--json]
      for a move to another stack (docs/operations.md): every write of the org, whatever the
      door, answers ORG_FROZEN (503, Retry-After), its jobs wait, its leases keep their expiry;
      returns when no instance can still start one, with the WAL position (lsn) the target must reach
  org-unfreeze --org <orgId> [--json]
      end the freeze (on the stack the org moved to, or on the source to call the move off)
  rotate-master-key [--json] < new-master.key
      re-wrap every org's data key under a new master key (32 bytes base64, one line on
      standard input); stop every instance and worker first (docs/operations.md)
`;

/** Each command with the schema its argv is parsed with before the call (argv is of unknown shape). */
const commands = {
  bootstrap: (services: Services, argv: unknown) => bootstrap(services, bootstrapInput.parse(argv)),
  "mint-key": (services: Services, argv: unknown) => mintKey(services, mintKeyInput.parse(argv)),
  "set-password": (services: Services, argv: unknown) => setPassword(services, setPasswordInput.parse(argv)),
  "grant-credit": (services: Services, argv: unknown) => grantCredit(services, grantCreditInput.parse(argv)),
  connect: (services: Services, argv: unknown) => connect(services, connectInput.parse(argv)),
  import: (services: Services, argv: unknown) => importExport(services, importInput.parse(argv)),
  "rotate-master-key": (services: Services, argv: unknown) => rotateMasterKey(services, rotateMasterKeyInput.parse(argv)),
  "delete-org": (services: Services, argv: unknown) => deleteOrgCommand(services, deleteOrgCommandInput.parse(argv)),
  "org-freeze": (services: Services, argv: unknown) => orgFreeze(services, orgFreezeInput.parse(argv)),
  "org-unfreeze": (services: Services, argv: unknown) => orgUnfreeze(services, orgFreezeInput.parse(argv)),
  "set-verification": (services: Services, argv: unknown) => setVerificationCommand(services, argv as Record<string, unknown>),
  "rename-prefix": (services: Services, argv: unknown) => renamePrefixCommand(services, argv as Record<string, unknown>),
} as const;
/** Commands whose output holds a secret shown once. */
const showsKey = new Set(["bootstrap", "mint-key", "connect"]);

async function main() {
  const [command, ...rest] = process.argv.slice(2);
  if (!command || command === "--help" || command === "help") {
    process.stdout.write(usage);
    return;
  }
  const run = commands[command as keyof typeof commands];
  if (!run && command !== "export") throw new Error(`unknown command "${command}"\n${usage}`);
  const { values } = parseArgs({
    args: rest,
    options: {
      org: { type: "string" },
      project: { type: "string" },
      prefix: { type: "string" },
      email: { type: "string" },
      runtime: { type: "string" },
      "micro-credits": { type: "string" },
      note: { type: "string" },
      provider: { type: "string" },
      repo: { type: "string" },
      "base-url": { type: "string" },
      "token-stdin": { type: "boolean", default: false },
      "pull-requests": { type: "boolean", default: false },
      reviewer: { type: "string" },
      format: { type: "string" },
      table: { type: "string" },
      file: { type: "string" },
      "org-name": { type: "string" },
      ci: { type: "boolean" },
      mode: { type: "string" },
      checks: { type: "string" },
      "window-minutes": { type: "string" },
      "stall-minutes": { type: "string" },
      "quarantine-after": { type: "string" },
      "release-stalled": { type: "boolean" },
      "no-release-stalled": { type: "boolean" },
      json: { type: "boolean", default: false },
    },
    strict: true,
  });
  // Read before booting, so a missing password fails fast and nothing else waits on stdin.
  const input =
    command === "set-password"
      ? { ...values, password: await readSecretLine("new password (not shown): ") }
      : command === "connect" && values["token-stdin"]
        ? { ...values, token: await readSecretLine("write-back token (not shown): ", "token") }
        : command === "rotate-master-key"
          ? { newMasterKey: await readSecretLine("new master key, base64 (not shown): ", "master key") }
          : values;
  const config = loadConfig();
  const booted = await boot(config, { warn: (m) => process.stderr.write(`! ${m}\n`), poolSize: 2 });
  try {
    if (command === "export") {
      await writeOrgExport(booted.services, values, process.stdout);
      return;
    }
    const result = await run!(booted.services, input);
    if (values.json) {
      process.stdout.write(JSON.stringify(result) + "\n");
    } else {
      for (const [k, v] of Object.entries(result)) process.stdout.write(`${k}: ${v}\n`);
      if (showsKey.has(command)) process.stderr.write("the key is shown once; store it now\n");
    }
  } finally {
    await booted.close();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`✗ ${error instanceof z.ZodError ? error.issues.map((i) => i.message).join("; ") : describeFatal(error)}\n`);
  process.exit(1);
});
