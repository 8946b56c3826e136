import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { CliError } from "./errors.ts";

export interface Worktree {
  path: string;
  created: boolean;
  base: string | null;
}

/** Whether a finished issue's worktree went, and if not, why. */
export type Removal = { removed: true; repo: string } | { removed: false; reason: string };

function run(args: string[], cwd: string): { ok: boolean; stdout: string; stderr: string } {
  const result = spawnSync("git", args, { cwd, encoding: "utf8" });
  if (result.error) throw new CliError("GIT", "git is not installed or not on PATH", "Install git, or pass --no-worktree.");
  return { ok: result.status === 0, stdout: result.stdout.trim(), stderr: result.stderr.trim() };
}

export function git(args: string[], cwd: string): string {
  const result = run(args, cwd);
  if (!result.ok) throw new CliError("GIT", `git ${args[0]} failed: ${result.stderr.split("\n")[0] || "unknown error"}`, "Fix the repository state, or pass --no-worktree.");
  return result.stdout;
}

export function repoRoot(cwd: string): string {
  const result = run(["rev-parse", "--show-toplevel"], cwd);
  if (!result.ok) throw new CliError("NOT_A_REPO", `${cwd} is not inside a git repository`, "Run this in your repo, or pass --no-worktree.");
  return result.stdout;
}

export function currentBranch(cwd: string): string | null {
  const result = run(["symbolic-ref", "--quiet", "--short", "HEAD"], cwd);
  return result.ok ? result.stdout : null;
}

/**
 * What a finish delivered, read from a checkout (decision 045's evidence): its HEAD commit and
 * branch (`retasc done` adds the open request, decision 063). Null when `dir` is no repository or has no commit.
 */
export function evidenceOf(dir: string): { commit: string; branch?: string } | null {
  const head = run(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], dir);
  if (!head.ok || !head.stdout) return null;
  const branch = currentBranch(dir);
  return { commit: head.stdout, ...(branch ? { branch } : {}) };
}

/** The URL of `origin`, or null when there is none. */
export function remoteUrl(cwd: string): string | null {
  const result = run(["remote", "get-url", "origin"], cwd);
  return result.ok && result.stdout ? result.stdout : null;
}

export function refExists(ref: string, cwd: string): boolean {
  return run(["rev-parse", "--verify", "--quiet", `${ref}^{commit}`], cwd).ok;
}

/**
 * Creates (or reuses) the worktree of a claimed issue on the server's branch. An existing
 * branch (an issue resumed from someone's checkpoint) is checked out as it is; a new one
 * starts from `base`.
 */
export function ensureWorktree(input: { cwd: string; branch: string; dir?: string; base?: string; identifier: string; fetch: boolean }): Worktree {
  const root = repoRoot(input.cwd);
  const mainRoot = path.dirname(git(["rev-parse", "--path-format=absolute", "--git-common-dir"], root));
  const dir = path.resolve(input.cwd, input.dir ?? path.join(path.dirname(mainRoot), `${path.basename(mainRoot)}-${input.identifier.toLowerCase()}`));
  const listed = git(["worktree", "list", "--porcelain"], root);
  if (listed.split("\n").includes(`worktree ${dir}`)) return { path: dir, created: false, base: null };
  if (fs.existsSync(dir) && fs.readdirSync(dir).length > 0) {
    throw new CliError("GIT", `${dir} exists and is not a worktree of this repo`, "Pass --dir <path> to put the worktree elsewhere.");
  }
  const hasOrigin = run(["remote", "get-url", "origin"], root).ok;
  if (input.fetch && hasOrigin) run(["fetch", "--quiet", "origin"], root);
  if (refExists(`refs/heads/${input.branch}`, root)) {
    git(["worktree", "add", dir, input.branch], root);
    return { path: dir, created: true, base: null };
  }
  if (hasOrigin && refExists(`refs/remotes/origin/${input.branch}`, root)) {
    git(["worktree", "add", "-b", input.branch, dir, `origin/${input.branch}`], root);
    return { path: dir, created: true, base: `origin/${input.branch}` };
  }
  const base = input.base ?? (hasOrigin && refExists("origin/main", root) ? "origin/main" : "HEAD");
  if (!refExists(base, root)) throw new CliError("GIT", `base ${base} does not exist`, "Pass --base <ref>, or make a first commit.");
  git(["worktree", "add", "--no-track", "-b", input.branch, dir, base], root);
  return { path: dir, created: true, base };
}

/**
 * Removes the worktree of a finished issue; its branch stays. A worktree holding work that is
 * not committed (changed, staged or untracked files) is kept: removing it would lose that work.
 * The `.mcp.json` that `retasc claim` copied in is ours, not the agent's work.
 */
export function removeWorktree(dir: string): Removal {
  if (!fs.existsSync(dir)) return { removed: false, reason: "it is already gone" };
  let changes: string[];
  try {
    changes = uncommitted(dir);
  } catch (error) {
    return { removed: false, reason: (error as Error).message };
  }
  if (changes.length > 0) return { removed: false, reason: `it has uncommitted changes (${changes.length} path${changes.length === 1 ? "" : "s"})` };
  const mainRoot = path.dirname(git(["rev-parse", "--path-format=absolute", "--git-common-dir"], dir));
  const real = fs.realpathSync(dir);
  const listed = git(["worktree", "list", "--porcelain"], mainRoot)
    .split("\n")
    .filter((line) => line.startsWith("worktree "))
    .map((line) => line.slice("worktree ".length));
  // The first entry is the repository's own working tree, never ours to remove.
  if (listed[0] && fs.realpathSync(listed[0]) === real) return { removed: false, reason: "it is the repository's main working tree" };
  if (!listed.slice(1).some((entry) => fs.existsSync(entry) && fs.realpathSync(entry) === real)) {
    return { removed: false, reason: "it is not a worktree of its repository" };
  }
  // --force only for the .mcp.json above: everything else was checked clean.
  const removed = run(["worktree", "remove", "--force", real], mainRoot);
  if (!removed.ok) return { removed: false, reason: `git worktree remove failed: ${removed.stderr.split("\n")[0]}` };
  return { removed: true, repo: mainRoot };
}

/** An issue's worktree: a worktree of this repository (not its main one) on an issue branch (`web-42/…`). */
export interface IssueWorktree {
  path: string;
  branch: string | null;
  issue: string | null;
}

/** The issue identifier of a `pfx-42/slug` branch, upper-cased, or null. */
export function issueOfBranch(branch: string | null): string | null {
  const match = branch ? /^([a-z][a-z0-9]*)-(\d+)\//i.exec(branch) : null;
  return match ? `${match[1]!.toUpperCase()}-${match[2]}` : null;
}

/** The worktrees of the repository `cwd` is in, its main working tree left out. */
export function worktreesOf(cwd: string): IssueWorktree[] {
  const root = repoRoot(cwd);
  const entries = git(["worktree", "list", "--porcelain"], root).split("\n\n").filter(Boolean);
  return entries.slice(1).map((entry) => {
    const lines = entry.split("\n");
    const dir = lines.find((l) => l.startsWith("worktree "))!.slice("worktree ".length);
    const branch = lines.find((l) => l.startsWith("branch refs/heads/"))?.slice("branch refs/heads/".length) ?? null;
    return { path: dir, branch, issue: issueOfBranch(branch) };
  });
}

/** Uncommitted work in a worktree (changed, staged or untracked files; the `.mcp.json` a claim copied in is ours), as paths. */
export function uncommitted(dir: string): string[] {
  const status = run(["status", "--porcelain", "--untracked-files=all"], dir);
  if (!status.ok) throw new CliError("GIT", `git status failed in ${dir}: ${status.stderr.split("\n")[0]}`, "Fix the repository state, or pass --force.");
  return status.stdout.split("\n").filter((line) => line && line !== "?? .mcp.json");
}

/**
 * Commits on `branch` that its base does not have: the base is origin/main, else main, else
 * the main worktree's branch. Null when no base can be told.
 */
export function commitsAhead(branch: string, cwd: string): number | null {
  const mainRoot = path.dirname(git(["rev-parse", "--path-format=absolute", "--git-common-dir"], cwd));
  const mainBranch = currentBranch(mainRoot);
  const base = ["origin/main", "main", "master", mainBranch].find((ref) => ref && ref !== branch && refExists(ref, cwd));
  if (!base) return null;
  const count = run(["rev-list", "--count", `${base}..${branch}`], cwd);
  return count.ok ? Number(count.stdout) : null;
}

/** The issue branches (`web-42/…`) of the repository `cwd` is in, with a worktree or without. */
export function issueBranches(cwd: string): string[] {
  return git(["for-each-ref", "--format=%(refname:short)", "refs/heads"], repoRoot(cwd))
    .split("\n")
    .filter((branch) => issueOfBranch(branch) !== null);
}

/**
 * Deletes a finished issue's branch once its base has every commit of it (commitsAhead); one
 * holding a commit the base lacks is kept: deleting it would lose that work.
 */
export function pruneBranch(branch: string, cwd: string): { deleted: true } | { deleted: false; reason: string } {
  const ahead = commitsAhead(branch, cwd);
  if (ahead === null) return { deleted: false, reason: "no base (origin/main or main) to tell whether it is merged" };
  if (ahead > 0) return { deleted: false, reason: `${ahead} commit${ahead === 1 ? "" : "s"} not merged` };
  // -D: merged into the base, which need not be the branch checked out here (what -d compares with).
  const deleted = run(["branch", "-D", branch], repoRoot(cwd));
  return deleted.ok ? { deleted: true } : { deleted: false, reason: `git branch -D failed: ${deleted.stderr.split("\n")[0]}` };
}
