import { spawn, type ChildProcess } from "node:child_process";
import { entryArgs } from "../../server/testing/entry-bundle.ts";

export interface WorkerProcess {
  child: ChildProcess;
  /** Everything it printed, for a failing test's message. */
  output(): string;
  /** SIGTERM and wait; resolves with the exit code. */
  terminate(): Promise<number | null>;
  /** SIGKILL: no chance to clean up. */
  kill(): Promise<void>;
}

/**
 * Starts the test worker process (one node process, no npx wrapper, so a signal reaches it).
 * `env` is its whole configuration on top of this process's environment.
 */
export function spawnWorker(env: Record<string, string>): WorkerProcess {
  const child = spawn(process.execPath, entryArgs("workers/testing/worker-process.ts"), {
    env: { ...process.env, LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let printed = "";
  child.stdout!.on("data", (d: Buffer) => (printed += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (printed += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return {
    child,
    output: () => printed,
    async terminate() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      return exited;
    },
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    },
  };
}
