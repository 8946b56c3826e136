import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { cleanEnv } from "../server/testing/app-process.ts";
import { entryArgs, type Entry } from "../server/testing/entry-bundle.ts";

/** Starting and stopping the processes of a swarm run (swarm/run.ts): workers and agent processes. */

const root = path.resolve(import.meta.dirname, "..");
/** Every worker process a run started, for a Ctrl-C to end. */
export const spawned: ChildProcess[] = [];
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Starts an entry (from its bundle) with `env`, keeping the last 20,000 characters of its output. */
export function spawnEntry(entry: Entry, env: Record<string, string>): { child: ChildProcess; output: () => string } {
  const child = spawn(process.execPath, entryArgs(entry), { cwd: root, env: { ...cleanEnv(), ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const keep = (d: Buffer) => {
    output = (output + d.toString()).slice(-20_000);
  };
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  return { child, output: () => output };
}

/** SIGKILL, and wait for the exit. */
export async function killHard(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGKILL");
  await exited;
}

/** SIGTERM, then SIGKILL after `graceMs`, and wait for the exit. */
export async function stopGently(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
  await exited;
  clearTimeout(timer);
}
