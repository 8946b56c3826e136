import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { CliError } from "./errors.js";

/**
 * The CLI's state in ~/.retasc (RETASC_DIR relocates it): `config.json` holds sessions and
 * defaults, `bindings.json` is the keystore (agent keys per bound folder, and the claim
 * tokens of `retasc claim`). Both are mode 0600, written atomically (temp file + rename)
 * under a lock file, so concurrent commands never lose each other's writes.
 */
export function retascDir() {
  return process.env.RETASC_DIR || path.join(os.homedir(), ".retasc");
}

export const configPath = () => path.join(retascDir(), "config.json");
export const bindingsPath = () => path.join(retascDir(), "bindings.json");

function ensureDir() {
  fs.mkdirSync(retascDir(), { recursive: true, mode: 0o700 });
}

/** @param {string} file @param {any} fallback */
function readJson(file, fallback) {
  let text;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (error) {
    if (/** @type {NodeJS.ErrnoException} */ (error).code === "ENOENT") return fallback;
    throw error;
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new CliError("CORRUPT_STATE", `${file} is not valid JSON`, `Fix or delete it (deleting signs you out / unbinds folders).`);
  }
}

/** @param {string} file @param {unknown} value */
function writeJsonAtomic(file, value) {
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

/** @param {number} pid */
function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return /** @type {NodeJS.ErrnoException} */ (error).code === "EPERM";
  }
}

const sleep = (/** @type {number} */ ms) => new Promise((r) => setTimeout(r, ms));

/** @param {string} lock @returns {{ holder: number, age: number } | null} */
function readLock(lock) {
  try {
    const holder = Number(fs.readFileSync(lock, "utf8").trim() || 0);
    return { holder, age: Date.now() - fs.statSync(lock).mtimeMs };
  } catch {
    return null;
  }
}

/**
 * Runs `update` on a file's content under its lock and writes the result back.
 * @template T
 * @param {string} file
 * @param {any} fallback
 * @param {(value: any) => T | Promise<T>} update  mutates the value; its return is passed through
 * @returns {Promise<T>}
 */
async function locked(file, fallback, update) {
  ensureDir();
  const lock = `${file}.lock`;
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      fs.writeFileSync(lock, String(process.pid), { flag: "wx", mode: 0o600 });
      break;
    } catch (error) {
      if (/** @type {NodeJS.ErrnoException} */ (error).code !== "EEXIST") throw error;
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

/** @returns {{ sessions: Record<string, Session>, defaultUrl?: string, provider?: string }} */
export function readConfig() {
  return readJson(configPath(), { sessions: {} });
}

/** @template T @param {(config: ReturnType<typeof readConfig>) => T} update */
export function updateConfig(update) {
  return locked(configPath(), { sessions: {} }, update);
}

/**
 * @typedef {{ token: string, user: { id: string, email: string, name: string }, signedInAt: string }} Session
 * @typedef {{ path: string, url: string, orgId: string, orgName: string, projectId: string, prefix: string,
 *   keyId: string, key: string, runtime: string, boundAt: string }} Workspace
 * @typedef {{ claimToken: string, branch: string, worktree: string | null, expiresAt: string, claimedAt: string }} ClaimRecord
 * @returns {{ workspaces: Record<string, Workspace>, claims: Record<string, Record<string, ClaimRecord>> }}
 */
export function readBindings() {
  const value = readJson(bindingsPath(), { workspaces: {}, claims: {} });
  value.workspaces ??= {};
  value.claims ??= {};
  return value;
}

/** @template T @param {(bindings: ReturnType<typeof readBindings>) => T} update */
export function updateBindings(update) {
  return locked(bindingsPath(), { workspaces: {}, claims: {} }, (value) => {
    value.workspaces ??= {};
    value.claims ??= {};
    return update(value);
  });
}

/** A key's fingerprint: claims are filed under it, never under the key itself. */
export function keyFingerprint(/** @type {string} */ key) {
  return crypto.createHash("sha256").update(key).digest("hex").slice(0, 16);
}

export function newWorkspaceId() {
  return `ws_${crypto.randomBytes(8).toString("hex")}`;
}
