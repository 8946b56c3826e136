import crypto from "node:crypto";
import { describe, expect, it } from "vitest";
import { testDriver } from "../testing/db.ts";
import { callOk } from "../mcp/testing.ts";
import { signUpOverHttp, useDashApp } from "../testing/dash.ts";

/**
 * /dash/events over real HTTP against the built app: a signed-in person receives the change
 * events of their own org as server-sent events, and never another org's.
 */

describe.skipIf(testDriver !== "postgres")("the Dash's event stream (needs TEST_DATABASE_URL)", () => {
  const app = useDashApp();

  it("streams the viewer's org's changes and nothing of other orgs", async () => {
    const mine = await app.person("mine", "MIN");
    const theirs = await app.person("theirs", "THR");
    const abort = new AbortController();
    const response = await fetch(`${app.url}/dash/events`, { headers: { cookie: mine.cookie }, signal: abort.signal });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let received = "";
    const until = async (needle: string) => {
      const deadline = Date.now() + 5_000;
      while (!received.includes(needle)) {
        if (Date.now() > deadline) throw new Error(`no ${needle} in:\n${received}`);
        const { value, done } = await reader.read();
        if (done) throw new Error(`stream ended before ${needle}`);
        received += value;
      }
    };
    await until(": connected");

    await callOk(theirs.agent, "save_issue", { title: "Their plan", work: true, changeType: "feat", noDependency: "alone" });
    await callOk(mine.agent, "save_issue", { title: "My plan", work: true, changeType: "feat", noDependency: "alone" });
    await callOk(mine.agent, "claim_issue", { identifier: "MIN-1" });
    await until('"kind":"claim.taken"');
    expect(received).toContain('event: change\ndata: {"kind":"issue.created","identifier":"MIN-1"}\n\n');
    expect(received).toContain('data: {"kind":"claim.taken","identifier":"MIN-1"}');
    expect(received).not.toContain("THR-");
    // Payloads name what changed, never its content.
    expect(received).not.toContain("My plan");
    abort.abort();
    await Promise.all([mine.agent.close(), theirs.agent.close()]);
  });

  it("answers a React Router data request for the stream with 404 at once, instead of never", async () => {
    const { cookie } = await signUpOverHttp(app.url, `data-${crypto.randomBytes(3).toString("hex")}@example.com`);
    for (const path of ["/dash/events.data", "/dash/events.data?_routes=routes%2Fdash.events"]) {
      const response = await fetch(`${app.url}${path}`, { headers: { cookie }, signal: AbortSignal.timeout(5_000) });
      expect(response.status).toBe(404);
      expect(await response.json()).toMatchObject({ error: { code: "NOT_FOUND" } });
    }
  });

  it("sends a visitor who is not signed in to sign in", async () => {
    const response = await fetch(`${app.url}/dash/events`, { redirect: "manual" });
    expect(response.status).toBe(302);
    expect(response.headers.get("location")).toBe("/auth/sign-in?next=%2Fdash%2Fevents");
  });
});
