import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { findMarker, requireBinding } from "../binding.js";
import { CliError } from "../errors.js";
import { currentBranch, ensureWorktree, removeWorktree } from "../git.js";
import { withMcp } from "../mcp.js";
import { note, ok, out, printJson } from "../output.js";
import { keyFingerprint, readBindings, updateBindings } from "../store.js";

/**
 * The work loop from a terminal, over MCP with the folder's key: the same tools and
 * rules an agent gets. A claim's token is kept in the keystore so `retasc done` can
 * finish the issue later, from the worktree.
 */

/** `42`, `rtsc-42` or `RTSC-42` → `RTSC-42` (a bare number takes the bound project's prefix). */
export function normalizeIdentifier(/** @type {string} */ value, /** @type {string | undefined} */ prefix) {
  const text = String(value).trim();
  if (/^\d+$/.test(text)) {
    if (!prefix) throw new CliError("INVALID_INPUT", `${text} needs a prefix`, "Pass the full identifier, like RTSC-42.");
    return `${prefix}-${text}`;
  }
  if (!/^[A-Za-z][A-Za-z0-9]*-\d+$/.test(text)) throw new CliError("INVALID_INPUT", `${text} is not an issue identifier`, "Pass one like RTSC-42, rtsc-42 or 42.");
  return text.toUpperCase();
}

/** @param {any} flags @param {"next" | "claim"} mode @param {string | undefined} target */
async function claimAndCheckout(flags, mode, target) {
  const binding = requireBinding(process.cwd(), flags);
  const prefix = binding.workspace?.prefix;
  const identifier = target ? normalizeIdentifier(target, prefix) : undefined;
  const reply = await withMcp(binding, (call) =>
    identifier ? call("claim_issue", { identifier }) : call("next_issue", flags["all-lanes"] ? { allLanes: true } : {}),
  );
  if (!reply.claimToken) {
    if (flags.json) return printJson(reply);
    note(reply.message ?? "Nothing to claim right now.");
    if (reply.otherLanes > 0 && !flags["all-lanes"]) note(`${reply.otherLanes} ready issue(s) sit in other people's lanes; \`retasc ${mode} --all-lanes\` takes them.`);
    return;
  }
  await updateBindings((bindings) => {
    const mine = (bindings.claims[keyFingerprint(binding.key)] ??= {});
    mine[reply.identifier] = { claimToken: reply.claimToken, branch: reply.branch, worktree: null, expiresAt: reply.expiresAt, claimedAt: new Date().toISOString() };
  });
  /** @type {{ path: string, created: boolean, base: string | null } | null} */
  let worktree = null;
  if (!flags["no-worktree"]) {
    try {
      worktree = ensureWorktree({ cwd: process.cwd(), branch: reply.branch, dir: flags.dir, base: flags.base, identifier: reply.identifier, fetch: !flags["no-fetch"] });
    } catch (error) {
      const e = /** @type {CliError} */ (error);
      e.hint = `${e.hint ?? ""} The claim itself succeeded (${reply.identifier}, branch ${reply.branch}); it lasts until ${reply.expiresAt}.`.trim();
      throw e;
    }
    copyMarker(worktree.path);
    const created = worktree.path;
    await updateBindings((bindings) => {
      const record = bindings.claims[keyFingerprint(binding.key)]?.[reply.identifier];
      if (record) record.worktree = created;
    });
  }
  if (flags["print-path"]) {
    if (!worktree) throw new CliError("INVALID_INPUT", "--print-path needs a worktree", "Drop --no-worktree.");
    out(worktree.path);
  } else if (flags.json) {
    const { claimToken: _secret, ...shown } = reply;
    printJson({ ...shown, worktree: worktree?.path ?? null });
  } else {
    ok(`Claimed ${reply.identifier}: ${reply.issue?.title ?? ""}`.trimEnd());
    note(`  branch ${reply.branch}, lease until ${new Date(reply.expiresAt).toLocaleTimeString()} (heartbeat or checkpoint renews it)`);
    if (reply.checkpoint) note(`  resuming from a checkpoint: ${reply.checkpoint.next ?? reply.checkpoint.done ?? "see get_issue"}`);
    if (worktree) note(`  worktree ${worktree.path}${worktree.created ? "" : " (already there)"}`);
    note(`  finish with: retasc done --id ${reply.identifier}`);
  }
  if (flags.shell && worktree) {
    spawnSync(process.env.SHELL || "/bin/sh", [], { cwd: worktree.path, stdio: "inherit" });
  }
}

/** The agent launched in the worktree should be wired too: the marker has no secret in it. */
function copyMarker(/** @type {string} */ dir) {
  const marker = findMarker(process.cwd());
  const target = path.join(dir, ".mcp.json");
  if (marker && !fs.existsSync(target)) fs.copyFileSync(marker.file, target);
}

export const next = (/** @type {any} */ flags) => claimAndCheckout(flags, "next", undefined);

export const claim = (/** @type {any} */ flags, /** @type {string[]} */ positionals) =>
  claimAndCheckout(flags, "claim", positionals[0] ?? flags.id);

/**
 * Finishes the issue you hold (from --id or the rtsc-NN/… branch you are on) with its claim
 * token, then removes the worktree `retasc claim` made for it unless work in it is uncommitted.
 */
export async function done(/** @type {any} */ flags) {
  const binding = requireBinding(process.cwd(), flags);
  const mine = readBindings().claims[keyFingerprint(binding.key)] ?? {};
  let identifier = flags.id ? normalizeIdentifier(flags.id, binding.workspace?.prefix) : null;
  if (!identifier) {
    const branch = currentBranch(process.cwd());
    const match = branch ? /^([a-z][a-z0-9]*)-(\d+)\//i.exec(branch) : null;
    if (match) identifier = `${match[1].toUpperCase()}-${match[2]}`;
    else if (Object.keys(mine).length === 1) identifier = Object.keys(mine)[0];
    else throw new CliError("INVALID_INPUT", "which issue? not on an issue branch", "Pass --id RTSC-42, or run this in the issue's worktree.");
  }
  const record = mine[identifier];
  if (!record) {
    throw new CliError("STALE_CLAIM", `no claim of ${identifier} was made from this machine with this folder's key`, `Claim it first: \`retasc claim ${identifier}\`.`);
  }
  const issue = await withMcp(binding, (call) => call("save_issue", { identifier, status: "done", claimToken: record.claimToken }));
  await updateBindings((bindings) => {
    delete bindings.claims[keyFingerprint(binding.key)]?.[identifier];
  });
  const cwd = process.cwd();
  const worktree = record.worktree ? finishWorktree(record.worktree, flags["keep-worktree"]) : null;
  if (flags.json) {
    printJson({
      ...issue,
      worktree: record.worktree,
      worktreeRemoved: worktree?.removed ?? false,
      ...(worktree && !worktree.removed ? { worktreeKept: worktree.reason } : {}),
    });
  } else {
    ok(`${identifier} is done.`);
  }
  if (!worktree) return;
  if (worktree.removed) {
    if (!flags.json) note(`  Removed its worktree ${record.worktree}; the branch ${record.branch} stays.`);
    if (isInside(cwd, record.worktree)) note(`  Your shell was in it: cd ${JSON.stringify(worktree.repo)}`);
  } else {
    // Said in --json mode too: a worktree left behind is worth a human's attention.
    note(`  Kept its worktree ${record.worktree}: ${worktree.reason}. When you are done with it: git worktree remove ${JSON.stringify(record.worktree)}`);
  }
}

/**
 * The issue is done by now, so nothing here fails the command: a worktree that cannot be
 * removed is kept, with the reason.
 * @param {string} dir @param {boolean | undefined} keep
 * @returns {{ removed: true, repo: string } | { removed: false, reason: string }}
 */
function finishWorktree(dir, keep) {
  if (keep) return { removed: false, reason: "--keep-worktree" };
  try {
    return removeWorktree(dir);
  } catch (error) {
    return { removed: false, reason: /** @type {Error} */ (error).message };
  }
}

/** @param {string} dir @param {string} parent */
function isInside(dir, parent) {
  const relative = path.relative(parent, dir);
  return !relative.startsWith("..") && !path.isAbsolute(relative);
}
