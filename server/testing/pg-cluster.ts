import { execFile, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import postgres from "postgres";
import { migrateDatabase, openPostgres } from "../../db/client.ts";
import { freePort } from "./app-process.ts";

/**
 * Debian's PostgreSQL 15 server binaries, and only those: the failover and restore tests
 * (server/queue/failover.test.ts) prove what an operator does with them (docs/operations.md,
 * decision 095), so a machine without them fails those tests rather than skipping them
 * (.ci/run installs PostgreSQL before anything runs).
 */
export const debianPgBin = "/usr/lib/postgresql/15/bin";
const PROGRAMS = ["initdb", "pg_ctl", "pg_basebackup", "postgres"];

export function requireDebianPostgres(): void {
  const missing = PROGRAMS.filter((p) => !fs.existsSync(path.join(debianPgBin, p)));
  if (missing.length > 0) {
    throw new Error(`Debian's PostgreSQL 15 server binaries are missing (${missing.join(", ")} in ${debianPgBin}): apt-get install -y postgresql-15`);
  }
}

const asRoot = process.getuid?.() === 0;

function idOf(flag: "-u" | "-g"): number {
  return Number(spawnSync("id", [flag, "postgres"], { encoding: "utf8" }).stdout.trim());
}

/** A directory the postgres OS user owns (as root, the servers run as postgres: initdb refuses root). */
export function postgresOwnedDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  if (asRoot) fs.chownSync(dir, idOf("-u"), idOf("-g"));
  return dir;
}

/** Runs one of Debian's PostgreSQL programs, as the postgres user when we are root; throws with its output on failure. */
export function pgProgram(program: string, args: string[], options: { cwd?: string; log?: string } = {}): string {
  const command = asRoot ? "runuser" : path.join(debianPgBin, program);
  const argv = asRoot ? ["-u", "postgres", "--", path.join(debianPgBin, program), ...args] : args;
  const result = spawnSync(command, argv, { encoding: "utf8", cwd: options.cwd ?? os.tmpdir(), timeout: 120_000 });
  if (result.status !== 0) {
    const log = options.log && fs.existsSync(options.log) ? fs.readFileSync(options.log, "utf8").slice(-3000) : "";
    throw new Error(`${program} ${args.join(" ")} failed (${result.status ?? result.signal}):\n${result.stdout}\n${result.stderr}\n${log}`);
  }
  return result.stdout;
}

/** pgProgram without blocking the event loop: clients keep calling while a server stops or is promoted. */
function pgProgramAsync(program: string, args: string[], options: { cwd: string; log: string }): Promise<void> {
  const command = asRoot ? "runuser" : path.join(debianPgBin, program);
  const argv = asRoot ? ["-u", "postgres", "--", path.join(debianPgBin, program), ...args] : args;
  return new Promise((resolve, reject) =>
    execFile(command, argv, { encoding: "utf8", cwd: options.cwd, timeout: 120_000 }, (error, stdout, stderr) => {
      if (!error) return resolve();
      const log = fs.existsSync(options.log) ? fs.readFileSync(options.log, "utf8").slice(-3000) : "";
      reject(new Error(`${program} ${args.join(" ")} failed: ${error.message}\n${stdout}\n${stderr}\n${log}`));
    }),
  );
}

/** Clusters not yet closed: a process that exits without its cleanups (a crash, Ctrl-C) still stops and removes them. */
const live = new Set<PgCluster>();
let exitHook = false;
function closeOnExit(cluster: PgCluster): void {
  live.add(cluster);
  if (exitHook) return;
  exitHook = true;
  process.once("exit", () => {
    for (const c of [...live]) c.close();
  });
}

/**
 * One PostgreSQL cluster in a temp dir on a free port of 127.0.0.1, run with Debian's pg_ctl:
 * made by initdb, or by pg_basebackup from another (a streaming replica, or a backup to restore).
 * `close()` stops it at once and removes its directory, whatever state it is in.
 */
export class PgCluster {
  private constructor(
    readonly dir: string,
    readonly port: number,
  ) {}

  get dataDir(): string {
    return path.join(this.dir, "data");
  }

  get logFile(): string {
    return path.join(this.dir, "server.log");
  }

  /** initdb (trust auth, which also lets 127.0.0.1 replicate) plus `settings` appended to postgresql.conf. */
  static async init(settings: string[] = []): Promise<PgCluster> {
    requireDebianPostgres();
    const cluster = new PgCluster(postgresOwnedDir("retasc-pgc-"), await freePort());
    closeOnExit(cluster);
    pgProgram("initdb", ["-D", cluster.dataDir, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8"]);
    cluster.configure([
      `port = ${cluster.port}`,
      "listen_addresses = '127.0.0.1'",
      `unix_socket_directories = '${cluster.dir}'`,
      "max_connections = 100",
      "shared_buffers = 32MB",
      // Durability across an OS crash is not what these tests prove; commits and replication are.
      "fsync = off",
      "full_page_writes = off",
      ...settings,
    ]);
    return cluster;
  }

  /**
   * A copy of `source` taken with pg_basebackup (a fast checkpoint, the WAL it needs streamed
   * alongside), on a port of its own; `-R` (`standby`) makes it a streaming replica of `source`
   * under the name `standby` (synchronous_standby_names matches it).
   */
  static async baseBackup(source: PgCluster, options: { standby?: string; settings?: string[] } = {}): Promise<PgCluster> {
    requireDebianPostgres();
    const cluster = new PgCluster(postgresOwnedDir("retasc-pgc-"), await freePort());
    closeOnExit(cluster);
    pgProgram("pg_basebackup", ["-h", "127.0.0.1", "-p", String(source.port), "-U", "postgres", "-D", cluster.dataDir, "--checkpoint=fast", "-X", "stream", "--no-sync", ...(options.standby ? ["-R"] : [])]);
    cluster.configure([`port = ${cluster.port}`, `unix_socket_directories = '${cluster.dir}'`, ...(options.settings ?? [])]);
    // -R wrote primary_conninfo to postgresql.auto.conf, which wins over postgresql.conf: name the standby there.
    if (options.standby) {
      fs.appendFileSync(
        path.join(cluster.dataDir, "postgresql.auto.conf"),
        `primary_conninfo = 'host=127.0.0.1 port=${source.port} user=postgres application_name=${options.standby}'\n`,
      );
    }
    return cluster;
  }

  /** Appends settings to postgresql.conf (a later line wins over an earlier one). */
  configure(settings: string[]): void {
    fs.appendFileSync(path.join(this.dataDir, "postgresql.conf"), `\n${settings.join("\n")}\n`);
  }

  /** An empty signal file in the data dir (recovery.signal for a point-in-time restore). */
  signal(name: "recovery.signal" | "standby.signal"): void {
    const file = path.join(this.dataDir, name);
    fs.writeFileSync(file, "");
    if (asRoot) fs.chownSync(file, idOf("-u"), idOf("-g"));
  }

  start(): Promise<void> {
    return this.ctl("start");
  }

  /** `immediate` is a crash as far as the data goes: no shutdown checkpoint, nothing more sent to a standby. */
  stop(mode: "fast" | "immediate" = "fast"): Promise<void> {
    return this.ctl("stop", ["-m", mode]);
  }

  /** pg_ctl promote, waiting until the promoted server takes writes. */
  promote(): Promise<void> {
    return this.ctl("promote");
  }

  url(database = "postgres"): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  /** Runs `body` with a one-connection client of `database`, then closes it. */
  async with<T>(body: (sql: postgres.Sql) => Promise<T>, database = "postgres"): Promise<T> {
    const sql = postgres(this.url(database), { max: 1, onnotice: () => {}, connect_timeout: 10 });
    try {
      return await body(sql);
    } finally {
      await sql.end({ timeout: 5 });
    }
  }

  close(): void {
    live.delete(this);
    if (fs.existsSync(path.join(this.dataDir, "postmaster.pid"))) {
      try {
        pgProgram("pg_ctl", ["-D", this.dataDir, "-w", "-t", "60", "-m", "immediate", "stop"], { cwd: this.dir });
      } catch {
        // not running after all
      }
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
  }

  private ctl(action: string, extra: string[] = []): Promise<void> {
    return pgProgramAsync("pg_ctl", ["-D", this.dataDir, "-l", this.logFile, "-w", "-t", "60", ...extra, action], { cwd: this.dir, log: this.logFile });
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Asks `check` every 50 ms (an error counts as not yet: a server restarting) until it holds or `timeoutMs` passes. */
export async function until(what: string, check: () => Promise<boolean> | boolean, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await check()) return;
    } catch {
      // a server restarting: ask again
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(50);
  }
}

/** A fresh database `retasc` on `cluster`, every migration applied. */
export async function migratedDatabase(cluster: PgCluster): Promise<void> {
  await cluster.with((s) => s`create database retasc`);
  const direct = await openPostgres(cluster.url("retasc"), { max: 1 });
  try {
    await migrateDatabase(direct, cluster.url("retasc"));
  } finally {
    await direct.close();
  }
}
