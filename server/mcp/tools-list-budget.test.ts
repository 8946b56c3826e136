import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import { expect, test } from "vitest";
import { z } from "zod";
import { errorResult, invalidArguments } from "./errors.ts";
import { invokeTool } from "./invoke.ts";
import { inputJsonSchema, listedTools, publishedBy, tools, toolsByName } from "./registry.ts";
import { measureToolsList } from "../testing/tokens.ts";

/**
 * What tools/list costs an agent, in tokens, on every session. Before the compact rendering
 * (registry.ts, at 036b27f) it was 99,871 characters: 25,524 tokens by @anthropic-ai/tokenizer
 * and 25,382 by o200k_base, 5,618 / 5,506 of them in what a model reads. With 34 tools it came to
 * 9,576 / 9,540; with the two file tools, the claim's comments and attachments and the claim,
 * attachment and checkpoint shapes published once, 36 tools cost 9,600 / 9,572 (4,696 / 4,648 read); with
 * billing on, each metered tool's price ("Costs 7,000 micro-credits.") makes it 9,793 / 9,759.
 * Leaving out the hints equal to the spec's defaults (decision 029) took it to 9,602 / 9,570.
 * With claim_ghost, 37 tools cost 9,914 / 9,891 (4,988 / 4,941 read); shorter descriptions, the empty
 * `properties` of argument-less tools left out and an input's repeated enum published once took
 * that to 9,541 / 9,513 (4,614 / 4,563 read), to make room for the team tools (issue 32). With the
 * four invite tools, no titles (decision 052), nullable unions as one `type` list, and the issue
 * summary and rate card published by one tool each, 41 tools cost 9,895 / 9,873 (4,758 / 4,704 read).
 * With setup_status, shorter descriptions again, nullable objects and enums shared within a tool's
 * output, and no `propertyNames: {type: string}`: 42 tools, 9,959 / 9,914 (4,772 / 4,713 read).
 * Descriptions and relaxed prompts since took it to 9,986 / 9,931 (4,765 / 4,697 read). Folding an output
 * object's fields that share a schema into one `patternProperties` entry (decision 067) and shorter
 * descriptions: 9,147 / 9,111 (4,675 / 4,609 read), room for the duplicate gate and analytics (issue 32).
 * With save_issue's reviewedSimilar (decision 066) and usage by changeType: 9,231 / 9,193 (4,719 / 4,651 read).
 * With save_issue's handoff and its description's review clauses (decision 073): 9,693 / 9,656 (4,962 / 4,893 read);
 * 9,707 / 9,670 (4,970 / 4,901 read) by the time decision 080 began. With list_claimable_ghosts, dismiss_ghost_prompt and
 * next_issue's wave and activeClaims it came to 9,968 / 9,925 (5,061 / 4,988 read); thirteen descriptions said again
 * shorter: 46 tools, 9,833 / 9,796 (4,926 / 4,859 read). String caps of 200 characters and up left out of
 * the published input schemas (a guard the zod schema still holds, decision 085): 9,708 / 9,660 (4,801 / 4,723 read).
 * The four import tools as first written took it to 10,688 / 10,627 (5,272 / 5,181 read). Folded (decision 091):
 * prices in dollars, no `additionalProperties: false` on inputs, opaque-id and list caps and the date range's end
 * kept server side, an object union's `type` stated once, no output schema that says only `{type: "object"}`,
 * shorter descriptions and import tools written lean: 50 tools, 9,972 / 9,939 (4,615 / 4,569 read); with analytics'
 * time in review landed beside them, 9,983 / 9,950 (4,623 / 4,577 read). run_import taking a CSV (`csv`, `mapping.columns`,
 * `preview`; a `token` no longer required by the schema), paid for by shorter import descriptions and list_import_sources'
 * `needs` as one string: 9,974 / 9,942 (4,620 / 4,575 read).
 * `npx tsx scripts/mcp-tokens.ts` prints today's figures, tool by tool.
 */
const budget = { total: 10_000, read: 5_000 };

test("tools/list stays within its token budget by both tokenizers, with billing on (each metered tool's price) and off", () => {
  for (const priced of [true, false]) {
    const measured = measureToolsList(listedTools(priced));
    const as = priced ? "billing on" : "billing off";
    expect(measured.total.claude, `whole result, @anthropic-ai/tokenizer, ${as}`).toBeLessThan(budget.total);
    expect(measured.total.o200k, `whole result, o200k_base, ${as}`).toBeLessThan(budget.total);
    expect(measured.read.claude, `names, titles, descriptions and input schemas, @anthropic-ai/tokenizer, ${as}`).toBeLessThan(budget.read);
    expect(measured.read.o200k, `names, titles, descriptions and input schemas, o200k_base, ${as}`).toBeLessThan(budget.read);
  }
  // The price is stated on every metered tool (and on no read) when billing is on, and nowhere when off.
  const priced = listedTools(true).filter((tool) => / \(\$[\d.]+[^)]*\)$/.test(tool.description ?? "")).map((tool) => tool.name);
  expect(priced).toContain("next_issue");
  expect(priced).toContain("heartbeat");
  expect(priced).not.toContain("get_issue");
  expect(listedTools(false).some((tool) => /\$\d/.test(tool.description ?? ""))).toBe(false);
  // In dollars, the same figure as the rate card's micro-credits (1,000,000 to the dollar).
  expect(listedTools(true).find((tool) => tool.name === "save_issue")!.description).toMatch(/ \(\$0\.005 new or body, else \$0\.003\)$/);
});

test("every published schema compiles in the SDK client's validator and admits the error envelope of an isError result", () => {
  const validator = new AjvJsonSchemaValidator();
  const envelope = errorResult(invalidArguments("any", "a problem")).structuredContent;
  for (const tool of listedTools()) {
    validator.getValidator(tool.inputSchema);
    // A tool whose result is a shape another tool publishes publishes no output schema (decision 091).
    if (tool.outputSchema) expect(validator.getValidator(tool.outputSchema)(envelope).valid, tool.name).toBe(true);
  }
  expect(listedTools().find((tool) => tool.name === "save_issue")!.outputSchema).toBeUndefined();
});

test("the compact output schemas still check types, in shared definitions too", () => {
  const validator = new AjvJsonSchemaValidator();
  const check = (name: string, value: unknown) =>
    validator.getValidator(listedTools().find((tool) => tool.name === name)!.outputSchema!)(value).valid;
  expect(check("get_issue", { status: "todo", fence: 3, lease: null })).toBe(true);
  expect(check("get_issue", { status: "flying" })).toBe(false);
  expect(check("get_issue", { fence: "3" })).toBe(false);
  expect(check("heartbeat", { expiresAt: 0 })).toBe(false);
  expect(check("next_batch", { claimed: true, claims: [{ claimToken: "t", fence: 1 }] })).toBe(true);
  expect(check("next_batch", { claimed: "yes" })).toBe(false);
  // claimed:true rules out the nothing-claimable form, so these are checked as a claim.
  expect(check("next_issue", { claimed: true, claimToken: "t", comments: [{ body: "looks good" }] })).toBe(true);
  expect(check("next_issue", { claimed: true, claimToken: 5 })).toBe(false);
  expect(check("next_issue", { claimed: true, comments: [{ body: 1 }] })).toBe(false);
  expect(check("list_attachments", { attachments: [{ kind: "blob" }] })).toBe(false);
  // An object union states `type: "object"` once, beside its anyOf: a member is still checked as an object.
  expect(listedTools().find((tool) => tool.name === "next_issue")!.outputSchema).toMatchObject({ type: "object", anyOf: [expect.not.objectContaining({ type: "object" }), expect.anything()] });
  expect(check("next_issue", "claimed")).toBe(false);
  expect(check("list_members", { members: ["alice"] })).toBe(false);
  expect(check("list_members", { members: [{ kind: "human", status: "active" }] })).toBe(true);
  expect(check("latest_import", { phase: "done", counts: { created: 3 } })).toBe(true);
  expect(check("latest_import", { phase: "halfway" })).toBe(false);
  expect(check("run_import", { statuses: [{ from: "In Review", to: "review", issues: 2 }], counts: { issues: 2 } })).toBe(true);
  expect(check("run_import", { statuses: [{ from: "In Review", to: "reviewing", issues: 2 }] })).toBe(false);
});

/** The field names an output object publishes: its `properties` and the names folded into its `patternProperties` (decision 067). */
const publishedFields = (schema: Record<string, unknown>): string[] => [
  ...Object.keys((schema.properties as object) ?? {}),
  ...Object.keys((schema.patternProperties as object) ?? {}).flatMap((pattern) => /^\^\((.+)\)\$$/.exec(pattern)![1]!.split("|")),
  ...((schema.anyOf as Record<string, unknown>[]) ?? []).flatMap(publishedFields),
];

test("folded output schemas name every field of every result and check each as before: fields sharing a schema, one pattern", () => {
  for (const tool of tools) {
    // A shape another tool publishes (a claim, an issue) is `{type: "object"}` here.
    const publisher = publishedBy.get(tool.output as z.ZodObject);
    if (publisher !== undefined && publisher !== tool.name) continue;
    const shapes = tool.output instanceof z.ZodUnion ? (tool.output.options as z.ZodObject[]) : [tool.output as z.ZodObject];
    const fields = new Set(shapes.flatMap((shape) => Object.keys(shape.shape)));
    expect(new Set(publishedFields(listedTools().find((listed) => listed.name === tool.name)!.outputSchema!)), tool.name).toEqual(fields);
  }
  const getIssue = listedTools().find((tool) => tool.name === "get_issue")!.outputSchema!;
  expect(Object.keys(getIssue.patternProperties as object)).toContain("^(body|changeType|parent|dueAt|effectiveDueAt|noDependency|cancelReason)$");
  const validator = new AjvJsonSchemaValidator();
  const check = (value: unknown) => validator.getValidator(getIssue)(value).valid;
  expect(check({ title: "t", body: null, held: true, labels: ["a"], assignee: { email: "a@b.c" } })).toBe(true);
  expect(check({ title: 5 })).toBe(false);
  expect(check({ cancelReason: 5 })).toBe(false);
  expect(check({ held: "yes" })).toBe(false);
  expect(check({ labels: [1] })).toBe(false);
  expect(check({ author: { email: 1 } })).toBe(false);
  // Still open to fields added later, as `properties` alone was.
  expect(check({ aFieldAddedLater: 1 })).toBe(true);
});

/** A published hint set read as a client must: the spec's defaults where a hint is left out. */
const hintsOf = (tool: { annotations?: Record<string, unknown> }) => {
  const { readOnlyHint = false, destructiveHint = true, idempotentHint = false, openWorldHint = true } = tool.annotations as Record<string, boolean>;
  // On a read the spec gives destructiveHint and idempotentHint no meaning: it destroys nothing, and repeats freely.
  return readOnlyHint ? { readOnlyHint, destructiveHint: false, idempotentHint: true, openWorldHint } : { readOnlyHint, destructiveHint, idempotentHint, openWorldHint };
};

test("annotations: only removing or revoking is destructive; edits and releases are not; published without the spec's defaults, meaning the same", () => {
  for (const tool of tools) {
    expect(hintsOf({ annotations: listedTools().find((listed) => listed.name === tool.name)!.annotations as Record<string, unknown> }), tool.name).toEqual(tool.annotations);
  }
  expect(listedTools().find((tool) => tool.name === "get_issue")!.annotations).toEqual({ readOnlyHint: true, openWorldHint: false });
  const destructive = listedTools().filter((tool) => hintsOf(tool).destructiveHint).map((tool) => tool.name);
  expect(destructive.sort()).toEqual(
    ["obsolete_attachment", "remove_relation", "retire_member", "retract_comment", "revoke_connector", "revoke_invite", "suspend_member"].sort(),
  );
  const hints = new Map(listedTools().map((tool) => [tool.name, hintsOf(tool)]));
  expect(hints.get("save_issue")).toMatchObject({ readOnlyHint: false, destructiveHint: false, idempotentHint: false });
  expect(hints.get("release_issue")).toMatchObject({ readOnlyHint: false, destructiveHint: false, idempotentHint: true });
  for (const [name, hint] of hints) if (hint.destructiveHint) expect(hint.idempotentHint, name).toBe(true);
});

test("what the compact rendering drops stays dropped: integer bounds of ±2^53-1, long regexes, output descriptions, abuse-guard caps, closed inputs", () => {
  const text = JSON.stringify(listedTools());
  expect(text).not.toContain(String(Number.MAX_SAFE_INTEGER));
  expect(text).not.toContain("8640000000000000");
  expect(text).not.toMatch(/"maxLength":(\d{4,}|[1-9]\d\d)\b/);
  expect(text).not.toMatch(/"maxItems":(\d{3,}|[5-9]\d)\b/);
  for (const tool of listedTools()) expect(tool.inputSchema, tool.name).not.toHaveProperty("additionalProperties");
  expect(text).not.toMatch(/"pattern":"[^"]{25,}"/);
  for (const tool of listedTools()) expect(JSON.stringify(tool.outputSchema ?? {}), tool.name).not.toContain('"description"');
  // What a model needs of the shapes stays: enums, short patterns, formats, real bounds.
  expect(text).toContain('"pattern":"^#[0-9a-fA-F]{6}$"');
  expect(text).toContain('"format":"uuid"');
  expect(text).toContain('"maximum":25');
  expect(text).toContain('"maxLength":10');
});

test("what tools/list leaves to the server is still held: an unknown argument, a long id, a long list are refused in words", async () => {
  const scope = { services: {} as never, principal: {} as never, log: { debug() {}, warn() {}, error() {} } as never, requestId: "budget" };
  // invokeTool refuses before the handler runs (and before any query): no services are needed to see it.
  const unknown = await invokeTool(scope, toolsByName.get("get_issue")!, { identifier: "RTSC-1", identifer: "RTSC-1" });
  expect(unknown.isError).toBe(true);
  expect(JSON.stringify(unknown.structuredContent)).toContain("unknown argument identifer (accepted: identifier)");
  const longId = await invokeTool(scope, toolsByName.get("suspend_member")!, { memberId: "m".repeat(101) });
  expect(longId.isError).toBe(true);
  const create = { title: "t", work: true, changeType: "feat", noDependency: "none" };
  const parses = (args: object) => toolsByName.get("save_issue")!.input.safeParse({ ...create, ...args }).success;
  const labels = (n: number) => Array.from({ length: n }, (_, i) => `l${i}`);
  expect([parses({ labels: labels(50) }), parses({ labels: labels(51) })]).toEqual([true, false]);
  expect([parses({ dueAt: 8_640_000_000_000_000 }), parses({ dueAt: 8_640_000_000_000_001 })]).toEqual([true, false]);
});

test("a string cap left out of tools/list is still held: a call past it is refused in words, before any query", async () => {
  const saveIssue = toolsByName.get("save_issue")!;
  expect(JSON.stringify(inputJsonSchema(saveIssue))).not.toContain('"maxLength":500');
  const refused = saveIssue.input.safeParse({ title: "t".repeat(501), work: true, changeType: "feat", noDependency: "none" });
  expect(refused.success).toBe(false);
  expect(saveIssue.input.safeParse({ title: "t".repeat(500), work: true, changeType: "feat", noDependency: "none" }).success).toBe(true);
});
