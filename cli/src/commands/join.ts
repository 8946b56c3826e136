import { deploymentUrl, normalizeUrl } from "../api.ts";
import { CliError } from "../errors.ts";
import { ok, printJson } from "../output.ts";
import { asSession, currentSession, requireSession } from "../session.ts";
import type { JoinedOrg } from "../wire.ts";
import { mintAndBind, pickProject, type MintFlags, type ProjectFlags } from "./connect.ts";
import { login } from "./session.ts";

/** Redeems an invite (signing in first if needed), then binds this folder in that org. */
interface JoinFlags extends MintFlags, Omit<ProjectFlags, "prefix"> {
  "no-bind"?: boolean;
}

export async function join(flags: JoinFlags, positionals: string[]) {
  const code = positionals[0];
  if (!code) throw new CliError("INVALID_INPUT", "join needs the invite code or link", "retasc join rtscinv_… (or the link you were sent)");
  if (!/rtscinv_[A-Za-z0-9_-]+/.test(code)) throw new CliError("INVALID_INPUT", "that is not an invite code or link", "An invite code starts with rtscinv_.");
  const url = /^https?:\/\//.test(code) && !flags.url && !process.env.RETASC_DEPLOYMENT_URL ? normalizeUrl(new URL(code).origin) : deploymentUrl(flags);
  const scoped = { ...flags, url };
  if (!currentSession(scoped)) await login({ ...scoped, json: false });
  const session = requireSession(scoped);
  const joined = await asSession<JoinedOrg>(session, "/join", { body: { code } });
  ok(`Joined org "${joined.orgName}".`);
  if (flags["no-bind"]) {
    if (flags.json) printJson(joined);
    return;
  }
  const org = { orgId: joined.orgId, name: joined.orgName };
  const project = await pickProject(scoped, session, joined.orgId);
  await mintAndBind(scoped, session, org, project, { joined: { orgId: joined.orgId, orgName: joined.orgName, memberId: joined.memberId, role: joined.role } });
}
