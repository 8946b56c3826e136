import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { CliError } from "./errors.ts";

/**
 * The CLI's state in ~/.retasc (RETASC_DIR relocates it): `config.json` holds sessions and
 * defaults, `bindings.json` is the keystore (agent keys per bound folder, and the claim
 * tokens of `retasc claim`). Both are mode 0600 in a folder of mode 0700 (both set again at every
 * write), written atomically (temp file + rename) under a lock file, so concurrent commands never
 * lose each other's writes.
 */
export function retascDir(): string {
  return process.env.RETASC_DIR || path.join(os.homedir(), ".retasc");
}

export const configPath = (): string => path.join(retascDir(), "config.json");
export const bindingsPath = (): string => path.join(retascDir(), "bindings.json");

export interface Session {
  token: string;
  user: { id: string; email: string; name: string };
  signedInAt: string;
}

export interface Config {
  sessions: Record<string, Session>;
  defaultUrl?: string;
  provider?: string;
  /** When `retasc setup` last wired the harnesses, and what it wired: `bind` runs it only while this is unset. */
  setup?: { at: string; command: string; args: string[]; harnesses: string[] };
}

export interface Workspace {
  path: string;
  url: string;
  orgId: string;
  orgName: string;
  projectId: string;
  prefix: string;
  keyId: string;
  key: string;
  runtime: string;
  boundAt: string;
}

export interface ClaimRecord {
  claimToken: string;
  branch: string;
  worktree: string | null;
  expiresAt: string;
  claimedAt: string;
  /** The `retasc mcp proxy` that made or last moved the claim: once it is dead, the folder's next proxy takes the claim over by its token. */
  proxyPid?: number;
}

export interface Bindings {
  workspaces: Record<string, Workspace>;
  /** Claims by key fingerprint, then by issue identifier. */
  claims: Record<string, Record<string, ClaimRecord>>;
}

/**
 * The folder exists and is private before every write, whatever it was before: mkdir's mode
 * applies only to a folder it creates, so one made by hand or loosened since is tightened here.
 */
function ensureDir(): void {
  const dir = retascDir();
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  fs.chmodSync(dir, 0o700);
}

/** The file's JSON, trusted to be what this CLI wrote there (`T`), or `fallback` when missing. */
function readJson<T>(file: string, fallback: T): T {
  let text;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return fallback;
    throw error;
  }
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new CliError("CORRUPT_STATE", `${file} is not valid JSON`, `Fix or delete it (deleting signs you out / unbinds folders).`);
  }
}

function writeJsonAtomic(file: string, value: unknown): void {
  ensureDir();
  const temp = `${file}.${process.pid}.${crypto.randomBytes(4).toString("hex")}.tmp`;
  const fd = fs.openSync(temp, "wx", 0o600);
  try {
    fs.writeSync(fd, `${JSON.stringify(value, null, 2)}\n`);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(temp, file);
  fs.chmodSync(file, 0o600);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function readLock(lock: string): { holder: number; age: number } | null {
  try {
    const holder = Number(fs.readFileSync(lock, "utf8").trim() || 0);
    return { holder, age: Date.now() - fs.statSync(lock).mtimeMs };
  } catch {
    return null;
  }
}

/**
 * Runs `update` on a file's content under its lock and writes the result back.
 * `update` mutates the value; its return is passed through.
 */
async function locked<V, T>(file: string, fallback: V, update: (value: V) => T | Promise<T>): Promise<T> {
  ensureDir();
  const lock = `${file}.lock`;
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      fs.writeFileSync(lock, String(process.pid), { flag: "wx", mode: 0o600 });
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const seen = readLock(lock);
      if (!seen) continue; // released meanwhile
      // An empty lock file is one being written by its new holder right now: wait for it.
      // A lock is stale only when its holder died (a crashed command) or it is very old.
      if ((seen.holder && !alive(seen.holder)) || seen.age > 30_000) {
        fs.rmSync(lock, { force: true });
        continue;
      }
      if (Date.now() > deadline) throw new CliError("LOCKED", `${lock} is held by process ${seen.holder}`, "Wait for it to finish, or delete the lock file.");
      await sleep(25 + Math.random() * 50);
    }
  }
  try {
    const value = readJson(file, fallback);
    const result = await update(value);
    writeJsonAtomic(file, value);
    return result;
  } finally {
    fs.rmSync(lock, { force: true });
  }
}

export function readConfig(): Config {
  return readJson<Config>(configPath(), { sessions: {} });
}

export function updateConfig<T>(update: (config: Config) => T | Promise<T>): Promise<T> {
  return locked<Config, T>(configPath(), { sessions: {} }, update);
}

/** Fills in a map the file lacks (hand-edited, or written by an older CLI), in place. */
function complete(value: Partial<Bindings>): Bindings {
  return Object.assign(value, { workspaces: value.workspaces ?? {}, claims: value.claims ?? {} });
}

export function readBindings(): Bindings {
  return complete(readJson<Partial<Bindings>>(bindingsPath(), { workspaces: {}, claims: {} }));
}

export function updateBindings<T>(update: (bindings: Bindings) => T | Promise<T>): Promise<T> {
  return locked<Partial<Bindings>, T>(bindingsPath(), { workspaces: {}, claims: {} }, (value) => update(complete(value)));
}

/** A key's fingerprint: claims are filed under it, never under the key itself. */
export function keyFingerprint(key: string): string {
  return crypto.createHash("sha256").update(key).digest("hex").slice(0, 16);
}

export function newWorkspaceId(): string {
  return `ws_${crypto.randomBytes(8).toString("hex")}`;
}
