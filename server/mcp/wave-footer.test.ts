import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createProject } from "../orgs/index.ts";
import { useTestServices } from "../testing/database.ts";
import { seedOrg, type SeededOrg } from "../testing/fixtures.ts";
import { callOk, connectClient, inProcessFetch, inProcessOrigin } from "./testing.ts";

/**
 * What next_issue says beside its claim, and where a write says it landed, from an agent's side
 * over /mcp with the SDK client (in process): the wave (other ready work in the caller's lanes, in
 * dispatch order, not reserved), the session's other live claims, and the footer line naming the
 * org and project that ends the text of a claim, a filed issue, a comment.
 */
const env = useTestServices();
const clients: Client[] = [];
let org: SeededOrg;

const connect = async (key: string) => {
  const client = await connectClient(`${inProcessOrigin}/mcp`, key, { fetch: inProcessFetch(env.services) });
  clients.push(client);
  return client;
};
const task = (title: string, extra: Record<string, unknown> = {}) => ({ title, work: true, changeType: "feat", noDependency: "wave test", ...extra });
/** The whole result, its text blocks as an agent reads them. */
const call = async (client: Client, name: string, args: Record<string, unknown> = {}) => (await client.callTool({ name, arguments: args })) as CallToolResult;
const texts = (result: CallToolResult) => result.content.map((block) => (block.type === "text" ? block.text : ""));

beforeAll(async () => {
  org = await seedOrg(env.services, { name: "Acme", prefix: "WAVE" });
});
afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
});

describe("next_issue's wave and activeClaims", () => {
  test("a claim lists up to five other ready issues of the caller's lanes in dispatch order, titles read; the wave is not reserved", async () => {
    const alice = await connect(org.agents.alice.key);
    const bob = await connect(org.agents.bob.key);
    // Priorities 1 (urgent) to 4 (low) and none: dispatch order is urgent first, none last, then age.
    const filed: Record<string, any>[] = [];
    for (const [title, priority] of [["Trivial", 4], ["Urgent", 1], ["Someday", 0], ["Important", 2], ["Middling", 3], ["Moderate", 3], ["Minor", 4]] as const) {
      filed.push(await callOk(alice, "save_issue", task(title, { priority })));
    }
    // Bob's lane: never in Alice's wave.
    await callOk(bob, "save_issue", task("Bob's own", { priority: 1, assignee: "me" }));
    const byTitle = (title: string) => filed.find((issue) => issue.title === title)!;

    const claim = await callOk(alice, "next_issue");
    expect(claim.identifier).toBe(byTitle("Urgent").identifier);
    expect(claim.wave.map((issue: { title: string }) => issue.title)).toEqual(["Important", "Middling", "Moderate", "Trivial", "Minor"]);
    expect(claim.wave[0]).toEqual({ identifier: byTitle("Important").identifier, title: "Important", priority: 2, effectiveLevel: 3 });
    expect(claim.activeClaims).toEqual([]);

    // Not reserved: Bob's next claim takes the head of Alice's wave (his own lane first: his urgent issue).
    const bobFirst = await callOk(bob, "next_issue");
    expect(bobFirst.issue.title).toBe("Bob's own");
    const bobSecond = await callOk(bob, "next_issue");
    expect(bobSecond.identifier).toBe(claim.wave[0].identifier);

    // Alice's next claim names her other live claim, and its wave no longer holds what was claimed.
    const second = await callOk(alice, "next_issue");
    expect(second.identifier).toBe(byTitle("Middling").identifier);
    expect(second.activeClaims).toEqual([claim.identifier]);
    expect(second.wave.map((issue: { title: string }) => issue.title)).toEqual(["Moderate", "Trivial", "Minor", "Someday"]);
  });

  test("nothing claimable: activeClaims names what the session holds and the message says to resume it; another session is told of none", async () => {
    const fresh = await seedOrg(env.services, { name: "Initech", prefix: "IDLE" });
    const agent = await connect(fresh.agents.alice.key);
    const sibling = await connect(fresh.agents.alice.key);
    const only = await callOk(agent, "save_issue", task("The only one"));
    const claim = await callOk(agent, "next_issue");
    expect(claim).toMatchObject({ identifier: only.identifier, wave: [], activeClaims: [] });
    const empty = await callOk(agent, "next_issue");
    expect(empty).toMatchObject({ claimed: false, activeClaims: [only.identifier] });
    expect(empty.message).toContain(`You already hold ${only.identifier}: resume it.`);
    // A sibling session of the same key holds nothing (decision 036).
    expect(await callOk(sibling, "next_issue")).toMatchObject({ claimed: false, activeClaims: [] });
    // Following the message: resume and finish it, and the list empties.
    await callOk(agent, "save_issue", { identifier: only.identifier, status: "done", claimToken: claim.claimToken });
    expect((await callOk(agent, "next_issue")).activeClaims).toEqual([]);
  });
});

describe("the footer of a write a person could be wrong about", () => {
  test("a claim, a filed issue and a comment end their text with the org and project; the structured content has no footer; reads and heartbeats none", async () => {
    const carol = await connect(org.agents.carol.key);
    const filed = await call(carol, "save_issue", task("Footer work"));
    expect(texts(filed)).toEqual([JSON.stringify(filed.structuredContent), "— in Acme / Main"]);
    expect(JSON.stringify(filed.structuredContent)).not.toContain("— in");
    const identifier = (filed.structuredContent as { identifier: string }).identifier;

    const claimed = await call(carol, "claim_issue", { identifier });
    expect(texts(claimed).at(-1)).toBe("— in Acme / Main");
    const comment = await call(carol, "save_comment", { issue: identifier, body: "found it" });
    expect(texts(comment).at(-1)).toBe("— in Acme / Main");

    for (const quiet of [await call(carol, "get_issue", { identifier }), await call(carol, "heartbeat", { identifier })]) {
      expect(texts(quiet)).toHaveLength(1);
    }
    // Nothing claimable: nothing landed, so no footer.
    const idle = await seedOrg(env.services, { name: "Idle", prefix: "NONE" });
    expect(texts(await call(await connect(idle.agents.alice.key), "next_issue"))).toHaveLength(1);
  });

  test("a write landing outside the key's project names that project by its prefix; a refusal has no footer", async () => {
    const other = await createProject(env.services.db, { orgId: org.orgId, name: "Ops", prefix: "OPS" });
    const alice = await connect(org.agents.alice.key);
    const elsewhere = await call(alice, "save_issue", task("Filed in Ops", { project: other.prefix }));
    expect(texts(elsewhere).at(-1)).toBe("— in Acme / OPS");
    const refused = await call(alice, "save_issue", { title: "no work flag", noDependency: "x", changeType: "feat" });
    expect(refused.isError).toBe(true);
    expect(texts(refused)).toHaveLength(1);
  });
});
