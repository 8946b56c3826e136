import type { UrlFlag } from "../api.ts";
import { CliError } from "../errors.ts";
import { note, ok, printJson } from "../output.ts";
import { ask, interactive } from "../prompt.ts";
import { activeOrgs, asSession, requireSession } from "../session.ts";

/** The reply of POST /api/cli/orgs/delete (server/orgs/delete.ts `DeletedOrg`). */
interface DeletedOrg {
  orgId: string;
  name: string;
  keysRevoked: number;
  membersRemoved: number;
  jobsCanceled: number;
  connectorsStopped: number;
}

/**
 * `retasc org delete --org-id <id>`: the owner deletes an org for good. The org's name is asked
 * for at a terminal and typed by the person; no flag answers it, so no script or agent deletes
 * an org unasked.
 */
export async function orgDelete(flags: UrlFlag & { "org-id"?: string; json?: boolean }) {
  const orgId = flags["org-id"];
  if (!orgId) throw new CliError("INVALID_INPUT", "org delete needs --org-id", "retasc whoami lists your orgs and their ids.");
  const session = requireSession(flags);
  const org = (await activeOrgs(session)).find((o) => o.orgId === orgId);
  if (!org) throw new CliError("NOT_FOUND", `org ${orgId} not found among yours`, "retasc whoami lists your orgs and their ids.");
  if (!interactive()) {
    throw new CliError("INVALID_INPUT", "deleting an org asks for its name at a terminal, and there is none", "Run it yourself in a terminal, or delete the org in the Dash (Settings › Delete org).");
  }
  note(`Deleting ${org.name} destroys its data key first: nothing of it can be read again, not even from a backup.`);
  note(`Export it first if you may want it back: retasc export --org-id ${orgId} --out backup.json`);
  const typed = await ask(`Type the org's name (${org.name}) to delete it: `);
  if (typed !== org.name) throw new CliError("INVALID_INPUT", "the name typed is not the org's", "Nothing was deleted.");
  const deleted = await asSession<DeletedOrg>(session, "/orgs/delete", { body: { orgId, confirmName: typed } });
  if (flags.json) return printJson(deleted);
  ok(`Deleted ${deleted.name} (${deleted.orgId}).`);
  note(`  ${deleted.keysRevoked} keys revoked, ${deleted.membersRemoved} members removed; its rows are removed in the background.`);
}
