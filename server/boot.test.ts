import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runEntry, startApp, tempDataDir, testBuildDir, type AppProcess } from "./testing/app-process.ts";

/** The process as a newcomer runs it: `tsx main.ts` with nothing configured, and the admin commands. */
const running: AppProcess[] = [];
/** A refusal's lines, leaving out the JSON log lines. */
const oneLine = (stderr: string) => stderr.trim().split("\n").filter((l) => !l.startsWith("{"));
afterAll(async () => {
  await Promise.all(running.map((app) => app.stop("SIGKILL")));
});

describe("embedded mode from nothing", () => {
  // The promise is healthy within 30 s on a fresh clone (about 12 s on an idle 2-core machine).
  // Here the start shares two cores with another test file, so the bound is doubled.
  const startBound = 60_000;
  it("serves /healthz within the start bound, keeps its data across restarts, and shuts down cleanly", async () => {
    const dataDir = tempDataDir();
    testBuildDir(); // `npm start` builds before it starts; the bound is for the start itself
    const started = Date.now();
    const metricsToken = "boot-test-metrics-token-0123456789";
    const first = await startApp({ RETASC_DATA_DIR: dataDir, LOG_LEVEL: "info", METRICS_TOKEN: metricsToken }, { timeoutMs: startBound });
    running.push(first);
    expect(Date.now() - started).toBeLessThan(startBound);
    const health = await (await fetch(`${first.url}/healthz`, { headers: { authorization: `Bearer ${metricsToken}` } })).json();
    expect(health).toMatchObject({ status: "ok", mode: "embedded", database: "ok" });
    // Pages render with one consistent (production) React build.
    for (const page of ["/", "/auth/sign-up", "/index.md"]) expect((await fetch(`${first.url}${page}`)).status, page).toBe(200);
    const masterKey = fs.readFileSync(path.join(dataDir, "master.key"), "utf8");
    expect(fs.statSync(path.join(dataDir, "master.key")).mode & 0o777).toBe(0o600);

    // While the server holds the data dir, the operator commands refuse in one line.
    const refused = runEntry("server/admin/main.ts", ["bootstrap", "--org", "A", "--project", "W", "--prefix", "WEB", "--email", "a@example.com", "--json"], {
      RETASC_DATA_DIR: dataDir,
    });
    expect(refused.status).toBe(1);
    expect(refused.stderr.trim().split("\n")).toHaveLength(1);
    expect(refused.stderr).toContain("in use by another Retasc process");
    // So does a second server on the same data dir.
    const secondServer = runEntry("main.ts", [], { RETASC_DATA_DIR: dataDir, PORT: "0" });
    expect(secondServer.status).toBe(1);
    expect(oneLine(secondServer.stderr)).toEqual([expect.stringContaining(`the data directory ${dataDir} is in use`)]);

    expect(await first.stop("SIGTERM")).toBe(0);
    expect(first.output()).toContain("stopped");

    const boot = runEntry("server/admin/main.ts", ["bootstrap", "--org", "Acme", "--project", "Web", "--prefix", "WEB", "--email", "o@example.com", "--json"], {
      RETASC_DATA_DIR: dataDir,
    });
    expect(boot.status, boot.stderr).toBe(0);
    const { orgId, key } = JSON.parse(boot.stdout) as { orgId: string; key: string };
    expect(key).toMatch(/^rtsc_/);

    const second = await startApp({ RETASC_DATA_DIR: dataDir }, { timeoutMs: startBound });
    running.push(second);
    expect((await fetch(`${second.url}/healthz`)).status).toBe(200);
    expect(fs.readFileSync(path.join(dataDir, "master.key"), "utf8")).toBe(masterKey);
    expect(await second.stop()).toBe(0);
    // The org made before the restart is still there.
    const minted = runEntry("server/admin/main.ts", ["mint-key", "--org", orgId, "--email", "b@example.com", "--runtime", "codex", "--json"], {
      RETASC_DATA_DIR: dataDir,
    });
    expect(minted.status, minted.stderr).toBe(0);
    expect(JSON.parse(minted.stdout)).toMatchObject({ key: expect.stringMatching(/^rtsc_/) });
    // Two starts and five processes of the operator's commands, on two shared cores.
  }, 240_000);
});

describe("refusing to start, in one clear line", () => {

  it("on a DATABASE_URL nobody answers", () => {
    const result = runEntry("main.ts", [], {
      DATABASE_URL: "postgres://nobody@127.0.0.1:1/none",
      RETASC_MASTER_KEY: crypto.randomBytes(32).toString("base64"),
    });
    expect(result.status).toBe(1);
    expect(oneLine(result.stderr)).toEqual([expect.stringContaining("cannot reach the database")]);
  });

  it("on a malformed DATABASE_URL or master key", () => {
    const result = runEntry("main.ts", [], { DATABASE_URL: "mysql://x", RETASC_MASTER_KEY: "not-a-key" });
    expect(result.status).toBe(1);
    const lines = oneLine(result.stderr);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain("DATABASE_URL must start with postgres://");
    expect(lines[0]).toContain("RETASC_MASTER_KEY must be 32 bytes");
  });

  // On a data dir another process holds: checked while the embedded server above holds its own.
});
