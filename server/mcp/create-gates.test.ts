import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, afterEach, beforeAll, expect, test } from "vitest";
import { changeTypes } from "../../constants/change-types.ts";
import { callError, callOk, connectClient, startSeededApp, type SeededApp } from "./testing.ts";

/**
 * The create gates (issue 32, decision 059) from an agent's side: the built app over HTTP, the
 * official SDK client, and each refusal's hint followed to a create that succeeds.
 */
let seeded: SeededApp;
const clients: Client[] = [];

async function agent(prefix: string, who: "alice" | "bob" | "carol"): Promise<Client> {
  const c = await connectClient(seeded.endpoint, seeded.orgs[prefix]!.people[who].key, { name: `${prefix}-${who}` });
  clients.push(c);
  return c;
}

beforeAll(async () => {
  seeded = await startSeededApp(["KIND"]);
});
afterEach(({ task }) => {
  if (task.result?.state === "fail") process.stderr.write(`app output:\n${seeded?.app.output().slice(-8000)}\n`);
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => {})));
  await seeded?.close();
});

test("a create without changeType is refused CHANGE_TYPE_REQUIRED listing the types; with one it is filed, and an update corrects it", async () => {
  const alice = await agent("KIND", "alice");
  const args = { title: "Render the invoice as a PDF", work: true, noDependency: "stands alone" };
  const refused = await callError(alice, "save_issue", args);
  expect(refused.code).toBe("CHANGE_TYPE_REQUIRED");
  for (const type of changeTypes) expect(refused.hint).toContain(type);
  expect(refused.details).toEqual({ changeTypes: [...changeTypes] });
  expect((await callOk(alice, "list_issues", {})).issues).toEqual([]);

  const created = await callOk(alice, "save_issue", { ...args, changeType: "feat" });
  expect(created.changeType).toBe("feat");
  // Correctable later; an update never needs it.
  expect((await callOk(alice, "save_issue", { identifier: created.identifier, changeType: "fix" })).changeType).toBe("fix");
  expect((await callOk(alice, "save_issue", { identifier: created.identifier, priority: 2 })).changeType).toBe("fix");
  expect((await callOk(alice, "get_issue", { identifier: created.identifier })).changeType).toBe("fix");

  const wrong = await callError(alice, "save_issue", { ...args, changeType: "feature" });
  expect(wrong.code).toBe("INVALID_INPUT");
  expect(wrong.message).toContain("changeType");
});
