import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { deploymentUrl, serverCli, type UrlFlag } from "../api.ts";
import { mcpUrlOf } from "../binding.ts";
import { CliError } from "../errors.ts";
import { entrySnippet, harnessReports, planSetup, runsProxy, writePlanned, type HarnessReport, type PlannedWrite } from "../harnesses.ts";
import { markerServer, onPath } from "../marker.ts";
import { note, ok, printJson, red, say } from "../output.ts";
import { readConfig, retascDir, updateConfig } from "../store.ts";
import type { Launch } from "../toml-entry.ts";

/**
 * `retasc setup`: the watchdog proxy wired, once, into every agent harness found on this machine
 * (Claude Code, Codex, Cursor, OpenCode, Gemini CLI), in each one's user-level config. One entry
 * serves every folder: the proxy takes the key of the folder the harness starts it in from the
 * keystore, and answers keyless where the folder is not bound. `bind` runs it the first time.
 */
interface SetupFlags extends UrlFlag {
  "dry-run"?: boolean;
  replace?: boolean;
  json?: boolean;
}

/**
 * What the user-level entries run: this CLI from PATH, by its absolute path (these files never
 * travel, and a harness started from a desktop may not have the shell's PATH); else, when this
 * CLI runs from npx's cache (which npm may clear), the CLI the server serves, through npx, as a
 * folder's `.mcp.json` runs it.
 */
export async function proxyLaunch(url: string): Promise<Launch> {
  const found = onPath("retasc");
  if (found && !found.split(path.sep).includes("_npx")) return { command: found, args: ["mcp", "proxy"] };
  const served = (await serverCli(url)) ? `${url}/cli/latest` : null;
  if (served) {
    const server = markerServer("proxy", mcpUrlOf(url), served);
    return { command: server.command as string, args: server.args as string[] };
  }
  throw new CliError(
    "NOT_INSTALLED",
    `retasc is not on PATH, and ${url} serves no CLI for npx to run`,
    `Install the CLI (\`npm install -g ${url}/cli/latest\`, see the README), then run \`retasc setup\` again.`,
  );
}

/** The plan, written unless `dryRun`, and remembered (so `bind` does not run it again). */
export async function applySetup(url: string, options: { dryRun?: boolean; replace?: boolean } = {}): Promise<{ launch: Launch; harnesses: PlannedWrite[] }> {
  const launch = await proxyLaunch(url);
  const plan = planSetup(launch, { replace: options.replace });
  if (!options.dryRun) {
    for (const item of plan) writePlanned(item);
    await updateConfig((config) => {
      config.setup = { at: new Date().toISOString(), command: launch.command, args: launch.args, harnesses: plan.filter((p) => p.action === "write" || p.state === "wired").map((p) => p.id) };
    });
  }
  return { launch, harnesses: plan };
}

/** A plan as --json prints it: no file texts, the entry each file gets (or would need by hand). */
export function setupJson(result: { launch: Launch; harnesses: PlannedWrite[] }, dryRun: boolean) {
  return {
    dryRun,
    launch: result.launch,
    harnesses: result.harnesses.map(({ text: _text, ...item }) => ({ ...item, ...(item.action === "write" || item.action === "cannot" ? { entry: entrySnippet(item.id, result.launch) } : {}) })),
  };
}

/** The lines people read: one per harness, then what to do. */
export function printSetup(result: { launch: Launch; harnesses: PlannedWrite[] }, dryRun: boolean): void {
  const found = result.harnesses.filter((h) => h.state !== "not-found");
  for (const item of result.harnesses) {
    if (item.state === "not-found") say(`- ${item.name}: ${item.detail}`);
    else if (item.action === "none") ok(`${item.name}: already wired (${item.file})`);
    else if (item.action === "write") {
      if (dryRun) say(`• ${item.name}: would write the retasc server into ${item.file}:\n${indent(entrySnippet(item.id, result.launch))}`);
      else ok(`${item.name}: wired (${item.file})`);
    } else {
      say(`${red(process.stdout, "✗")} ${item.name}: ${item.detail}`);
      if (item.action === "cannot") say(indent(entrySnippet(item.id, result.launch)));
    }
  }
  if (found.length === 0) {
    say("No agent harness found on this machine. Install one, then run `retasc setup`.");
    return;
  }
  const runs = [result.launch.command, ...result.launch.args].join(" ");
  if (dryRun) say(`\nNothing written (--dry-run). Each entry runs \`${runs}\` and holds no key.`);
  else {
    say(`\nEach entry runs \`${runs}\` and holds no key: in a bound folder the proxy uses that folder's key from ~/.retasc; elsewhere it answers without one and says to run \`retasc bind\`.`);
    say("Restart each harness (a running one keeps the servers it started with).");
  }
}

const indent = (text: string) => text.replace(/^/gm, "    ");

export async function setup(flags: SetupFlags) {
  const dryRun = Boolean(flags["dry-run"]);
  const result = await applySetup(deploymentUrl(flags), { dryRun, replace: flags.replace });
  if (flags.json) printJson(setupJson(result, dryRun));
  else printSetup(result, dryRun);
  return result;
}

/**
 * `bind` (and join, init, mcp install) runs setup the first time on this machine, never again:
 * the person who removed an entry since keeps it removed (`retasc setup` puts it back). Only when
 * the CLI's state is the home folder's own (~/.retasc): with RETASC_DIR elsewhere (a sandbox, CI,
 * a test) the harness files of that home are not its to change unasked. A failure here (no CLI
 * to run, a file setup cannot edit) never fails the binding: it is said, and doctor says it again.
 */
export async function setupOnce(url: string): Promise<{ launch: Launch; harnesses: PlannedWrite[] } | null> {
  if (path.resolve(retascDir()) !== path.resolve(os.homedir(), ".retasc")) return null;
  if (readConfig().setup) return null;
  try {
    return await applySetup(url);
  } catch (error) {
    note(`  Could not wire the agent harnesses on this machine: ${error instanceof CliError ? `${error.code}: ${error.message}. ${error.hint ?? ""}` : (error as Error).message}`);
    return null;
  }
}

/** One line per harness for `retasc doctor`: found, wired, or what to run. */
export async function harnessChecks(url: string): Promise<{ check: string; ok: boolean; detail: string }[]> {
  const desired = await proxyLaunch(url).catch((): Launch => ({ command: "retasc", args: ["mcp", "proxy"] }));
  return harnessReports(desired).map((report) => ({ check: `harness ${report.name}`, ...harnessHealth(report) }));
}

function harnessHealth(report: HarnessReport): { ok: boolean; detail: string } {
  if (report.state === "not-found") return { ok: true, detail: report.detail };
  const runs = report.launch ? [report.launch.command, ...report.launch.args].join(" ") : "";
  if ((report.state === "wired" || report.state === "not-wired") && runsProxy(report.launch)) {
    const command = report.launch!.command;
    const there = path.isAbsolute(command) ? isExecutable(command) : Boolean(onPath(command));
    return there
      ? { ok: true, detail: `found, wired: ${report.file} runs ${runs}` }
      : { ok: false, detail: `found, wired to ${command}, which is not there: run \`retasc setup\`` };
  }
  // Not wired at user level is not broken: a bound folder's .mcp.json wires the harness there. Only a wiring that cannot run fails.
  if (report.state === "not-wired") return { ok: true, detail: `found, not wired at user level (${report.detail}): \`retasc setup\` wires it` };
  return { ok: true, detail: `found, not wired at user level: ${report.detail}` };
}

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
