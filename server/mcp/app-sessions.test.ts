import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { testDriver } from "../testing/db.ts";
import { startApp, type AppProcess } from "../testing/app-process.ts";
import { callError, callOk, connectClient, startSeededApp, type SeededApp } from "./testing.ts";

/**
 * Agents sharing one key are separate holders (decision 036), from the agents' side over /mcp:
 * every client below is an SDK client on the same person's key, each in its own session, as the
 * agents of one bound folder or the subagents of one orchestrator are.
 */
let app: SeededApp;
let short: SeededApp;
let second: AppProcess | undefined;
const clients: Client[] = [];
const LEASE_SECONDS = 3;

beforeAll(async () => {
  // A second instance on the same database checks the sessions the first one issued (PostgreSQL
  // only: PGlite is one process's); it starts as soon as the first is up.
  [app, short] = await Promise.all([
    startSeededApp(["SESS"]).then(async (first) => {
      if (testDriver === "postgres") second = await startApp(first.env);
      return first;
    }),
    startSeededApp(["LAPS"], { LEASE_TTL_SECONDS: String(LEASE_SECONDS) }),
  ]);
});
afterEach(({ task }) => {
  if (task.result?.state === "fail") process.stderr.write(`app output:\n${app?.app.output().slice(-6000)}\n${short?.app.output().slice(-6000)}\n`);
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => {})));
  await second?.stop();
  await Promise.all([app?.close(), short?.close()]);
});

/** One more agent on Alice's key: a new MCP session. */
async function agent(on: SeededApp = app, options: { endpoint?: string; sessionId?: string } = {}) {
  const org = Object.values(on.orgs)[0]!;
  const client = await connectClient(options.endpoint ?? on.endpoint, org.people.alice.key, { name: "sibling", sessionId: options.sessionId });
  clients.push(client);
  return client;
}
const sessionOf = (client: Client) => (client.transport as unknown as { sessionId?: string }).sessionId;
const task = (title: string) => ({ title, work: true, changeType: "feat", noDependency: "session test work" });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A raw tools/call with no session (an anonymous client), or with the session id given. */
async function rawCall(on: SeededApp, name: string, args: Record<string, unknown>, sessionId?: string) {
  const org = Object.values(on.orgs)[0]!;
  const response = await fetch(on.endpoint, {
    method: "POST",
    headers: {
      authorization: `Bearer ${org.people.alice.key}`,
      accept: "application/json, text/event-stream",
      "content-type": "application/json",
      ...(sessionId ? { "mcp-session-id": sessionId } : {}),
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } }),
  });
  return { status: response.status, body: (await response.json()) as { result?: { isError?: boolean; structuredContent: any }; error?: { message: string } } };
}

// Sections 1 to 3 run one test after another on `app`; sections 4 and 5 wait out leases of 3 s on
// `short` (another app, another database), so they run beside them and beside each other.
describe.concurrent("on one app, one test after another", () => {
  describe.sequential("1. sessions", () => {
    test("initialize hands each client its own signed Mcp-Session-Id; one not issued to this key is refused 404 and changes nothing", async () => {
      const [one, two] = [await agent(), await agent()];
      expect(sessionOf(one)).toMatch(/^rtses_[\w-]{22}\.[\w-]{43}$/);
      expect(sessionOf(two)).not.toBe(sessionOf(one));

      const issue = await callOk(one, "save_issue", task("Held in a session"));
      const claim = await callOk(one, "claim_issue", { identifier: issue.identifier });
      const forged = `${sessionOf(one)!.slice(0, -3)}AAA`;
      const refused = await rawCall(app, "heartbeat", { identifier: issue.identifier }, forged);
      expect(refused.status).toBe(404);
      expect(refused.body.error?.message).toMatch(/Session not found/);
      // Another key presenting Alice's session is refused the same way.
      const bob = Object.values(app.orgs)[0]!.people.bob.key;
      const stolen = await fetch(app.endpoint, {
        method: "POST",
        headers: { authorization: `Bearer ${bob}`, accept: "application/json, text/event-stream", "content-type": "application/json", "mcp-session-id": sessionOf(one)! },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "heartbeat", arguments: { identifier: issue.identifier } } }),
      });
      expect(stolen.status).toBe(404);
      await callOk(one, "release_issue", { identifier: issue.identifier, claimToken: claim.claimToken });
    });

    test("a client that sends no session id is its own session on every request: its writes always need the token", async () => {
      const issue = (await rawCall(app, "save_issue", task("Anonymous"))).body.result!.structuredContent;
      const claim = (await rawCall(app, "claim_issue", { identifier: issue.identifier })).body.result!.structuredContent;
      expect(claim.renewal).toBe("heartbeat");
      const tokenless = (await rawCall(app, "heartbeat", { identifier: issue.identifier })).body.result!;
      expect(tokenless.isError).toBe(true);
      expect(tokenless.structuredContent.error.code).toBe("CLAIM_MISMATCH");
      expect((await rawCall(app, "check_claim", { identifier: issue.identifier })).body.result!.structuredContent).toMatchObject({ status: "unknown_session", youHold: false, yourKey: true });
      expect((await rawCall(app, "heartbeat", { identifier: issue.identifier, claimToken: claim.claimToken })).body.result!.isError).toBeFalsy();
      await rawCall(app, "release_issue", { identifier: issue.identifier, claimToken: claim.claimToken });
    });

    test.runIf(testDriver === "postgres")("a session issued by one instance is honoured by another (nothing kept in memory)", async () => {
      const one = await agent();
      const issue = await callOk(one, "save_issue", task("Across instances"));
      await callOk(one, "claim_issue", { identifier: issue.identifier });
      const elsewhere = await agent(app, { endpoint: `${second!.url}/mcp`, sessionId: sessionOf(one) });
      expect(await callOk(elsewhere, "check_claim", { identifier: issue.identifier })).toMatchObject({ status: "held", youHold: true });
      expect(await callOk(elsewhere, "release_issue", { identifier: issue.identifier })).toMatchObject({ released: true });
    });
  });

  describe.sequential("2. a key is never enough", () => {
    test("a sibling cannot take, renew, checkpoint, release or finish a live lease without its token; it is told CLAIM_MISMATCH with since, until and the last checkpoint, and following the hint it gets other work", async () => {
      const holder = await agent();
      const sibling = await agent();
      const issue = await callOk(holder, "save_issue", task("Mid-work"));
      await callOk(holder, "save_issue", task("Other work for the sibling"));
      const claim = await callOk(holder, "claim_issue", { identifier: issue.identifier });
      await callOk(holder, "checkpoint", { identifier: issue.identifier, claimToken: claim.claimToken, done: "parser", next: "write the tests" });

      for (const [name, args] of [
        ["claim_issue", { identifier: issue.identifier }],
        ["heartbeat", { identifier: issue.identifier }],
        ["checkpoint", { identifier: issue.identifier, done: "mine now" }],
        ["release_issue", { identifier: issue.identifier }],
        ["save_issue", { identifier: issue.identifier, status: "done" }],
        ["save_issue", { identifier: issue.identifier, status: "done", claimToken: "rtclm_guessed" }],
        ["heartbeat", { identifier: issue.identifier, claimToken: "rtclm_guessed" }],
      ] as const) {
        const refused = await callError(sibling, name, args);
        expect(refused.code, `${name} ${JSON.stringify(args)}`).toBe("CLAIM_MISMATCH");
        expect(refused.message).toContain("held by another session of your key");
        expect(refused.message).toContain(`since ${claim.expiresAt.slice(0, 4)}`);
        expect(refused.message).toContain('its last checkpoint: "write the tests"');
        expect(refused.hint).toContain("next_issue");
        expect(refused.details).toMatchObject({ otherSession: true });
        expect(refused.details?.youHold).toBeUndefined();
      }
      const check = await callOk(sibling, "check_claim", { identifier: issue.identifier });
      expect(check).toMatchObject({ status: "other_session", youHold: false, yourKey: true, renewedByYourCalls: false });
      expect(check.recover).toBeUndefined();

      // The holder was never disturbed: its token still works, its lease still has fence 1.
      expect(await callOk(holder, "heartbeat", { identifier: issue.identifier, claimToken: claim.claimToken })).toMatchObject({ fence: claim.fence });
      const next = await callOk(sibling, "next_issue");
      expect(next.identifier).not.toBe(issue.identifier);
      await callOk(sibling, "release_issue", { identifier: next.identifier, claimToken: next.claimToken });
      await callOk(holder, "save_issue", { identifier: issue.identifier, status: "done", claimToken: claim.claimToken });
    });

    test("next_issue's 'you already hold' names only this session's claims, never a sibling's", async () => {
      const holder = await agent();
      const sibling = await agent();
      const issue = await callOk(holder, "save_issue", task("Only the holder resumes it"));
      const claim = await callOk(holder, "claim_issue", { identifier: issue.identifier });
      const empty = await callOk(sibling, "next_issue");
      if (empty.claimed === false) expect(empty.activeClaims ?? []).not.toContain(issue.identifier);
      else {
        expect(empty.activeClaims ?? []).not.toContain(issue.identifier);
        await callOk(sibling, "release_issue", { identifier: empty.identifier, claimToken: empty.claimToken });
      }
      await callOk(holder, "release_issue", { identifier: issue.identifier, claimToken: claim.claimToken });
    });
  });

  describe.sequential("3. recovery goes by the token", () => {
    test("claim_issue with the live token moves the lease to the calling session: same fence, fresh token, the old one void, the checkpoint untouched", async () => {
      const before = await agent();
      const issue = await callOk(before, "save_issue", task("Resumed elsewhere"));
      const claim = await callOk(before, "claim_issue", { identifier: issue.identifier });
      await callOk(before, "checkpoint", { identifier: issue.identifier, claimToken: claim.claimToken, done: "half", gotchas: "flaky" });
      const after = await agent();
      const moved = await callOk(after, "claim_issue", { identifier: issue.identifier, claimToken: claim.claimToken });
      expect(moved).toMatchObject({ rebound: true, fence: claim.fence, renewal: "calls" });
      expect(moved.claimToken).not.toBe(claim.claimToken);
      expect(moved.checkpoint).toMatchObject({ done: "half", gotchas: "flaky" });
      // The old session is now the sibling: its old token and its session are both refused.
      expect((await callError(before, "heartbeat", { identifier: issue.identifier, claimToken: claim.claimToken })).code).toBe("CLAIM_MISMATCH");
      expect((await callError(before, "heartbeat", { identifier: issue.identifier })).code).toBe("CLAIM_MISMATCH");
      expect(await callOk(before, "check_claim", { identifier: issue.identifier })).toMatchObject({ status: "other_session" });
      expect(await callOk(after, "check_claim", { identifier: issue.identifier })).toMatchObject({ status: "held", youHold: true });
      expect((await callOk(after, "save_issue", { identifier: issue.identifier, status: "done", claimToken: moved.claimToken })).status).toBe("done");
    });

    test("the session that lost its token is recognized without it for heartbeat, checkpoint, release and a tokenless claim_issue, never for finishing", async () => {
      const agentA = await agent();
      const issue = await callOk(agentA, "save_issue", task("Token lost to compaction"));
      const claim = await callOk(agentA, "claim_issue", { identifier: issue.identifier });
      expect(await callOk(agentA, "heartbeat", { identifier: issue.identifier })).toMatchObject({ fence: claim.fence });
      expect((await callOk(agentA, "checkpoint", { identifier: issue.identifier, next: "finish it" })).checkpoint).toMatchObject({ next: "finish it" });
      const finish = await callError(agentA, "save_issue", { identifier: issue.identifier, status: "done" });
      expect(finish.code).toBe("STALE_CLAIM");
      expect(finish.details).toMatchObject({ youHold: true });
      expect(finish.hint).toContain("claim_issue");
      const back = await callOk(agentA, "claim_issue", { identifier: issue.identifier });
      expect(back).toMatchObject({ rebound: true, fence: claim.fence });
      expect(await callOk(agentA, "release_issue", { identifier: issue.identifier })).toMatchObject({ released: true });
    });

    test("tokens from next_batch {claim:true} work from any session of the key: subagents heartbeat, checkpoint and finish with them", async () => {
      const orchestrator = await agent();
      for (const n of [1, 2, 3]) await callOk(orchestrator, "save_issue", task(`Wave item ${n}`));
      const batch = await callOk(orchestrator, "next_batch", { n: 3, claim: true });
      expect(batch.claims.length).toBeGreaterThan(1);
      const subagents = await Promise.all(batch.claims.map(() => agent()));
      await Promise.all(
        batch.claims.map(async (claim: { identifier: string; claimToken: string }, i: number) => {
          const sub = subagents[i]!;
          await callOk(sub, "heartbeat", { identifier: claim.identifier, claimToken: claim.claimToken });
          await callOk(sub, "checkpoint", { identifier: claim.identifier, claimToken: claim.claimToken, done: "did it" });
          expect((await callOk(sub, "save_issue", { identifier: claim.identifier, status: "done", claimToken: claim.claimToken })).status).toBe("done");
        }),
      );
    });
  });
});

describe.concurrent("4. answers true to each lease (leases of 3 s)", () => {
  test("a lapsed session's late done is STALE_CLAIM naming who finished it; only the finisher is told alreadyFinished", async () => {
    const slow = await agent(short);
    const fast = await agent(short);
    const issue = await callOk(slow, "save_issue", task("Lapses mid-work"));
    const lapsed = await callOk(slow, "claim_issue", { identifier: issue.identifier });
    await sleep(LEASE_SECONDS * 1000 + 300);
    const taken = await callOk(fast, "claim_issue", { identifier: issue.identifier });
    expect(taken.fence).toBe(lapsed.fence + 1);
    const finish = { identifier: issue.identifier, status: "done", claimToken: taken.claimToken };
    expect((await callOk(fast, "save_issue", finish)).alreadyFinished).toBeUndefined();

    const late = await callError(slow, "save_issue", { identifier: issue.identifier, status: "done", claimToken: lapsed.claimToken });
    expect(late.code).toBe("STALE_CLAIM");
    expect(late.details?.alreadyFinished).toBeUndefined();
    expect(late.message).toMatch(/finished it under a later claim \(fence 2\)/);
    expect(late.hint).toContain("next_issue");
    // The same session without a token is not the finisher either.
    expect((await callError(slow, "save_issue", { identifier: issue.identifier, status: "done", claimToken: "rtclm_none" })).details?.alreadyFinished).toBeUndefined();
    // The finisher's retry, by its token and from its session, is told it is done.
    expect(await callOk(fast, "save_issue", finish)).toMatchObject({ alreadyFinished: true, status: "done" });
    expect(await callOk(fast, "save_issue", { identifier: issue.identifier, status: "done" })).toMatchObject({ alreadyFinished: true });
    // Another session's tokenless done is not a bare ok it could take for its own finish.
    const sibling = await callError(slow, "save_issue", { identifier: issue.identifier, status: "done" });
    expect(sibling.code).toBe("STALE_CLAIM");
    expect(sibling.message).toMatch(/is already done: .* finished it under fence 2/);
    expect(sibling.details?.alreadyFinished).toBeUndefined();
  });
});

describe.concurrent("5. a session's own calls renew its claims (leases of 3 s)", () => {
  test("reads keep a session's lease alive past the TTL; check_claim renews nothing; a silence lapses it; an anonymous client's reads renew nothing", async () => {
    const busy = await agent(short);
    const issue = await callOk(busy, "save_issue", task("Kept alive by reads"));
    const claim = await callOk(busy, "claim_issue", { identifier: issue.identifier });
    expect(claim.renewal).toBe("calls");
    const until = Date.now() + LEASE_SECONDS * 1000 * 2;
    while (Date.now() < until) {
      await callOk(busy, "get_issue", { identifier: issue.identifier });
      await sleep(400);
    }
    const check = await callOk(busy, "check_claim", { identifier: issue.identifier });
    expect(check).toMatchObject({ status: "held", youHold: true, renewedByYourCalls: true });
    expect(Date.now() - new Date(check.lastRenewedAt).getTime()).toBeLessThan(LEASE_SECONDS * 1000);
    expect(new Date(check.expiresAt).getTime()).toBeGreaterThan(new Date(claim.expiresAt).getTime());

    // Only check_claim for longer than the lease: it lapses.
    const lapseAt = new Date(check.expiresAt).getTime() + 300;
    while (Date.now() < lapseAt) {
      await callOk(busy, "check_claim", { identifier: issue.identifier });
      await sleep(400);
    }
    expect(await callOk(busy, "check_claim", { identifier: issue.identifier })).toMatchObject({ status: "expired", youHold: false, held: false });
    expect((await callError(busy, "heartbeat", { identifier: issue.identifier, claimToken: claim.claimToken })).code).toBe("STALE_CLAIM");

    // An anonymous client's reads do not renew what it claimed.
    const anon = (await rawCall(short, "claim_issue", { identifier: issue.identifier })).body.result!.structuredContent;
    const anonUntil = new Date(anon.expiresAt).getTime() + 300;
    while (Date.now() < anonUntil) {
      await rawCall(short, "get_issue", { identifier: issue.identifier });
      await sleep(400);
    }
    expect((await rawCall(short, "heartbeat", { identifier: issue.identifier, claimToken: anon.claimToken })).body.result!.structuredContent.error.code).toBe("STALE_CLAIM");
  });
});
