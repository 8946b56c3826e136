import type { UrlFlag } from "../api.ts";
import { resolveBinding } from "../binding.ts";
import { CliError } from "../errors.ts";
import { note, ok, out, printJson, say, tableWriter } from "../output.ts";
import { pages, type Paged } from "../pages.ts";
import { needFlags } from "../prompt.ts";
import { activeOrgs, asSession, requireSession, type SignedIn } from "../session.ts";
import { wireFolder } from "../wire-folder.ts";
import type { AgentView, CreatedInvite, CreatedOrg, CreatedProject, KeyList, MemberList, MintedKey, PersonView, ProjectList, RevokedInvite, RevokedKey, ScopedMember } from "../wire.ts";

/** The flags of every command here: the deployment, the org to act in, --json. */
export interface OrgFlags extends UrlFlag {
  "org-id"?: string;
  json?: boolean;
}

/**
 * The org to act in: --org-id, else the org this folder is bound to, else the only org
 * the person belongs to.
 */
export async function orgIdOf(flags: OrgFlags, session: SignedIn): Promise<string> {
  if (flags["org-id"]) return flags["org-id"];
  const bound = resolveBinding(process.cwd())?.workspace;
  if (bound && bound.url === session.url) return bound.orgId;
  const orgs = await activeOrgs(session);
  if (orgs.length === 1) return orgs[0]!.orgId;
  throw needFlags(orgs.length === 0 ? "you belong to no org" : `you belong to ${orgs.length} orgs`, "--org-id <id> (`retasc whoami` lists them)");
}

export async function orgCreate(flags: UrlFlag & { name?: string; json?: boolean }) {
  if (!flags.name) throw new CliError("INVALID_INPUT", "org create needs --name", "retasc org create --name \"Acme\"");
  const session = requireSession(flags);
  const org = await asSession<CreatedOrg>(session, "/orgs", { body: { name: flags.name } });
  if (flags.json) return printJson(org);
  ok(`Created org "${org.name}" (${org.orgId}).`);
  say(`  Next: retasc project create --org-id ${org.orgId} --name <name> --prefix <PFX>`);
}

export async function projectCreate(flags: OrgFlags & { name?: string; prefix?: string }) {
  if (!flags.name || !flags.prefix) throw new CliError("INVALID_INPUT", "project create needs --name and --prefix", "retasc project create --name Web --prefix WEB");
  const session = requireSession(flags);
  const orgId = await orgIdOf(flags, session);
  const project = await asSession<CreatedProject>(session, "/projects", { body: { orgId, name: flags.name, prefix: flags.prefix } });
  if (flags.json) return printJson(project);
  ok(`Created project ${project.prefix} (${project.projectId}). Issues will be ${project.prefix}-1, ${project.prefix}-2, …`);
}

export async function keyMint(flags: OrgFlags & { "project-id"?: string; runtime?: string; name?: string; install?: boolean; ci?: boolean; hosted?: boolean }) {
  if (flags.ci && flags.hosted) throw new CliError("INVALID_INPUT", "--ci and --hosted are two kinds of key", "A CI key only attests results (retasc verify); a hosted key works the queue. Mint one of them.");
  if (flags.ci && flags.install) throw new CliError("INVALID_INPUT", "a CI key is not wired into a folder", "Give it to CI as the secret RETASC_CI_KEY.");
  if (flags.hosted && flags.install) throw new CliError("INVALID_INPUT", "a hosted key is not wired into a folder", "Put it in the runner's secret store; a folder on this machine is bound with `retasc bind`.");
  const session = requireSession(flags);
  const orgId = await orgIdOf(flags, session);
  const runtime = flags.runtime ?? (flags.ci ? "ci" : flags.hosted ? "hosted" : "claude-code");
  const minted = await asSession<MintedKey>(session, "/keys", {
    body: { orgId, action: "mint", projectId: flags["project-id"], runtime, name: flags.name, ...(flags.ci ? { ci: true } : {}), ...(flags.hosted ? { hosted: true } : {}) },
  });
  if (flags.install) {
    const { projects } = await asSession<ProjectList>(session, "/projects", { query: { orgId } });
    const project = projects.find((p) => p.id === minted.projectId);
    if (!project) throw new CliError("INVALID_INPUT", "--install needs --project-id", "A folder is bound to one project.");
    const orgs = await activeOrgs(session);
    const wired = await wireFolder({
      dir: process.cwd(),
      url: session.url,
      key: minted.key,
      keyId: minted.keyId,
      orgId,
      orgName: orgs.find((o) => o.orgId === orgId)?.name ?? orgId,
      projectId: project.id,
      prefix: project.prefix,
      runtime,
    });
    if (flags.json) return printJson({ keyId: minted.keyId, keyPrefix: minted.prefix, workspaceId: wired.workspaceId, marker: wired.marker });
    return ok(`Minted ${minted.prefix}… and wired this folder (${wired.marker}).`);
  }
  if (flags.json) return printJson(minted);
  if (minted.ci) note("Shown once; give it to CI as the secret RETASC_CI_KEY (retasc verify reads it there).");
  else if (minted.hosted) {
    note("Shown once; put it in the runner's secret store, never in a file of the repository:");
    note(`  as the header Authorization: Bearer <key> to ${session.url}/mcp, or exported as RETASC_MCP_KEY (with RETASC_MCP_URL=${session.url}/mcp) for \`retasc mcp proxy\`.`);
    note("  No watchdog will run for it: each call of the agent's MCP session renews its claims, and its claim replies say so.");
  } else note("Shown once; store it now.");
  out(minted.key);
}

export async function keyList(flags: OrgFlags & { all?: boolean }) {
  const session = requireSession(flags);
  const orgId = await orgIdOf(flags, session);
  const all: KeyList["keys"] = [];
  const rows = tableWriter(["KEY", "NAME", "RUNTIME", "PERSON", "PROJECT", "LAST USED", "STATE", "ID"]);
  const read = (cursor: string | undefined) =>
    asSession<Paged<KeyList>>(session, "/keys", { query: { orgId, includeRevoked: flags.all ? "true" : undefined, cursor } }).then((r) => ({ items: r.keys, nextCursor: r.nextCursor }));
  for await (const keys of pages(read)) {
    if (flags.json) all.push(...keys);
    else rows.write(keys.map((k) => [`${k.prefix}…`, k.name, k.hosted ? `${k.runtime} (hosted)` : k.runtime, k.userEmail, k.projectPrefix ?? "any", k.lastUsedAt?.slice(0, 16) ?? "never", k.status, k.keyId]));
  }
  if (flags.json) return printJson({ keys: all });
  if (!rows.printed) say("No keys.");
}

type KeyFlags = OrgFlags & { "key-id"?: string };

/** POSTs a rotate or revoke of --key-id; `T` is the reply of that action. */
async function keyChange<T>(flags: KeyFlags, action: "rotate" | "revoke"): Promise<T> {
  if (!flags["key-id"]) throw new CliError("INVALID_INPUT", `key ${action} needs --key-id`, "`retasc key list` shows the ids.");
  const session = requireSession(flags);
  const orgId = await orgIdOf(flags, session);
  return asSession<T>(session, "/keys", { body: { orgId, action, keyId: flags["key-id"] } });
}

export async function keyRotate(flags: KeyFlags) {
  const result = await keyChange<MintedKey & { replacedKeyId: string }>(flags, "rotate");
  if (flags.json) return printJson(result);
  note("Rotated: the old key is revoked. The new key is shown once; store it now.");
  out(result.key);
}

export async function keyRevoke(flags: KeyFlags) {
  const result = await keyChange<RevokedKey>(flags, "revoke");
  if (flags.json) return printJson(result);
  ok(result.changed ? "Key revoked; it stopped working at once." : "That key was already revoked.");
}

/** `--project-id a,b`: the projects named (comma-separated, as --status takes statuses), or undefined. */
const projectIdsOf = (value: string | undefined) =>
  value === undefined ? undefined : value.split(",").map((id) => id.trim()).filter((id) => id !== "");

export async function membersInvite(flags: OrgFlags & { "expires-days"?: string; "project-id"?: string }) {
  const session = requireSession(flags);
  const orgId = await orgIdOf(flags, session);
  const expiresDays = flags["expires-days"] === undefined ? undefined : Number(flags["expires-days"]);
  const projectIds = projectIdsOf(flags["project-id"]);
  const invite = await asSession<CreatedInvite>(session, "/members", { body: { orgId, action: "invite", expiresDays, projectIds } });
  const link = `${session.url}/join/${invite.code}`;
  if (flags.json) return printJson({ ...invite, link });
  ok(`Invite code: ${invite.code}`);
  say(`  Expires ${invite.expiresAt.slice(0, 10)}. Single-use, shown once.`);
  if (invite.projectIds) say(`  The member it makes sees only projects ${invite.projectIds.join(", ")}.`);
  say(`  Share it; they run:  retasc join ${link}`);
  say(`  Or open: ${link}`);
}

export async function membersList(flags: OrgFlags) {
  const session = requireSession(flags);
  const orgId = await orgIdOf(flags, session);
  const list = (query: Record<string, string | undefined>) => asSession<Paged<MemberList> & { invitesNextCursor?: string }>(session, "/members", { query: { orgId, ...query } });
  const all: MemberList["members"] = [];
  const peopleRows = tableWriter(["PERSON", "ROLE", "STATE", "PROJECTS", "MEMBER ID"]);
  const agentRows = tableWriter(["AGENT", "KEY", "ACTS FOR", "PROJECT", "STATE", "MEMBER ID"], "\n");
  // The first reply carries the first page of invites too; the rest of them come after the members.
  let first: (MemberList & { invitesNextCursor?: string }) | undefined;
  for await (const members of pages((cursor) => list({ cursor }).then((r) => ((first ??= r), { items: r.members, nextCursor: r.nextCursor })))) {
    if (flags.json) {
      all.push(...members);
      continue;
    }
    peopleRows.write(members.filter((m): m is PersonView => m.kind === "human").map((p) => [`${p.name} <${p.email}>`, p.role, p.status, p.projectIds?.join(",") ?? "all", p.memberId]));
    agentRows.write(members.filter((m): m is AgentView => m.kind === "agent").map((a) => [a.runtime, `${a.keyPrefix}…`, a.humanEmail, a.projectPrefix ?? "any", a.status, a.memberId]));
  }
  let invites = first?.invites ?? null;
  if (invites && first?.invitesNextCursor) {
    const rest = pages((invitesCursor) => list({ invitesCursor: invitesCursor ?? first!.invitesNextCursor }).then((r) => ({ items: r.invites ?? [], nextCursor: r.invitesNextCursor })));
    for await (const page of rest) invites = [...invites, ...page];
  }
  if (flags.json) return printJson({ members: all, invites });
  if (invites?.length) {
    out("");
    tableWriter(["INVITE", "STATE", "EXPIRES", "ACCEPTED BY"]).write(invites.map((i) => [i.inviteId, i.state, i.expiresAt?.slice(0, 10) ?? null, i.acceptedBy]));
  }
}

export async function membersScope(flags: OrgFlags & { "member-id"?: string; "project-id"?: string; all?: boolean }) {
  const projectIds = projectIdsOf(flags["project-id"]);
  if (!flags["member-id"] || (projectIds === undefined) === !flags.all) {
    throw new CliError("INVALID_INPUT", "members scope needs --member-id and one of --project-id <id[,id…]> or --all", "`retasc members list` shows member ids.");
  }
  const session = requireSession(flags);
  const orgId = await orgIdOf(flags, session);
  const result = await asSession<ScopedMember>(session, "/members", {
    body: { orgId, action: "scope", memberId: flags["member-id"], projectIds: projectIds ?? null },
  });
  if (flags.json) return printJson(result);
  ok(result.projectIds ? `They now see only projects ${result.projectIds.join(", ")}, from their next request.` : "They now see every project.");
}

export async function membersRevoke(flags: OrgFlags & { "invite-id"?: string }) {
  if (!flags["invite-id"]) throw new CliError("INVALID_INPUT", "members revoke needs --invite-id", "`retasc members list` shows invites and their ids.");
  const session = requireSession(flags);
  const orgId = await orgIdOf(flags, session);
  const result = await asSession<RevokedInvite>(session, "/members", { body: { orgId, action: "revoke-invite", inviteId: flags["invite-id"] } });
  if (flags.json) return printJson(result);
  ok(result.changed ? "Invite revoked; the code no longer works." : "That invite was already revoked.");
}
