import { describe, expect, it } from "vitest";
import { useTestServices } from "../testing/database.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { REPLY_BUDGET_BYTES } from "../paging.ts";
import { listComments, saveComment } from "./comments.ts";
import { saveIssue } from "./index.ts";
import { listIssues } from "./read.ts";

/** Lists are paged (server/paging.ts): a cursor to go on, and no page over the reply budget. */
const env = useTestServices();

describe("list_comments", () => {
  it("pages oldest first by count and by bytes, every comment once; a forged cursor is INVALID_INPUT", async () => {
    const org = await seedOrg(env.services, { prefix: "PGC" });
    const ctx = org.agents.alice.ctx;
    const { identifier } = (await saveIssue(ctx, { title: "thread", work: true, changeType: "feat", noDependency: "test" })) as { identifier: string };
    for (let i = 0; i < 12; i++) await saveComment(ctx, { issue: identifier, body: `${String(i).padStart(2, "0")} ${i % 4 === 0 ? "y".repeat(45_000) : "short"}` });
    const seen: string[] = [];
    const sizes: number[] = [];
    let cursor: string | undefined;
    do {
      const page = await listComments(ctx, { issue: identifier, cursor, limit: 5 });
      expect(page.comments.length).toBeLessThanOrEqual(5);
      sizes.push(JSON.stringify(page).length);
      seen.push(...page.comments.map((c) => c.body.slice(0, 2)));
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).toEqual(Array.from({ length: 12 }, (_, i) => String(i).padStart(2, "0")));
    expect(Math.max(...sizes)).toBeLessThan(REPLY_BUDGET_BYTES);
    expect((await listComments(ctx, { issue: identifier })).comments).toHaveLength(12);
    await expect(listComments(ctx, { issue: identifier, cursor: "bm90IGEgY3Vyc29y" })).rejects.toMatchObject({ code: "INVALID_INPUT" });
  });
});

describe("list_issues", () => {
  it("pages in dispatch order with a cursor, each issue once", async () => {
    const org = await seedOrg(env.services, { prefix: "PGI" });
    const ctx = org.agents.alice.ctx;
    for (let i = 0; i < 7; i++) await saveIssue(ctx, { title: `issue ${i}`, work: true, changeType: "feat", noDependency: "test", priority: (i % 4) + 1 });
    const all = (await listIssues(ctx, { limit: 200 })).issues.map((i) => i.identifier);
    const paged: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await listIssues(ctx, { limit: 3, cursor });
      paged.push(...page.issues.map((i) => i.identifier));
      cursor = page.nextCursor;
    } while (cursor);
    expect(paged).toEqual(all);
    expect(all.length).toBeGreaterThanOrEqual(7);
  });
});
