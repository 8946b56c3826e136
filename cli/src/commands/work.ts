import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import type { UrlFlag } from "../api.ts";
import { requireBinding } from "../binding.ts";
import { CliError } from "../errors.ts";
import { commitsAhead, currentBranch, ensureWorktree, evidenceOf, issueOfBranch, removeWorktree, uncommitted, type Removal, type Worktree } from "../git.ts";
import { findMarker } from "../marker.ts";
import { withMcp } from "../mcp.ts";
import { findOpenRequest } from "../open-request.ts";
import { note, ok, out, printJson, say } from "../output.ts";
import { keyFingerprint, readBindings, updateBindings, type ClaimRecord } from "../store.ts";
import type { CheckedClaim, Claim, NoClaim, SavedIssue } from "../wire-mcp.ts";

interface WorkFlags extends UrlFlag {
  "all-lanes"?: boolean;
  base?: string;
  dir?: string;
  "no-fetch"?: boolean;
  "no-worktree"?: boolean;
  "print-path"?: boolean;
  shell?: boolean;
  json?: boolean;
  wait?: boolean;
}

/**
 * The work loop from a terminal, over MCP with the folder's key: the same tools and
 * rules an agent gets. A claim's token is kept in the keystore so `retasc done` can
 * finish the issue later, from the worktree.
 */

/** `42`, `rtsc-42` or `RTSC-42` → `RTSC-42` (a bare number takes the bound project's prefix). */
export function normalizeIdentifier(value: string, prefix: string | undefined): string {
  const text = String(value).trim();
  if (/^\d+$/.test(text)) {
    if (!prefix) throw new CliError("INVALID_INPUT", `${text} needs a prefix`, `Pass the full identifier, like PFX-${text} with your project's prefix.`);
    return `${prefix}-${text}`;
  }
  if (!/^[A-Za-z][A-Za-z0-9]*-\d+$/.test(text)) {
    const p = prefix ?? "PFX";
    throw new CliError("INVALID_INPUT", `${text} is not an issue identifier`, `Pass one like ${p}-42, ${p.toLowerCase()}-42 or 42.`);
  }
  return text.toUpperCase();
}

async function claimAndCheckout(flags: WorkFlags, mode: "next" | "claim", target: string | undefined) {
  const binding = requireBinding(process.cwd());
  const prefix = binding.workspace?.prefix;
  const identifier = target ? normalizeIdentifier(target, prefix) : undefined;
  const reply = await withMcp(binding, async (call) => {
    if (identifier) return call<Claim>("claim_issue", { identifier });
    for (;;) {
      const polled = await call<Claim | NoClaim>("next_issue", flags["all-lanes"] ? { allLanes: true } : {});
      if (isClaim(polled) || !flags.wait) return polled;
      // --wait: poll again no sooner than the server's retryAfter (decision 076).
      await new Promise((resolve) => setTimeout(resolve, (polled.retryAfter ?? 30) * 1000));
    }
  });
  if (!isClaim(reply)) {
    if (flags.json) return printJson(reply);
    say(reply.message ?? "Nothing to claim right now.");
    if (reply.retryAfter) say(`Poll again in ${reply.retryAfter}s, or \`retasc ${mode} --wait\` polls until something is claimable.`);
    if ((reply.otherLanes ?? 0) > 0 && !flags["all-lanes"]) say(`${reply.otherLanes} ready issue(s) sit in other people's lanes; \`retasc ${mode} --all-lanes\` takes them.`);
    return;
  }
  await updateBindings((bindings) => {
    const mine = (bindings.claims[keyFingerprint(binding.key)] ??= {});
    mine[reply.identifier] = { claimToken: reply.claimToken, branch: reply.branch, worktree: null, expiresAt: reply.expiresAt, claimedAt: new Date().toISOString() };
  });
  let worktree: Worktree | null = null;
  if (!flags["no-worktree"]) {
    try {
      worktree = ensureWorktree({ cwd: process.cwd(), branch: reply.branch, dir: flags.dir, base: flags.base, identifier: reply.identifier, fetch: !flags["no-fetch"] });
    } catch (error) {
      const e = error as CliError;
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
    say(`  branch ${reply.branch}, lease until ${new Date(reply.expiresAt).toLocaleTimeString()} (\`retasc heartbeat\` or \`retasc checkpoint\` renews it)`);
    if (reply.checkpoint) say(`  resuming from a checkpoint: ${reply.checkpoint.next ?? reply.checkpoint.done ?? "`retasc issue show` has it"}`);
    if (worktree) say(`  worktree ${worktree.path}${worktree.created ? "" : " (already there)"}`);
    say(`  finish with: retasc done --id ${reply.identifier}`);
  }
  if (flags.shell && worktree) {
    spawnSync(process.env.SHELL || "/bin/sh", [], { cwd: worktree.path, stdio: "inherit" });
  }
}

const isClaim = (reply: Claim | NoClaim): reply is Claim => Boolean(reply.claimToken);

/** The agent launched in the worktree should be wired too: the marker has no secret in it. */
function copyMarker(dir: string): void {
  const marker = findMarker(process.cwd());
  const target = path.join(dir, ".mcp.json");
  if (marker && !fs.existsSync(target)) fs.copyFileSync(marker.file, target);
}

export const next = (flags: WorkFlags) => claimAndCheckout(flags, "next", undefined);

export const claim = (flags: WorkFlags & { id?: string }, positionals: string[]) =>
  claimAndCheckout(flags, "claim", positionals[0] ?? flags.id);

/**
 * Why a branch is not ready to finish: uncommitted work in its worktree, or no commit of its
 * own. Checked where the work is: the claim's worktree, else this folder when it is on the
 * issue's branch.
 */
function unfinishedWork(record: ClaimRecord, identifier: string): { dir: string; problems: string[] } | null {
  const dir = record.worktree && fs.existsSync(record.worktree) ? record.worktree : issueOfBranch(currentBranch(process.cwd())) === identifier ? process.cwd() : null;
  if (!dir) return null;
  const problems: string[] = [];
  const changes = uncommitted(dir);
  if (changes.length) problems.push(`it has uncommitted changes (${changes.length} path${changes.length === 1 ? "" : "s"})`);
  const branch = currentBranch(dir) ?? record.branch;
  const ahead = branch ? commitsAhead(branch, dir) : null;
  if (ahead === 0) problems.push(`its branch ${branch} has no commits of its own`);
  return { dir, problems };
}

interface DoneFlags extends UrlFlag {
  id?: string;
  "keep-worktree"?: boolean;
  force?: boolean;
  "dry-run"?: boolean;
  json?: boolean;
  pr?: string;
}

/**
 * Finishes the issue you hold (from --id or the pfx-NN/… branch you are on) with its claim
 * token, then removes the worktree `retasc claim` made for it unless work in it is uncommitted.
 * A branch with uncommitted work or no commits is refused unless --force; --dry-run says what
 * would happen and changes nothing.
 */
export async function done(flags: DoneFlags) {
  const binding = requireBinding(process.cwd());
  const mine = readBindings().claims[keyFingerprint(binding.key)] ?? {};
  const identifier = flags.id ? normalizeIdentifier(flags.id, binding.workspace?.prefix) : issueHere(Object.keys(mine), binding.workspace?.prefix);
  const record = mine[identifier];
  if (!record) {
    // `retasc done` run again after it succeeded: the claim is gone from the keystore, and the
    // issue being done already is the answer, not a refusal.
    const state = await withMcp(binding, (call) => call<CheckedClaim>("check_claim", { identifier }));
    if ((state.issueStatus ?? state.status) === "done") {
      if (flags.json) printJson({ identifier, status: "done", alreadyFinished: true });
      else ok(`${identifier} is already done.`);
      return;
    }
    throw new CliError("STALE_CLAIM", `no claim of ${identifier} was made from this machine with this folder's key`, `Claim it first: \`retasc claim ${identifier}\`.`);
  }
  const work = unfinishedWork(record, identifier);
  if (flags["dry-run"]) {
    const plan = {
      identifier,
      dryRun: true,
      wouldFinish: !work?.problems.length || Boolean(flags.force),
      refusedBecause: flags.force ? [] : (work?.problems ?? []),
      worktree: record.worktree,
      wouldRemoveWorktree: Boolean(record.worktree && !flags["keep-worktree"] && fs.existsSync(record.worktree) && uncommitted(record.worktree).length === 0),
      branch: record.branch,
    };
    if (flags.json) return printJson(plan);
    say(plan.wouldFinish ? `Would finish ${identifier} (status done) with your claim's token.` : `Would refuse to finish ${identifier}: ${plan.refusedBecause.join("; ")}.`);
    if (record.worktree) say(plan.wouldRemoveWorktree ? `Would remove its worktree ${record.worktree}; the branch ${record.branch} stays.` : `Would keep its worktree ${record.worktree}.`);
    say("Nothing was changed (--dry-run).");
    return;
  }
  if (work?.problems.length && !flags.force) {
    throw new CliError("UNFINISHED_WORK", `${identifier} is not finished in ${work.dir}: ${work.problems.join("; ")}`, `Commit the work first, or finish anyway with \`retasc done --id ${identifier} --force\` (\`--dry-run\` shows what it would do).`);
  }
  // The evidence a project with verification on needs: the claim's worktree (else this checkout) as it stands.
  const dir = record.worktree && fs.existsSync(record.worktree) ? record.worktree : process.cwd();
  const found = evidenceOf(dir);
  // The branch's open pull/merge request (decision 063): --pr wins; else the server asks the project's connector.
  const lookup = flags.pr || !found?.branch ? null : await findOpenRequest(binding, found.branch, dir);
  const pr = flags.pr?.trim() || lookup?.pr || undefined;
  const evidence = found || pr ? { ...found, ...(pr ? { pr } : {}) } : null;
  const issue = await withMcp(binding, (call) =>
    call<SavedIssue>("save_issue", { identifier, status: "done", claimToken: record.claimToken, ...(evidence ? { evidence } : {}) }),
  );
  await updateBindings((bindings) => {
    delete bindings.claims[keyFingerprint(binding.key)]?.[identifier];
  });
  const cwd = process.cwd();
  const worktree = record.worktree ? finishWorktree(record.worktree, flags["keep-worktree"]) : null;
  if (flags.json) {
    printJson({
      ...issue,
      ...(lookup ? { requestLookup: lookup.note } : {}),
      worktree: record.worktree,
      worktreeRemoved: worktree?.removed ?? false,
      ...(worktree && !worktree.removed ? { worktreeKept: worktree.reason } : {}),
    });
  } else {
    ok(issue.alreadyFinished ? `${identifier} is already done.` : `${identifier} is done.`);
    if (lookup) say(`  ${lookup.pr ? `Sent ${lookup.pr} as its pull/merge request` : lookup.note[0]!.toUpperCase() + lookup.note.slice(1)}.`);
    if (issue.verification === "pending") say("  CI verifies it before anything waiting on it starts; a red run puts it back in the queue.");
  }
  if (!worktree || !record.worktree) return;
  if (worktree.removed) {
    if (!flags.json) say(`  Removed its worktree ${record.worktree}; the branch ${record.branch} stays.`);
    if (isInside(cwd, record.worktree)) say(`  Your shell was in it: cd ${JSON.stringify(worktree.repo)}`);
  } else {
    // Said in --json mode too: a worktree left behind is worth a human's attention.
    note(`  Kept its worktree ${record.worktree}: ${worktree.reason}. When you are done with it: git worktree remove ${JSON.stringify(record.worktree)}`);
  }
}

/** The issue of the pfx-NN/… branch checked out here, else the one claim this key holds. */
export function issueHere(held: string[], prefix: string | undefined): string {
  const fromBranch = issueOfBranch(currentBranch(process.cwd()));
  if (fromBranch) return fromBranch;
  if (held.length === 1) return held[0]!;
  throw new CliError("INVALID_INPUT", held.length ? `which issue? you hold ${held.join(", ")} and this is not an issue branch` : "which issue? not on an issue branch", `Pass --id ${prefix ?? "PFX"}-42, or run this in the issue's worktree.`);
}

/**
 * The issue is done by now, so nothing here fails the command: a worktree that cannot be
 * removed is kept, with the reason.
 */
function finishWorktree(dir: string, keep: boolean | undefined): Removal {
  if (keep) return { removed: false, reason: "--keep-worktree" };
  try {
    return removeWorktree(dir);
  } catch (error) {
    return { removed: false, reason: (error as Error).message };
  }
}

function isInside(dir: string, parent: string): boolean {
  const relative = path.relative(parent, dir);
  return !relative.startsWith("..") && !path.isAbsolute(relative);
}
