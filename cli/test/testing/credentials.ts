import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, afterEach, beforeAll, expect } from "vitest";
import { cliEnv, gitRepo, login, removeTemps, retasc, signUp, startServer, workspaceBin, type Person, type Server } from "../testing.ts";

/**
 * The world of the credential tests (credentials*.test.ts): the real CLI runs in a temporary HOME,
 * in folders whose `.mcp.json` and `.retasc.json` are written the way a hostile repository would
 * write them, and a stand-in server on this machine records every request and any `Authorization`
 * it receives: it must receive none.
 */
export const PATH = `${path.dirname(workspaceBin)}${path.delimiter}${process.env.PATH}`;

export interface StandIn {
  url: string;
  requests: { method: string; url: string; authorization: string | undefined }[];
  /** What /api/auth/device/code answers (the look-alike's sign-in page). */
  verificationPage: string;
  close(): Promise<void>;
}

/** A server that records what reaches it: a look-alike Retasc that would keep any key sent to it. */
async function startStandIn(): Promise<StandIn> {
  const state: StandIn = { url: "", requests: [], verificationPage: "", close: async () => {} };
  const httpServer = http.createServer((req, res) => {
    state.requests.push({ method: req.method ?? "", url: req.url ?? "", authorization: req.headers.authorization });
    req.resume();
    req.on("end", () => {
      const json = (status: number, body: unknown) => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(JSON.stringify(body));
      };
      if (req.url === "/api/auth/device/code") {
        return json(200, {
          device_code: "d".repeat(40),
          user_code: "ABCDEFGH",
          verification_uri: state.verificationPage,
          verification_uri_complete: `${state.verificationPage}?user_code=ABCDEFGH`,
          expires_in: 2,
          interval: 1,
        });
      }
      if (req.url === "/api/auth/device/token") return json(400, { error: "expired_token", error_description: "expired" });
      // An MCP server that takes anything: a client that got this far has sent what it had.
      return json(401, { error: "invalid_token" });
    });
  });
  await new Promise<void>((resolve) => httpServer.listen(0, "127.0.0.1", resolve));
  state.url = `http://127.0.0.1:${(httpServer.address() as AddressInfo).port}`;
  state.verificationPage = `${state.url}/device`;
  state.close = () => new Promise((resolve) => httpServer.close(() => resolve()));
  return state;
}

export interface CredentialsWorld {
  server: Server;
  ada: Person;
  /** Ada's folder, bound to project Web of org Acme. */
  repo: string;
  /** Her agent key for it. */
  key: string;
  standIn: StandIn;
}

/**
 * Starts the world before the file's tests (Ada signed in, `repo` bound) and checks after each
 * that nothing reached the stand-in with a credential. Read the world's fields inside tests only.
 */
export function useCredentialsWorld() {
  const world = {} as CredentialsWorld;
  beforeAll(async () => {
    world.server = await startServer();
    world.standIn = await startStandIn();
    world.ada = await signUp(world.server, "Ada");
    // ~/.retasc as a person might have made it by hand, or another tool loosened it: 0755.
    fs.mkdirSync(world.ada.retascDir, { recursive: true, mode: 0o755 });
    fs.chmodSync(world.ada.retascDir, 0o755);
    expect((await login(world.server, world.ada)).code).toBe(0);
    world.repo = gitRepo();
    const bind = await retasc(world.ada, ["bind", "--org-name", "Acme", "--project", "Web", "--prefix", "WEB"], { cwd: world.repo, env: { PATH } });
    expect(bind.code, bind.stderr).toBe(0);
    world.key = (await retasc(world.ada, ["mcp", "key"], { cwd: world.repo })).stdout.trim();
    expect(world.key).toMatch(/^rtsc_/);
  });
  afterEach(() => {
    // Whatever a test did, nothing reached the stand-in with a credential.
    expect(world.standIn.requests.filter((r) => r.authorization !== undefined)).toEqual([]);
  });
  afterAll(async () => {
    await world.standIn?.close();
    await world.server?.close();
    removeTemps();
  });

  /** A clone of the bound repository whose committed files a hostile change rewrote. */
  function hostileClone(files: { mcp?: unknown; project?: unknown }): string {
    const folder = gitRepo();
    const bound = JSON.parse(fs.readFileSync(path.join(world.repo, ".retasc.json"), "utf8"));
    fs.writeFileSync(path.join(folder, ".retasc.json"), JSON.stringify(files.project ?? bound));
    fs.writeFileSync(path.join(folder, ".mcp.json"), JSON.stringify(files.mcp ?? JSON.parse(fs.readFileSync(path.join(world.repo, ".mcp.json"), "utf8"))));
    return folder;
  }
  return { world, hostileClone, connectAsClaudeCode };
}

/** Starts the `retasc` server of a folder's .mcp.json as Claude Code does: its command, args and env, in the folder. */
async function connectAsClaudeCode(person: { retascDir: string; home?: string }, folder: string, extraEnv: Record<string, string> = {}) {
  const entry = JSON.parse(fs.readFileSync(path.join(folder, ".mcp.json"), "utf8")).mcpServers.retasc;
  const env = cliEnv(person, { PATH, ...extraEnv, ...(entry.env ?? {}) }) as Record<string, string>;
  const transport = new StdioClientTransport({ command: entry.command, args: entry.args, cwd: folder, env, stderr: "pipe" });
  let stderr = "";
  transport.stderr?.on("data", (d) => (stderr += d));
  const client = new Client({ name: "test-agent", version: "1.0.0" });
  const connected = await client.connect(transport).then(
    () => true,
    () => false,
  );
  if (connected) await client.close();
  // Let the proxy print its refusal before it is read.
  await new Promise((r) => setTimeout(r, 200));
  return { connected, stderr };
}
