import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort } from "./app-process.ts";

const SCRIPT = path.resolve(import.meta.dirname, "../../scripts/pgbouncer.sh");

export const pgbouncerAvailable = spawnSync("sh", ["-c", "command -v pgbouncer"]).status === 0;

/**
 * A PgBouncer of a test's own in transaction mode (scripts/pgbouncer.sh, the one .ci/run starts
 * on 6432), in front of a PostgreSQL on 127.0.0.1:`upstreamPort`: for a test that restarts its
 * private PostgreSQL (the swarm) and must still go through a pooler.
 */
export class PrivatePgBouncer {
  private constructor(
    private readonly dir: string,
    readonly port: number,
  ) {}

  static async start(upstreamPort: number): Promise<PrivatePgBouncer> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "retasc-pgbouncer-"));
    const bouncer = new PrivatePgBouncer(dir, await freePort());
    const result = spawnSync("sh", [SCRIPT, dir, String(bouncer.port), String(upstreamPort)], { encoding: "utf8", timeout: 30_000 });
    if (result.status !== 0) throw new Error(`PgBouncer did not start:\n${result.stdout}\n${result.stderr}`);
    return bouncer;
  }

  /** Connection string of a database through this pooler. */
  url(database: string, user = "postgres"): string {
    return `postgres://${user}@127.0.0.1:${this.port}/${database}`;
  }

  /**
   * Points the pooler at another PostgreSQL on 127.0.0.1 (a promoted replica): the ini's
   * [databases] line is rewritten and PgBouncer told to reload (SIGHUP, as RELOAD on its console).
   * It closes its connections to the old server and opens the next ones on the new port; clients
   * stay connected to it throughout.
   */
  repoint(upstreamPort: number): void {
    const ini = path.join(this.dir, "pgbouncer.ini");
    fs.writeFileSync(ini, fs.readFileSync(ini, "utf8").replace(/^\* = host=127\.0\.0\.1 port=\d+$/m, `* = host=127.0.0.1 port=${upstreamPort}`));
    process.kill(this.pid(), "SIGHUP");
  }

  private pid(): number {
    return Number(fs.readFileSync(path.join(this.dir, "pgbouncer.pid"), "utf8").trim());
  }

  close(): void {
    const pidFile = path.join(this.dir, "pgbouncer.pid");
    if (fs.existsSync(pidFile)) {
      try {
        process.kill(Number(fs.readFileSync(pidFile, "utf8").trim()), "SIGTERM");
      } catch {
        // already gone
      }
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
