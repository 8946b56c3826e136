import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, afterEach, beforeAll, expect, test } from "vitest";
import { changeTypes } from "../../constants/change-types.ts";
import { callError, callOk, connectClient, startSeededApp, type SeededApp } from "./testing.ts";

/**
 * The create gates (issue 32, decision 059) from an agent's side: the built app over HTTP, the
 * official SDK client, and each refusal's hint followed to a create that succeeds: changeType
 * (decision 059) and the duplicate check (decision 066).
 */
let seeded: SeededApp;
const clients: Client[] = [];

async function agent(prefix: string, who: "alice" | "bob" | "carol"): Promise<Client> {
  const c = await connectClient(seeded.endpoint, seeded.orgs[prefix]!.people[who].key, { name: `${prefix}-${who}` });
  clients.push(c);
  return c;
}

beforeAll(async () => {
  seeded = await startSeededApp(["KIND", "DUPE"]);
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

type Named = { identifier: string; title: string; shared: string[]; mentioned: boolean };
const similarIn = (error: { details?: Record<string, unknown> }) => (error.details?.similar ?? []) as Named[];

test("a look-alike create is refused DUPLICATE_CHECK_REQUIRED naming the open issues; reviewedSimilar files it, and a look-alike filed meanwhile is named again", async () => {
  const [alice, bob, carol] = await Promise.all([agent("DUPE", "alice"), agent("DUPE", "bob"), agent("DUPE", "carol")]);
  const create = (title: string, extra: Record<string, unknown> = {}) => ({ title, work: true, changeType: "feat", noDependency: "stands alone", ...extra });
  const invoice = await callOk(alice, "save_issue", create("Render the invoice as a PDF", { body: "Customers download each invoice as a PDF." }));
  // Unrelated work never sees the gate.
  await callOk(alice, "save_issue", create("Keyboard shortcuts for the search box"));

  const refused = await callError(bob, "save_issue", create("Export invoices to PDF"));
  expect(refused.code).toBe("DUPLICATE_CHECK_REQUIRED");
  expect(similarIn(refused)).toEqual([{ identifier: invoice.identifier, title: "Render the invoice as a PDF", shared: ["invoice", "pdf"], mentioned: false }]);
  expect(refused.message).toContain(`${invoice.identifier} "Render the invoice as a PDF"`);
  expect(refused.hint).toContain(`reviewedSimilar: ["${invoice.identifier}"]`);
  expect((await callOk(bob, "list_issues", {})).issues).toHaveLength(2);

  // Meanwhile carol reads the same refusal, follows its hint, and files hers.
  expect(similarIn(await callError(carol, "save_issue", create("PDF export of an invoice batch"))).map((s) => s.identifier)).toEqual([invoice.identifier]);
  const batch = await callOk(carol, "save_issue", create("PDF export of an invoice batch", { reviewedSimilar: [invoice.identifier] }));

  // Bob's retry with what he read is computed afresh: carol's look-alike is named now.
  const again = await callError(bob, "save_issue", create("Export invoices to PDF", { reviewedSimilar: [invoice.identifier] }));
  expect(again.code).toBe("DUPLICATE_CHECK_REQUIRED");
  expect(similarIn(again).map((s) => s.identifier)).toEqual([batch.identifier]);
  const filed = await callOk(bob, "save_issue", create("Export invoices to PDF", { reviewedSimilar: [invoice.identifier, batch.identifier] }));
  expect(filed.title).toBe("Export invoices to PDF");

  // Waiting on the look-alikes is reading them: blockedBy alone passes.
  const named = similarIn(await callError(alice, "save_issue", create("Invoice PDF footer with the VAT number"))).map((s) => s.identifier);
  expect(named.length).toBeGreaterThan(0);
  const { noDependency: _none, ...withoutNoDependency } = create("Invoice PDF footer with the VAT number");
  expect((await callOk(alice, "save_issue", { ...withoutNoDependency, blockedBy: named })).blockedBy.map((b: { identifier: string }) => b.identifier).sort()).toEqual([...named].sort());

  // A mention of an open issue names it too; reviewedSimilar belongs to a create.
  expect(similarIn(await callError(bob, "save_issue", create("Follow-up on the shortcuts", { body: `After ${invoice.identifier}.` })))[0]).toMatchObject({ identifier: invoice.identifier, mentioned: true });
  const update = await callError(bob, "save_issue", { identifier: filed.identifier, priority: 2, reviewedSimilar: [invoice.identifier] });
  expect(update.code).toBe("INVALID_INPUT");
  expect(update.message).toContain("reviewedSimilar");
});
