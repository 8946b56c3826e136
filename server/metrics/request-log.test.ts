import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import crypto from "node:crypto";
import { afterAll, afterEach, beforeAll, expect, test } from "vitest";
import { callError, callOk, connectClient, startSeededApp, type SeededApp } from "../mcp/testing.ts";

/**
 * The request log of a real app process, at debug level, through a realistic workload with
 * planted secrets and content: an agent key, a wrong key, a session cookie, a password, an
 * issue's title and body, a checkpoint, a comment, a claim token, codes in a URL's path and
 * query. Every line the process wrote is searched for each: none may appear. Each request is
 * one line that names its id (the client's, when safe), door, status, duration and principal.
 */
const marker = (what: string) => `${what}MARK${crypto.randomBytes(6).toString("hex")}`;
const planted = {
  title: marker("title"),
  body: marker("body"),
  checkpoint: marker("checkpoint"),
  comment: marker("comment"),
  password: marker("password"),
  wrongKey: `rtsc_${marker("wrongkey")}`,
  deviceCode: marker("devicecode"),
  inviteCode: `rtscinv_${marker("invite")}`,
  queryCode: marker("querycode"),
  unknownArgument: marker("argument"),
};
const secretsSeen: string[] = [];

let seeded: SeededApp;
const clients: Client[] = [];

beforeAll(async () => {
  seeded = await startSeededApp(["LOG"], { LOG_LEVEL: "debug", RETASC_EMAIL_PASSWORD: "on", RETASC_WORKERS: "inline" });
});
afterEach(({ task }) => {
  if (task.result?.state === "fail") process.stderr.write(`app output:\n${seeded?.app.output().slice(-8000)}\n`);
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => {})));
  await seeded?.close();
});

const logLines = () =>
  seeded.app
    .output()
    .split("\n")
    .flatMap((line) => {
      try {
        return [JSON.parse(line) as Record<string, any>];
      } catch {
        return [];
      }
    });

test("a workload with planted secrets and content leaves none of them in the log, and one line per request", async () => {
  const key = seeded.orgs.LOG!.people.alice.key;
  secretsSeen.push(key);
  const alice = await connectClient(seeded.endpoint, key, { name: "alice" });
  clients.push(alice);
  const issue = await callOk(alice, "save_issue", { title: planted.title, body: planted.body, work: true, changeType: "feat", noDependency: "log test" });
  const claim = await callOk(alice, "next_issue", {});
  expect(claim.identifier).toBe(issue.identifier);
  secretsSeen.push(claim.claimToken);
  await callOk(alice, "checkpoint", { identifier: issue.identifier, claimToken: claim.claimToken, done: planted.checkpoint });
  await callOk(alice, "save_comment", { issue: issue.identifier, body: planted.comment });
  expect((await callError(alice, "save_issue", { title: "x", [planted.unknownArgument]: planted.body })).code).toBe("INVALID_INPUT");
  await callOk(alice, "get_issue", { identifier: issue.identifier });
  await callOk(alice, "save_issue", { identifier: issue.identifier, status: "done", claimToken: claim.claimToken });

  const wrong = await fetch(seeded.endpoint, {
    method: "POST",
    headers: { authorization: `Bearer ${planted.wrongKey}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
  });
  expect(wrong.status).toBe(401);

  // A person signs up and reads the Dash with the session cookie.
  const origin = seeded.app.url;
  const signUp = await fetch(`${origin}/api/auth/sign-up/email`, {
    method: "POST",
    headers: { "content-type": "application/json", origin },
    body: JSON.stringify({ email: `log-${crypto.randomBytes(4).toString("hex")}@example.com`, password: planted.password, name: "Logged" }),
  });
  expect(signUp.status).toBe(200);
  const cookies = signUp.headers.getSetCookie().map((c) => c.split(";")[0]!);
  expect(cookies.length).toBeGreaterThan(0);
  for (const cookie of cookies) secretsSeen.push(decodeURIComponent(cookie.slice(cookie.indexOf("=") + 1)).split(".")[0]!);
  const dash = await fetch(`${origin}/dash`, { headers: { cookie: cookies.join("; ") }, redirect: "manual" });
  expect([200, 302]).toContain(dash.status);

  // Codes in URLs: a device approval's query, an invite's path, a query on any route.
  await fetch(`${origin}/device?user_code=${planted.deviceCode}`, { redirect: "manual" });
  await fetch(`${origin}/join/${planted.inviteCode}`, { redirect: "manual" });
  await fetch(`${origin}/dash?token=${planted.queryCode}`, { redirect: "manual" });

  // The client's request id is kept when safe and replaced when not.
  const kept = await fetch(`${origin}/healthz`, { headers: { "x-request-id": "log-test-request-1" } });
  expect(kept.headers.get("x-request-id")).toBe("log-test-request-1");
  const replaced = await fetch(`${origin}/healthz`, { headers: { "x-request-id": "not safe <script>" } });
  expect(replaced.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);

  expect(await seeded.app.stop()).toBe(0);
  const output = seeded.app.output();
  for (const secret of [...Object.values(planted), ...secretsSeen]) {
    expect(secret.length).toBeGreaterThan(10);
    expect(output.includes(secret), `the log holds ${secret}`).toBe(false);
  }

  const requests = logLines().filter((line) => line.msg === "request");
  const mcp = requests.filter((line) => line.door === "mcp");
  // initialize + notifications/initialized per client, and each call: one line each.
  expect(mcp.length).toBeGreaterThanOrEqual(8);
  const dispatch = mcp.find((line) => line.tool === "next_issue")!;
  expect(dispatch).toMatchObject({
    status: 200,
    orgId: seeded.orgs.LOG!.orgId,
    principal: { kind: "agent", userId: seeded.orgs.LOG!.people.alice.userId, keyId: seeded.orgs.LOG!.people.alice.keyId },
    runtime: expect.any(String),
    path: "/mcp",
    method: "POST",
  });
  expect(typeof dispatch.durationMs).toBe("number");
  expect(typeof dispatch.requestId).toBe("string");
  expect(mcp.find((line) => line.codes?.includes("INVALID_INPUT"))).toMatchObject({ tool: "save_issue" });
  expect(mcp.find((line) => line.status === 401)).toBeDefined();
  expect(requests.find((line) => line.requestId === "log-test-request-1")).toMatchObject({ path: "/healthz", status: 200 });
  expect(requests.filter((line) => line.path.startsWith("/join/")).map((line) => line.path)).toEqual(["/join/:redacted"]);
  expect(requests.find((line) => line.door === "auth" && line.path === "/api/auth/sign-up/email")).toMatchObject({ status: 200 });
  expect(requests.some((line) => line.door === "dash")).toBe(true);
}, 120_000);
