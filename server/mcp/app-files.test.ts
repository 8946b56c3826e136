import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, afterEach, beforeAll, expect, test } from "vitest";
import { countTokens } from "../testing/tokens.ts";
import { callError, callOk, connectClient, startSeededApp, type SeededApp } from "./testing.ts";

/**
 * Files and the claim's reply, from the agent's side over /mcp with the SDK client against the
 * built app (its default MCP_MAX_BODY_BYTES): a file goes in as base64 and comes back byte for
 * byte with a type read from the bytes; a claim states each fact once and brings the issue's
 * latest comments and attachments along.
 */
let seeded: SeededApp;
const clients: Client[] = [];

beforeAll(async () => {
  seeded = await startSeededApp(["FLA", "FLB", "FLC"]);
});
afterEach(({ task }) => {
  if (task.result?.state === "fail") process.stderr.write(`app output:\n${seeded?.app.output().slice(-8000)}\n`);
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => {})));
  await seeded?.close();
});

async function session(who: "alice" | "bob" | "carol", org = "FLA") {
  const c = await connectClient(seeded.endpoint, seeded.orgs[org]!.people[who].key, { name: who });
  clients.push(c);
  return c;
}
const task = (title: string) => ({ title, work: true, changeType: "feat", noDependency: "standalone test work" });
/** A real 1×1 PNG, named as a log: the type comes from the bytes. */
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
const MIB = 1024 * 1024;

test("a screenshot round-trips byte for byte with its sniffed type, listed beside a link; another org cannot read it", async () => {
  const [alice, outsider] = [await session("alice"), await session("alice", "FLB")];
  const { identifier } = await callOk(alice, "save_issue", task("The login page renders blank"));
  await callOk(alice, "save_attachment", { issue: identifier, url: "https://example.com/pull/9", title: "the fix" });
  const saved = await callOk(alice, "save_attachment_file", { issue: identifier, filename: "screen.log", contentBase64: PNG });
  expect(saved).toMatchObject({ kind: "file", title: "screen.log", contentType: "image/png", size: 70, issue: identifier });

  const file = await callOk(alice, "get_attachment_file", { attachment: saved.id });
  expect(Buffer.from(file.contentBase64, "base64").equals(Buffer.from(PNG, "base64"))).toBe(true);
  expect(file).toMatchObject({ filename: "screen.log", contentType: "image/png", size: 70 });

  const listed = await callOk(alice, "list_attachments", { issue: identifier });
  expect(listed.attachments.map((a: any) => [a.kind, a.title, a.contentType, a.size])).toEqual([
    ["link", "the fix", null, null],
    ["file", "screen.log", "image/png", 70],
  ]);
  expect(await callError(outsider, "get_attachment_file", { attachment: saved.id })).toMatchObject({ code: "NOT_FOUND" });
  expect(await callError(outsider, "get_attachment", { attachment: saved.id })).toMatchObject({ code: "NOT_FOUND" });
});

test("a 10 MiB file goes through /mcp; a byte more, or bad base64, is INVALID_INPUT saying why", async () => {
  const alice = await session("alice");
  const { identifier } = await callOk(alice, "save_issue", task("Attach the trace"));
  const trace = Buffer.alloc(10 * MIB, "trace line\n");
  const saved = await callOk(alice, "save_attachment_file", { issue: identifier, filename: "trace.txt", contentBase64: trace.toString("base64") });
  expect(saved).toMatchObject({ size: 10 * MIB, contentType: "text/plain; charset=utf-8" });
  const over = await callError(alice, "save_attachment_file", {
    issue: identifier,
    filename: "trace2.txt",
    contentBase64: Buffer.alloc(10 * MIB + 1, "x").toString("base64"),
  });
  expect(over).toMatchObject({ code: "INVALID_INPUT", message: expect.stringContaining("at most 10485760 bytes") });
  const bad = await callError(alice, "save_attachment_file", { issue: identifier, filename: "x.txt", contentBase64: "%%% not base64" });
  expect(bad).toMatchObject({ code: "INVALID_INPUT", message: "contentBase64 is not valid base64" });
  expect(bad.hint).toContain("base64");
});

/** Every place a value occurs in a JSON text. */
const occurrences = (text: string, value: string) => text.split(value).length - 1;

test("a claim says fence, expiry, branch, checkpoint and token once, and brings the latest comments and attachments", async () => {
  // An org of its own, so next_issue has this one issue to hand out.
  const [alice, bob, carol] = [await session("alice", "FLC"), await session("bob", "FLC"), await session("carol", "FLC")];
  const { identifier } = await callOk(alice, "save_issue", task("Rework the parser after review"));
  const plain = await callOk(carol, "claim_issue", { identifier });
  // Before any discussion: the plain claim, for the token figures.
  const plainTokens = countTokens(JSON.stringify(plain));
  await callOk(carol, "checkpoint", { identifier, claimToken: plain.claimToken, done: "tokenizer", next: "the grammar" });
  await callOk(carol, "release_issue", { identifier, claimToken: plain.claimToken });

  for (let n = 1; n <= 6; n++) await callOk(alice, "save_comment", { issue: identifier, body: `review note ${n}` });
  await callOk(alice, "save_comment", { issue: identifier, body: `Please split the grammar. ${"x".repeat(900)}END-OF-LONG-COMMENT` });
  await callOk(alice, "save_attachment", { issue: identifier, url: "https://example.com/review/1", title: "review" });
  await callOk(alice, "save_attachment_file", { issue: identifier, filename: "failing.png", contentBase64: PNG });

  const claim = await callOk(bob, "next_issue", {});
  const text = JSON.stringify(claim);
  expect(claim).toMatchObject({ identifier, fence: 2, checkpoint: { done: "tokenizer", next: "the grammar" }, issue: { title: "Rework the parser after review" } });
  for (const value of [claim.claimToken, claim.expiresAt, `"${claim.branch}"`]) expect(occurrences(text, value), value).toBe(1);
  // The checkpoint's own `branch` is whether it named one (null here), not the branch again.
  expect(claim.checkpoint.branch).toBeNull();
  for (const key of ["fence", "checkpoint", "expiresAt", "lease", "held"]) {
    expect(occurrences(text, `"${key}":`), key).toBeLessThanOrEqual(1);
  }
  expect(claim.issue).not.toHaveProperty("identifier");

  // The latest five comments, oldest first; the long one cut; what is left out says where it is.
  expect(claim.comments.map((c: any) => c.body.slice(0, 25))).toEqual([
    "review note 3",
    "review note 4",
    "review note 5",
    "review note 6",
    "Please split the grammar.",
  ]);
  expect(claim.comments[4].body).not.toContain("END-OF-LONG-COMMENT");
  expect(claim.comments[4].body.length).toBe(401);
  expect(claim.comments[0].author).toBe("Alice");
  expect(claim.omitted).toBe(`2 earlier comments; the rest of 1 cut at 400 characters (…): list_comments {"issue":"${identifier}"}`);
  expect(claim.attachments).toMatchObject([
    { kind: "link", url: "https://example.com/review/1", title: "review" },
    { kind: "file", title: "failing.png", contentType: "image/png", size: 70 },
  ]);

  // Following the hint reads the rest.
  const all = await callOk(bob, "list_comments", { issue: identifier });
  expect(all.comments).toHaveLength(7);
  expect(all.comments[6].body).toContain("END-OF-LONG-COMMENT");

  // The size budget: a claim without discussion stays small, and the discussion is bounded
  // by its caps (5 comments × 400 characters, 5 attachments) whatever the thread's length.
  const tokens = countTokens(text);
  expect(plainTokens.claude, "a plain claim, @anthropic-ai/tokenizer").toBeLessThan(450);
  expect(tokens.claude, "with 5 comments, one of them cut, and 2 attachments").toBeLessThan(plainTokens.claude + 600);
  expect(tokens.o200k).toBeLessThan(plainTokens.o200k + 600);
});

test("a rebound claim keeps the same shape", async () => {
  const [alice, bob] = [await session("alice"), await session("bob")];
  const { identifier } = await callOk(alice, "save_issue", task("Lose the token"));
  const first = await callOk(bob, "claim_issue", { identifier });
  const again = await callOk(bob, "claim_issue", { identifier });
  expect(again).toMatchObject({ identifier, fence: first.fence, rebound: true, comments: [], attachments: [] });
  expect(Object.keys(again).sort()).toEqual([...Object.keys(first), "rebound"].sort());
});
