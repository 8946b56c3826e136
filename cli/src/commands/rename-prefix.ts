import { resolveBinding } from "../binding.ts";
import { CliError } from "../errors.ts";
import { note, ok, printJson, say } from "../output.ts";
import { asSession, requireSession } from "../session.ts";
import { renamePrefixHere } from "../wire-folder.ts";
import type { RenamedPrefix } from "../wire.ts";
import { orgIdOf, type OrgFlags } from "./manage.ts";

/**
 * `retasc project rename-prefix <NEW> [--project <PFX|id>]` (owners and admins, decision 089): the
 * server rewrites every identifier at once and keeps the old prefix, so WEB-42 still names APP-42.
 * Without --project: the project this folder is bound to (else the org's only one).
 */
export async function projectRenamePrefix(flags: OrgFlags & { project?: string; prefix?: string }, positionals: string[]) {
  const prefix = positionals[0] ?? flags.prefix;
  if (!prefix || (positionals[0] && flags.prefix)) {
    throw new CliError("INVALID_INPUT", "project rename-prefix needs the new prefix, once", "retasc project rename-prefix APP [--project WEB]");
  }
  const session = requireSession(flags);
  const orgId = await orgIdOf(flags, session);
  const bound = resolveBinding(process.cwd())?.workspace;
  const project = flags.project ?? (bound && bound.url === session.url && bound.orgId === orgId ? bound.projectId : undefined);
  const renamed = await asSession<RenamedPrefix>(session, "/projects", { body: { orgId, action: "rename-prefix", prefix, ...(project ? { project } : {}) } });
  const here = await renamePrefixHere({ url: session.url, projectId: renamed.projectId, prefix: renamed.prefix, cwd: process.cwd() });
  if (flags.json) return printJson({ ...renamed, projectFile: here.projectFile });
  if (!renamed.changed) return say(`The project's prefix is already ${renamed.prefix}; nothing changed.`);
  ok(`Renamed ${renamed.previous} to ${renamed.prefix}: ${renamed.renamed} issue${renamed.renamed === 1 ? "" : "s"} now read ${renamed.prefix}-N.`);
  say(`  Old identifiers (${renamed.oldPrefixes.map((p) => `${p}-42`).join(", ")}) still name the same issues everywhere; branches already handed out keep their names.`);
  if (here.projectFile) note(`${here.projectFile} now says ${renamed.prefix}: commit it.`);
}

