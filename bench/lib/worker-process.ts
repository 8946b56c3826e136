import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { cleanEnv } from "../../server/testing/app-process.ts";

const repoRoot = path.resolve(import.meta.dirname, "../..");

/** The product's worker process (`npm run workers`) with `env`, its stderr shown: the process the crash benches SIGKILL and start again. */
export function startWorker(env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, ["--import", "tsx", "workers/main.ts"], { cwd: repoRoot, env: { ...cleanEnv(), ...env }, stdio: ["ignore", "ignore", "inherit"] });
}
