import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

/**
 * Where a folder's wiring lives: the folder and its parents, then the main worktree of its git
 * repository. `.retasc.json` there names the deployment, org and project the folder works in;
 * it is committed, so every clone knows its server without being told.
 */
export const PROJECT_FILE = ".retasc.json";

/** `.retasc.json`: which deployment, org and project a folder works in. */
export interface ProjectFile {
  url: string;
  orgId: string;
  projectId: string;
  prefix: string;
}

export function readJsonFile(file: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(fs.readFileSync(file, "utf8"));
    return value && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** The folders a folder's wiring may live in: it and its parents, then the main worktree of its git repository (claim worktrees live beside it). */
export function candidateDirs(start: string): string[] {
  const dirs: string[] = [];
  for (let dir = path.resolve(start); ; dir = path.dirname(dir)) {
    dirs.push(dir);
    if (path.dirname(dir) === dir) break;
  }
  const main = mainWorktree(start);
  if (main && !dirs.includes(main)) dirs.push(main);
  return dirs;
}

/** The nearest `.retasc.json` that names a deployment and a project. */
export function findProjectFile(start: string): { dir: string; file: string; value: ProjectFile } | null {
  for (const dir of candidateDirs(start)) {
    const file = path.join(dir, PROJECT_FILE);
    const value = readJsonFile(file);
    if (value && typeof value.url === "string" && typeof value.projectId === "string" && typeof value.orgId === "string") {
      return { dir, file, value: { url: value.url, orgId: value.orgId, projectId: value.projectId, prefix: String(value.prefix ?? "") } };
    }
  }
  return null;
}

export function mainWorktree(cwd: string): string | null {
  try {
    const common = execFileSync("git", ["rev-parse", "--path-format=absolute", "--git-common-dir"], {
      cwd,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    }).trim();
    return path.basename(common) === ".git" ? path.dirname(common) : null;
  } catch {
    return null;
  }
}

