import { spawnSync } from "node:child_process";
import fs from "node:fs";
import { CLI_CLIENT_ID, deploymentFromFolder, deploymentUrl, normalizeUrl, request, serverCli, type UrlFlag } from "../api.ts";
import { mcpUrlOf, originOf, resolveBinding, type ResolvedBinding } from "../binding.ts";
import { CliError } from "../errors.ts";
import { findProjectFile } from "../folder.ts";
import { findMarker, HEADERS_HELPER_COMMAND, machineLocalParts, onPath } from "../marker.ts";
import { withMcp } from "../mcp.ts";
import { green, note, ok, printJson, red, say } from "../output.ts";
import { asSession, currentSession } from "../session.ts";
import { bindingsPath, configPath, readConfig, retascDir, updateConfig } from "../store.ts";
import { cliVersion, olderThan } from "../version.ts";
import type { McpWhoami } from "../wire-mcp.ts";
import type { CliWhoami, DeviceCode, DeviceToken, SignInMethods } from "../wire.ts";
import { harnessChecks } from "./setup.ts";

type Flags = UrlFlag & { json?: boolean };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `ABCDEFGH` → `ABCD-EFGH`, easier to read aloud and type. */
const grouped = (code: string) => (code.length === 8 ? `${code.slice(0, 4)}-${code.slice(4)}` : code);

/** Signs in with the device flow (RFC 8628) and stores the session. */
export async function login(flags: Flags & { github?: boolean; google?: boolean }) {
  if (flags.github && flags.google) throw new CliError("INVALID_INPUT", "pick one of --github and --google", "Pass just one.");
  const url = deploymentUrl(flags);
  const chosen = flags.github ? "github" : flags.google ? "google" : null;
  if (chosen) {
    const methods = await request<SignInMethods>(url, "/api/cli/sign-in-methods");
    if (!methods.social.includes(chosen)) {
      const others = [...methods.social, ...(methods.emailPassword ? ["email and password"] : [])];
      throw new CliError("UNAVAILABLE", `${url} has no ${chosen === "github" ? "GitHub" : "Google"} sign-in configured`, others.length ? `Sign in with ${others.join(" or ")}: run \`retasc login\` without --${chosen}.` : "Ask the operator to configure a sign-in method.");
    }
  }
  const provider = chosen ?? readConfig().provider;
  // A folder's .retasc.json picked the server: say so, before any page is shown.
  const source = deploymentFromFolder(flags);
  if (source) note(`Signing in to ${url} (named by ${source}; pass --url to choose another).`);
  const code = await request<DeviceCode>(url, "/api/auth/device/code", { body: { client_id: CLI_CLIENT_ID } }).catch((error) => {
    if (error instanceof CliError && error.code === "UNAVAILABLE") throw error;
    throw new CliError("UNAVAILABLE", `${url} does not offer device sign-in`, "Check --url points at a Retasc server.");
  });
  const open = ownPage(url, code.verification_uri_complete);
  if (provider) open.searchParams.set("provider", provider);
  note(`\n  Open: ${open}`);
  note(`  Enter code: ${grouped(code.user_code)}\n`);
  note("  Waiting for authorization…");
  let interval = Math.max(1, Number(code.interval) || 5) * 1000;
  const deadline = Date.now() + Number(code.expires_in) * 1000;
  let token: string | null = null;
  while (!token) {
    if (Date.now() > deadline) throw new CliError("EXPIRED", "the code expired before it was approved", "Run `retasc login` again.");
    await sleep(interval);
    const response = await fetch(`${url}/api/auth/device/token`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ grant_type: "urn:ietf:params:oauth:grant-type:device_code", device_code: code.device_code, client_id: CLI_CLIENT_ID }),
    }).catch(() => null);
    if (!response) continue; // a network blip: keep polling until the code expires
    const body = (await response.json().catch(() => ({}))) as DeviceToken;
    if (response.ok && body.access_token) token = body.access_token;
    else if (body.error === "slow_down") interval += 5000;
    else if (body.error === "access_denied") throw new CliError("ACCESS_DENIED", "the sign-in was denied in the browser", "Run `retasc login` again if that was a mistake.");
    else if (body.error === "expired_token") throw new CliError("EXPIRED", "the code expired before it was approved", "Run `retasc login` again.");
    else if (body.error !== "authorization_pending") throw new CliError("UNAVAILABLE", body.error_description ?? "the sign-in failed", "Run `retasc login` again.");
  }
  const me = await request<CliWhoami>(url, "/api/cli/whoami", { token });
  await updateConfig((config) => {
    config.sessions ??= {};
    config.sessions[url] = { token, user: me.user, signedInAt: new Date().toISOString() };
    config.defaultUrl = url;
    if (flags.github || flags.google) config.provider = provider;
  });
  if (flags.json) printJson({ url, user: me.user, orgs: me.orgs });
  else ok(`Signed in as ${me.user.name} <${me.user.email}>.`);
}

/**
 * The verification page a server's device-code answer names, only when it is on that server's
 * own origin: a server (or a folder naming a look-alike one) cannot send the person to sign in
 * on another site.
 */
function ownPage(url: string, page: unknown): URL {
  let parsed: URL | null = null;
  try {
    parsed = new URL(String(page));
  } catch {
    parsed = null;
  }
  if (!parsed || parsed.origin !== originOf(url)) {
    throw new CliError(
      "URL_MISMATCH",
      `${originOf(url)} answered with a sign-in page on ${parsed?.origin ?? "no valid origin"}, not on its own origin; nothing was opened`,
      `Sign in only on the server's own pages. Check that --url (or the folder's .retasc.json) names the server you mean; if ${parsed?.origin ?? "that"} is this server's public address, run \`retasc login --url ${parsed?.origin ?? "<its URL>"}\`.`,
      { server: originOf(url), page: parsed?.origin ?? null },
    );
  }
  return parsed;
}

/** Forgets the local session and ends it on the server. Agent keys in the keystore stay. */
export async function logout(flags: Flags) {
  const url = deploymentUrl(flags);
  const session = readConfig().sessions?.[url];
  let endedOnServer = false;
  if (session) {
    const response = await fetch(`${url}/api/auth/sign-out`, {
      method: "POST",
      headers: { authorization: `Bearer ${session.token}`, "content-type": "application/json" },
      body: "{}",
    }).catch(() => null);
    endedOnServer = Boolean(response?.ok);
  }
  await updateConfig((config) => {
    delete config.sessions?.[url];
  });
  if (flags.json) return printJson({ url, signedOut: Boolean(session), endedOnServer });
  if (!session) return ok(`Not signed in to ${url}; nothing to do.`);
  ok(`Signed out of ${url}.`);
  if (!endedOnServer) note("  The server could not be told; the session there ends when it expires.");
}

/** What this folder is bound to (by its key, no login needed) and who is signed in. */
export async function whoami(flags: Flags) {
  const { binding, error: unresolved } = folderBinding();
  const session = currentSession(flags);
  let bound: (McpWhoami & { source: string; mcpUrl: string }) | null = null;
  let signedIn: CliWhoami | null = null;
  let bindingError: CliError | null = unresolved;
  if (binding) {
    try {
      bound = { ...(await withMcp(binding, (call) => call<McpWhoami>("whoami"))), source: binding.source, mcpUrl: binding.mcpUrl };
    } catch (error) {
      bindingError = error as CliError;
    }
  }
  if (session) signedIn = await asSession<CliWhoami>(session, "/whoami").catch(() => null);
  if (!bound && !signedIn) {
    if (bindingError) throw bindingError;
    throw new CliError("UNAUTHORIZED", "not signed in, and this folder is not bound", "Run `retasc login`, then `retasc bind`.");
  }
  if (flags.json) {
    printJson({ binding: bound, session: signedIn ? { url: session?.url, ...signedIn } : null });
    return;
  }
  if (bound) {
    say(`This folder: org "${bound.org.name}"${bound.project ? ` / project ${bound.project.prefix}` : ""}`);
    say(`  agent key ${bound.key?.prefix ?? "?"}… (${bound.key?.runtime ?? "?"}) acting for ${bound.human.email} (${bound.human.role})`);
  } else if (bindingError) {
    say(`This folder: ✗ ${bindingError.code}: ${bindingError.message}`);
  } else {
    say("This folder: not bound (`retasc bind`)");
  }
  if (signedIn) {
    say(`Signed in: ${signedIn.user.name} <${signedIn.user.email}> at ${session?.url}`);
    for (const org of signedIn.orgs) say(`  ${org.name}  ${org.role}${org.status === "active" ? "" : ` (${org.status})`}  ${org.orgId}`);
  } else {
    say("Signed in: no (`retasc login`)");
  }
}

/** This folder's binding, or the refusal that stands in for it (a key that would go elsewhere). */
function folderBinding(cwd = process.cwd()): { binding: ResolvedBinding | null; error: CliError | null } {
  try {
    return { binding: resolveBinding(cwd), error: null };
  } catch (error) {
    if (error instanceof CliError) return { binding: null, error };
    throw error;
  }
}

/** Resolved configuration, for bug reports. */
export async function config(flags: Flags) {
  const url = deploymentUrl(flags);
  const session = currentSession(flags);
  const { binding, error } = folderBinding();
  const value = {
    dir: retascDir(),
    configFile: configPath(),
    keystore: bindingsPath(),
    deploymentUrl: url,
    mcpUrl: binding?.mcpUrl ?? mcpUrlOf(url),
    signedIn: session ? { email: session.user.email, since: session.signedInAt } : null,
    folder: binding ? { source: binding.source, workspaceId: binding.workspaceId } : error ? { error: `${error.code}: ${error.message}` } : null,
    env: Object.fromEntries(
      ["RETASC_DIR", "RETASC_DEPLOYMENT_URL", "RETASC_MCP_URL", "RETASC_WORKSPACE", "RETASC_MCP_KEY"]
        .filter((name) => process.env[name])
        .map((name) => [name, name === "RETASC_MCP_KEY" ? "(set)" : process.env[name]]),
    ),
  };
  if (flags.json) return printJson(value);
  for (const [name, v] of Object.entries(value)) say(`${name.padEnd(14)} ${typeof v === "object" && v !== null ? JSON.stringify(v) : (v ?? "—")}`);
}

/** Health of this folder's wiring: each check passes or says what to do. */
export async function doctor(flags: Flags) {
  const checks: { check: string; ok: boolean; detail: string }[] = [];
  const add = (check: string, passed: boolean, detail: string) => checks.push({ check, ok: passed, detail });

  for (const file of [configPath(), bindingsPath()]) {
    if (!fs.existsSync(file)) continue;
    const mode = fs.statSync(file).mode & 0o777;
    add(`${file} is private`, mode === 0o600, mode === 0o600 ? "mode 0600" : `mode ${mode.toString(8)}; run chmod 600 ${file}`);
  }
  const url = deploymentUrl(flags);
  const health = await fetch(`${url}/healthz`).then((r) => r.ok, () => false);
  add("server reachable", health, health ? url : `${url} does not answer; pass --url or set RETASC_DEPLOYMENT_URL`);
  const offered = health ? await serverCli(url) : null;
  if (offered) {
    const behind = olderThan(cliVersion(), offered.version);
    add("the CLI is current", !behind, behind ? `${cliVersion()}, the server serves ${offered.version}: run \`retasc update\`` : `${cliVersion()} (the server serves ${offered.version})`);
  }
  const session = currentSession(flags);
  if (session) {
    const valid = await asSession(session, "/whoami").then(() => true, () => false);
    add("signed in", valid, valid ? session.user.email : "the session ended; run `retasc login`");
  } else {
    add("signed in", true, "no (only needed for org and key management)");
  }
  const cwd = process.cwd();
  const marker = findMarker(cwd);
  add("folder has a .mcp.json marker", Boolean(marker), marker ? marker.file : "run `retasc bind` here");
  if (marker) {
    const secretFree = !/rtsc_[A-Za-z0-9_-]{10,}/.test(fs.readFileSync(marker.file, "utf8"));
    add(".mcp.json holds no secret", secretFree, secretFree ? "the key stays in the keystore" : "remove the key from .mcp.json and run `retasc bind`");
    const local = machineLocalParts(marker.server);
    add(".mcp.json works on another machine", local.length === 0, local.length === 0 ? "no absolute paths, no machine-local ids" : `${local.join("; ")}: run \`retasc bind\` here to rewrite it`);
  }
  const project = findProjectFile(cwd);
  add(".retasc.json names the project", Boolean(project), project ? `${project.value.prefix} at ${project.value.url} (${project.file})` : "run `retasc bind` here to write it: clones of this folder find their server and project by it");
  const { binding, error: unresolved } = folderBinding(cwd);
  add("a key is resolvable", Boolean(binding), binding ? `from ${binding.source}` : unresolved ? `${unresolved.code}: ${unresolved.message}` : "run `retasc bind`, or set RETASC_MCP_KEY and RETASC_MCP_URL");
  if (binding && project && binding.workspace) {
    const differs = [
      normalizeUrl(project.value.url) !== binding.url ? `its URL is ${project.value.url}, the key's ${binding.url}` : null,
      project.value.projectId !== binding.workspace.projectId ? `its project is ${project.value.prefix || project.value.projectId}, the key's ${binding.workspace.prefix}` : null,
    ].filter(Boolean);
    add(".retasc.json matches this folder's key", differs.length === 0, differs.length === 0 ? `${binding.workspace.prefix} at ${binding.url}` : `${differs.join("; ")}: run \`retasc bind\` here`);
  }
  if (marker?.url && binding) {
    add(".mcp.json's URL is the binding's", marker.url === binding.mcpUrl, marker.url === binding.mcpUrl ? marker.url : `.mcp.json says ${marker.url}, the key works at ${binding.mcpUrl}: run \`retasc bind\` here`);
  }
  if (marker && typeof marker.server.command === "string") {
    const found = onPath(marker.server.command);
    add(`${marker.server.command} is on PATH`, Boolean(found), found ?? "install the CLI (see the README), so the command .mcp.json runs is found");
  }
  if (marker && typeof marker.server.headersHelper === "string") {
    // Only the helper bind writes is run: a command read from a repository's file is not doctor's to run.
    const helperCommand = marker.server.headersHelper;
    const retasc = helperCommand === HEADERS_HELPER_COMMAND ? onPath("retasc") : null;
    const helper = retasc ? spawnSync(retasc, ["mcp", "headers"], { cwd: marker.dir, encoding: "utf8", timeout: 20_000 }) : null;
    const works = helper?.status === 0 && /^Bearer rtsc_/.test(safeParse(helper.stdout)?.Authorization ?? "");
    const detail = works
      ? helperCommand
      : helper
        ? (helper.stderr || "it failed").trim().split("\n")[0]!
        : helperCommand === HEADERS_HELPER_COMMAND
          ? "retasc is not on PATH"
          : `it is \`${helperCommand}\`, not \`${HEADERS_HELPER_COMMAND}\`; doctor runs only that: run \`retasc bind\` here to rewrite it`;
    add("the headers helper runs", works, detail);
  }
  if (binding) {
    const who = await withMcp(binding, (call) => call<McpWhoami>("whoami")).then(
      (w) => ({ ok: true, detail: `org "${w.org.name}"${w.project ? ` / ${w.project.prefix}` : ""} as ${w.human.email}` }),
      (e: CliError) => ({ ok: false, detail: `${e.code}: ${e.message}` }),
    );
    add("MCP accepts the key", who.ok, who.detail);
  }
  // The harnesses on this machine, each wired at user level by `retasc setup` or not.
  for (const harness of await harnessChecks(url)) add(harness.check, harness.ok, harness.detail);
  const healthy = checks.every((c) => c.ok);
  if (flags.json) printJson({ healthy, checks });
  else for (const c of checks) say(`${c.ok ? green(process.stdout, "✓") : red(process.stdout, "✗")} ${c.check}: ${c.detail}`);
  if (!healthy) throw new CliError("UNHEALTHY", `${checks.filter((c) => !c.ok).length} check(s) failed`, "Fix the ✗ lines above.");
}

/** The headers helper's output: `{"Authorization":"Bearer …"}` when it works. */
function safeParse(text: string): { Authorization?: string } | null {
  try {
    return JSON.parse(text) as { Authorization?: string } | null;
  } catch {
    return null;
  }
}
