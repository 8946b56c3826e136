import path from "node:path";
import { deploymentUrl, normalizeUrl, request, type UrlFlag } from "../api.ts";
import { resolveBinding } from "../binding.ts";
import { CliError } from "../errors.ts";
import { findProjectFile } from "../folder.ts";
import { findMarker, type Transport } from "../marker.ts";
import { withMcp } from "../mcp.ts";
import { note, ok, printJson, say } from "../output.ts";
import { choose, confirm, interactive, ask, needFlags } from "../prompt.ts";
import { activeOrgs, asSession, requireSession, type SignedIn } from "../session.ts";
import { updateConfig } from "../store.ts";
import { clientBlocks, wireFolder, type Bound, type McpClient } from "../wire-folder.ts";
import type { McpWhoami } from "../wire-mcp.ts";
import type { CreatedOrg, CreatedProject, MintedKey, Project, RedeemedSetup } from "../wire.ts";
import { setupJson, setupOnce } from "./setup.ts";

export interface JsonFlag {
  json?: boolean;
}

/** Flags of the commands that may replace a folder's binding. */
export interface RebindFlags extends UrlFlag {
  yes?: boolean;
}
export interface ProjectFlags {
  "project-id"?: string;
  project?: string;
  prefix?: string;
}
export interface MintFlags extends RebindFlags, JsonFlag {
  runtime?: string;
  transport?: string;
}
/** The org a binding goes into, as far as binding needs it. */
export interface OrgChoice {
  orgId: string;
  name: string;
}

/** A prefix from a project name: its first letters and digits, upper case, 2-6 long. */
export function derivePrefix(name: string): string {
  const letters = name.toUpperCase().replace(/[^A-Z0-9]/g, "").replace(/^[0-9]+/, "");
  return (letters.length >= 2 ? letters : `${letters}PRJ`).slice(0, 6);
}

/** Refuses to silently replace a folder's binding to another org or project. */
export async function checkRebind(flags: RebindFlags, target: { orgId: string; projectId: string }): Promise<"same" | "new" | "replace"> {
  const current = resolveBinding(process.cwd());
  const workspace = current?.workspace;
  if (!workspace) return "new";
  if (workspace.orgId === target.orgId && workspace.projectId === target.projectId) return "same";
  const what = `org "${workspace.orgName}" / project ${workspace.prefix}`;
  if (flags.yes) return "replace";
  if (!interactive()) throw new CliError("ALREADY_BOUND", `this folder is already bound to ${what}`, "Pass --yes to replace the binding.");
  if (!(await confirm(`This folder is already bound to ${what}. Replace it?`))) throw new CliError("CANCELED", "kept the existing binding", "Nothing changed.");
  return "replace";
}

/**
 * `--transport`, else the form this folder's `.mcp.json` already has, else the proxy (the
 * watchdog that heartbeats the agent's claims).
 */
export function transportOf(flags: { transport?: string }): Transport {
  const value = flags.transport ?? (findMarker(process.cwd())?.server.type === "http" ? "http" : "proxy");
  if (value !== "proxy" && value !== "http") throw new CliError("INVALID_INPUT", `--transport ${value} is not proxy or http`, "Pass --transport proxy (default) or --transport http.");
  return value;
}

/**
 * Stores the key, writes the folder's files, remembers the deployment (for `doctor`, `join`
 * and the rest, here and elsewhere), and tells the person how every client connects.
 */
export async function finishBinding(flags: JsonFlag & { transport?: string }, bound: Bound, extra: Record<string, unknown> = {}) {
  const transport = transportOf(flags);
  const wired = await wireFolder({ dir: process.cwd(), ...bound, transport });
  await updateConfig((config) => {
    config.defaultUrl = normalizeUrl(bound.url);
  });
  // The first binding on this machine also wires every agent harness found here (once).
  const harnesses = await setupOnce(normalizeUrl(bound.url));
  const result = {
    ...extra,
    workspaceId: wired.workspaceId,
    orgId: bound.orgId,
    orgName: bound.orgName,
    projectId: bound.projectId,
    prefix: bound.prefix,
    keyId: bound.keyId,
    keyPrefix: bound.key.slice(0, 12),
    runtime: bound.runtime,
    mcpUrl: wired.mcpUrl,
    transport,
    marker: wired.marker,
    projectFile: wired.projectFile,
    commitCheck: wired.commitCheck,
    clients: clientBlocks(wired.mcpUrl),
    ...(harnesses ? { setup: setupJson(harnesses, false) } : {}),
  };
  if (flags.json) {
    printJson(result);
    return result;
  }
  ok(`Minted key for this workspace (${result.keyPrefix}…).`);
  say();
  ok(`This folder is bound to org "${bound.orgName}" / project ${bound.prefix}.`);
  say(`  Agents launched here can only ever read or write ${bound.prefix}.`);
  say(`  Claude Code: ${path.relative(process.cwd(), wired.marker) || wired.marker} runs ${transport === "proxy" ? "`retasc mcp proxy`, which heartbeats your agent's claims while it runs" : "over HTTP with `retasc mcp headers`"}.`);
  say(`  ${path.relative(process.cwd(), wired.marker)} and ${path.relative(process.cwd(), wired.projectFile)} hold no secret and nothing of this machine: commit them; a teammate runs \`retasc bind\` once.`);
  if (wired.commitCheck === "installed") say("  A pre-commit hook refuses a commit that puts an agent key in them.");
  if (wired.commitCheck === "own-hook") note("  Your repository has a pre-commit hook of its own: add `retasc hook pre-commit` to it, so no commit puts an agent key in these files.");
  if (harnesses) {
    const wiredNow = harnesses.harnesses.filter((h) => h.action === "write" || h.state === "wired").map((h) => h.name);
    const missed = harnesses.harnesses.filter((h) => h.action === "leave" || h.action === "cannot");
    say(wiredNow.length ? `  The watchdog is wired into ${wiredNow.join(", ")} on this machine (\`retasc setup\`, once): restart them.` : "  No other agent harness found on this machine (`retasc setup` wires one installed later).");
    for (const h of missed) note(`  ${h.name}: ${h.detail}`);
  }
  say();
  say(`Other clients read the key from RETASC_MCP_KEY:  ${exportLine(wired.mcpUrl)}`);
  printBlocks(wired.mcpUrl);
  say("Start your agent in this folder, or restart it if it's already open, and it'll pull from the queue.");
  return result;
}

/** The shell line that hands the folder's key to other clients, with the only URL it goes to. */
export const exportLine = (mcpUrl: string) => `export RETASC_MCP_URL=${mcpUrl} RETASC_MCP_KEY="$(retasc mcp key)"`;

const clientNames: Record<McpClient, string> = { codex: "Codex", opencode: "OpenCode", cursor: "Cursor", cline: "Cline", gemini: "Gemini CLI" };

export function printBlocks(mcpUrl: string): void {
  for (const [name, block] of Object.entries(clientBlocks(mcpUrl))) {
    say(`\n# ${clientNames[name as McpClient]} (${block.file})`);
    say(block.text);
  }
  say();
}

export async function pickOrg(flags: { "org-id"?: string; "org-name"?: string }, session: SignedIn): Promise<OrgChoice> {
  const orgs = await activeOrgs(session);
  const create = async (name: string): Promise<OrgChoice> => {
    const created = await asSession<CreatedOrg>(session, "/orgs", { body: { name } });
    ok(`Created org "${created.name}".`);
    return { orgId: created.orgId, name: created.name };
  };
  if (flags["org-id"]) {
    const org = orgs.find((o) => o.orgId === flags["org-id"]);
    if (!org) throw new CliError("NOT_FOUND", `you are not an active member of org ${flags["org-id"]}`, "`retasc whoami` lists your orgs.");
    return org;
  }
  if (flags["org-name"]) {
    const name = String(flags["org-name"]).trim();
    const existing = orgs.find((o) => o.name.toLowerCase() === name.toLowerCase());
    if (existing) return existing;
    return create(name);
  }
  if (orgs.length === 1) return orgs[0]!;
  if (!interactive()) {
    if (orgs.length === 0) throw needFlags("you belong to no org yet", "--org-name <name> to create one, or run `retasc join <invite>` first");
    throw needFlags(`you belong to ${orgs.length} orgs`, "--org-id <id> (`retasc whoami` lists them)");
  }
  const choice = await choose<OrgChoice | null>("Which org?", [
    ...orgs.map((o) => ({ label: `${o.name} (${o.role})`, value: o })),
    { label: "Create a new org", value: null },
  ]);
  if (choice) return choice;
  return create(await ask("New org name: "));
}

export async function pickProject(flags: ProjectFlags, session: SignedIn, orgId: string): Promise<Project> {
  const { projects } = await asSession<{ projects: Project[] }>(session, "/projects", { query: { orgId } });
  const create = async (name: string, prefix: string): Promise<Project> => {
    const created = await asSession<CreatedProject>(session, "/projects", { body: { orgId, name, prefix } });
    ok(`Created project ${created.prefix}.`);
    return { id: created.projectId, name: created.name, prefix: created.prefix };
  };
  if (flags["project-id"]) {
    const project = projects.find((p) => p.id === flags["project-id"]);
    if (!project) throw new CliError("NOT_FOUND", `project ${flags["project-id"]} is not in this org`, "`retasc project create` makes one.");
    return project;
  }
  if (flags.project) {
    const wanted = String(flags.project).trim();
    const existing = projects.find((p) => p.prefix === wanted.toUpperCase() || p.name.toLowerCase() === wanted.toLowerCase());
    if (existing) return existing;
    return create(wanted, flags.prefix ?? derivePrefix(wanted));
  }
  if (projects.length === 1) return projects[0]!;
  if (!interactive()) {
    if (projects.length === 0) throw needFlags("the org has no project yet", "--project <name> [--prefix <PFX>] to create one");
    throw needFlags(`the org has ${projects.length} projects`, "--project-id <id> or --project <prefix>");
  }
  const choice = await choose<Project | null>("Which project?", [
    ...projects.map((p) => ({ label: `${p.name} (${p.prefix})`, value: p })),
    { label: "Create a new project", value: null },
  ]);
  if (choice) return choice;
  const name = await ask("Project name: ");
  const prefix = (await ask(`Issue prefix [${derivePrefix(name)}]: `)) || derivePrefix(name);
  return create(name, prefix);
}

/** Mints a key for the person in an org and project and binds the folder to it. */
export async function mintAndBind(flags: MintFlags, session: SignedIn, org: OrgChoice, project: { id: string; prefix: string }, extra: Record<string, unknown> = {}) {
  const rebind = await checkRebind(flags, { orgId: org.orgId, projectId: project.id });
  const runtime = flags.runtime ?? "claude-code";
  if (rebind === "same") {
    // checkRebind found this binding a moment ago.
    const current = resolveBinding(process.cwd())!;
    const stillValid = await withMcp(current, (call) => call<McpWhoami>("whoami")).then(() => true, () => false);
    if (stillValid) {
      // Rewritten as this CLI writes them: a marker from an older CLI named this machine's paths.
      if (current.workspace) await wireFolder({ ...current.workspace, dir: process.cwd(), transport: transportOf(flags) });
      const result = { ...extra, unchanged: true, workspaceId: current.workspaceId, orgId: org.orgId, orgName: org.name, projectId: project.id, prefix: project.prefix, keyPrefix: current.key.slice(0, 12), mcpUrl: current.mcpUrl };
      if (flags.json) printJson(result);
      else ok(`This folder is already bound to org "${org.name}" / project ${project.prefix}; nothing to change.`);
      return result;
    }
  }
  const minted = await asSession<MintedKey>(session, "/keys", { body: { orgId: org.orgId, action: "mint", projectId: project.id, runtime } });
  return finishBinding(flags, {
    url: session.url,
    key: minted.key,
    keyId: minted.keyId,
    orgId: org.orgId,
    orgName: org.name,
    projectId: project.id,
    prefix: project.prefix,
    runtime,
  }, extra);
}

/** Binds this folder: pick or create the org and project, mint a key, wire the folder. */
interface BindFlags extends MintFlags, ProjectFlags {
  "org-id"?: string;
  "org-name"?: string;
  setup?: string;
}

export async function bind(flags: BindFlags) {
  if (flags.setup) return bindWithSetupCode(flags, flags.setup);
  const session = requireSession(flags);
  // A clone of a bound folder: its committed .retasc.json names the org and project.
  const named = findProjectFile(process.cwd())?.value;
  const fromFile = named && normalizeUrl(named.url) === session.url && !flags["org-id"] && !flags["org-name"] && !flags["project-id"] && !flags.project;
  const org = await pickOrg(fromFile ? { "org-id": named.orgId } : flags, session);
  const project = await pickProject(fromFile ? { "project-id": named.projectId } : flags, session, org.orgId);
  return mintAndBind(flags, session, org, project);
}

/** Headless binding with a Dash-issued setup code: no session, no prompts. */
async function bindWithSetupCode(flags: BindFlags, setupCode: string) {
  const url = deploymentUrl(flags);
  const code = setupCode.trim();
  if (!/^rtscsetup_/.test(code)) throw new CliError("INVALID_INPUT", "a setup code starts with rtscsetup_", "Copy it again from the Dash (Settings → Keys).");
  const current = resolveBinding(process.cwd())?.workspace;
  if (current && !flags.yes && !interactive()) {
    // Checked before the code is spent, so a refused rebind keeps the code usable.
    throw new CliError("ALREADY_BOUND", `this folder is already bound to org "${current.orgName}" / project ${current.prefix}`, "Pass --yes to replace the binding.");
  }
  if (current && !flags.yes && !(await confirm(`This folder is already bound to org "${current.orgName}" / project ${current.prefix}. Replace it?`))) {
    throw new CliError("CANCELED", "kept the existing binding", "Nothing changed; the setup code is still unused.");
  }
  const setup = await request<RedeemedSetup>(url, "/api/cli/setup", { body: { code, runtime: flags.runtime } });
  return finishBinding(flags, {
    url,
    key: setup.key,
    keyId: setup.keyId,
    orgId: setup.orgId,
    orgName: setup.orgName,
    projectId: setup.projectId,
    prefix: setup.prefix,
    runtime: setup.runtime,
  });
}
