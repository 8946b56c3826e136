import { CliError } from "../errors.ts";
import { ok } from "../output.ts";
import { asSession, requireSession } from "../session.ts";
import type { CreatedOrg, CreatedProject } from "../wire.ts";
import { mintAndBind, pickOrg, type MintFlags, type OrgChoice } from "./connect.ts";

/** One-shot setup: a new (or named) org, a project, a key, the folder wired. */
interface InitFlags extends MintFlags {
  project?: string;
  prefix?: string;
  org?: string;
  "org-id"?: string;
}

export async function init(flags: InitFlags) {
  if (!flags.project || !flags.prefix) throw new CliError("INVALID_INPUT", "init needs --project and --prefix", "retasc init --project Web --prefix WEB [--org \"My Org\"]");
  const session = requireSession(flags);
  let org: OrgChoice;
  if (flags["org-id"]) org = await pickOrg({ "org-id": flags["org-id"] }, session);
  else {
    const created = await asSession<CreatedOrg>(session, "/orgs", { body: { name: flags.org ?? `${session.user.name}'s org` } });
    ok(`Created org "${created.name}".`);
    org = { orgId: created.orgId, name: created.name };
  }
  const created = await asSession<CreatedProject>(session, "/projects", { body: { orgId: org.orgId, name: flags.project, prefix: flags.prefix } });
  ok(`Created project ${created.prefix}.`);
  return mintAndBind(flags, session, org, { id: created.projectId, prefix: created.prefix });
}
