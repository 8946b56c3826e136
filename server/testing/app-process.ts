import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { entriesBeside, testBuildPath } from "./build-dir.ts";
import { migrationsHash } from "./db.ts";
import { entryArgs } from "./entry-bundle.ts";
import { makeOnce } from "./once.ts";

/**
 * The real app as a separate process, for tests that go over HTTP: built once per test
 * run (see global-setup.ts), started from its bundle (entry-bundle.ts) on a free port.
 */
const root = path.resolve(import.meta.dirname, "../..");

/** A finished build: the app, then the CLI package it serves (packed last). */
const built = (dir: string) => fs.existsSync(path.join(dir, "server/index.js")) && fs.existsSync(path.join(dir, "cli"));

export function testBuildDir(): string {
  const dir = testBuildPath();
  makeOnce(`${dir}.lock`, () => built(dir), () => {
    for (const [command, args] of [["npx", ["react-router", "build"]], [process.execPath, ["scripts/pack-cli.mjs", dir]]] as const) {
      const result = spawnSync(command, args, { cwd: root, env: { ...process.env, RETASC_BUILD_DIR: dir }, encoding: "utf8" });
      if (result.status !== 0) throw new Error(`${args.join(" ")} failed:\n${result.stdout}\n${result.stderr}`);
    }
  });
  return dir;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
    server.on("error", reject);
  });
}

export interface AppProcess {
  url: string;
  port: number;
  child: ChildProcess;
  output(): string;
  /** SIGTERM and wait for exit; returns the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Resident memory of a process, from /proc (Linux), in bytes. */
export function residentBytes(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? NaN);
  return kb * 1024;
}

export function tempDataDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), "retasc-data-"));
}

/**
 * The cluster embedded apps in tests copy (migratedDataDir): every migration applied, made once
 * per test run under a lock, beside the entries' bundles (removed with them). `npm test` makes it
 * beside the type check (build-for-run.ts).
 */
let seedName: string | undefined;
export function migratedClusterSeed(): string {
  // Named by what shapes it, so a build directory that outlives a run never serves a stale one;
  // worked out once per process, as it reads every migration.
  seedName ??= `pgdata-${migrationsHash()}-pglite-${(JSON.parse(fs.readFileSync(path.join(root, "node_modules/@electric-sql/pglite/package.json"), "utf8")) as { version: string }).version}`;
  const seed = path.join(entriesBeside(testBuildPath()), seedName);
  makeOnce(`${seed}.lock`, () => fs.existsSync(seed), () => {
    // Made beside and renamed: a worker waiting on the lock never copies half a cluster.
    const partial = `${seed}.${process.pid}.partial`;
    fs.rmSync(partial, { recursive: true, force: true });
    const result = spawnSync(process.execPath, ["--import", "tsx", "server/testing/migrated-data-dir.ts", partial], { cwd: root, env: cleanEnv(), encoding: "utf8", timeout: 180_000 });
    if (result.status !== 0) throw new Error(`making the migrated data directory failed (${result.error?.message ?? `exit ${result.status}`}):\n${result.stdout}\n${result.stderr}`);
    fs.renameSync(partial, seed);
  });
  return seed;
}

/**
 * A data directory for an embedded app whose cluster already carries every migration, copied from
 * migratedClusterSeed(). An embedded app starts from it in about 2 s of CPU rather than 6 (initdb
 * and every migration). A test of the first start from nothing (server/boot.test.ts,
 * e2e/newcomer.test.ts) uses tempDataDir().
 */
export function migratedDataDir(): string {
  const dir = tempDataDir();
  fs.cpSync(migratedClusterSeed(), path.join(dir, "pgdata"), { recursive: true });
  return dir;
}

/** Runs a command of this repo (tsx entry) to completion, `input` on its stdin, and returns its output. */
export function runEntry(entry: string, args: string[], env: Record<string, string | undefined>, input?: string) {
  return spawnSync(process.execPath, ["--import", "tsx", entry, ...args], {
    cwd: root,
    env: { ...cleanEnv(), ...env },
    input,
    encoding: "utf8",
    timeout: 60_000,
  });
}

/** The environment of a child process with none of this run's database, Redis or test settings. */
export function cleanEnv(): Record<string, string | undefined> {
  const env = { ...process.env };
  for (const name of ["DATABASE_URL", "DATABASE_DIRECT_URL", "TEST_DATABASE_URL", "TEST_DATABASE_DIRECT_URL", "REDIS_URL", "RETASC_MASTER_KEY", "PORT", "NODE_ENV", "VITEST", "VITEST_POOL_ID", "VITEST_WORKER_ID"]) {
    delete env[name];
  }
  return env;
}

export async function startApp(
  env: Record<string, string | undefined> = {},
  options: { timeoutMs?: number; port?: number } = {},
): Promise<AppProcess> {
  const buildDir = testBuildDir();
  // A fixed port lets a test restart the app where its clients expect it.
  const port = options.port ?? (await freePort());
  const child = spawn(process.execPath, entryArgs("main.ts"), {
    cwd: root,
    env: {
      ...cleanEnv(),
      RETASC_BUILD_DIR: buildDir,
      PORT: String(port),
      HOST: "127.0.0.1",
      LOG_LEVEL: "warn",
      RETASC_DATA_DIR: env.RETASC_DATA_DIR ?? (env.DATABASE_URL ? tempDataDir() : migratedDataDir()),
      ...(env.DATABASE_URL && !env.RETASC_MASTER_KEY ? { RETASC_MASTER_KEY: crypto.randomBytes(32).toString("base64") } : {}),
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
    detached: false,
  });
  let output = "";
  child.stdout!.on("data", (d) => (output += d));
  child.stderr!.on("data", (d) => (output += d));
  const url = `http://127.0.0.1:${port}`;
  // An embedded app's first start (PGlite, migrations) took 33 s alone at load 7 and over 60 s
  // beside other test files on two cores: the wait is for the outcome, so it is generous.
  const deadline = Date.now() + (options.timeoutMs ?? 180_000);
  for (;;) {
    if (child.exitCode !== null) throw new Error(`app exited with ${child.exitCode}:\n${output}`);
    try {
      const res = await fetch(`${url}/healthz`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`app did not become healthy in time:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    port,
    child,
    output: () => output,
    stop(signal: NodeJS.Signals = "SIGTERM") {
      if (child.exitCode !== null) return Promise.resolve(child.exitCode);
      return new Promise((resolve) => {
        child.once("exit", (code) => resolve(code));
        child.kill(signal);
      });
    },
  };
}
