import { spawnSync } from "node:child_process";
import os from "node:os";
import fc from "fast-check";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { query } from "../../db/client.ts";
import { saveIssue } from "../issues/index.ts";
import { callError, callOk, connectClient, inProcessFetch, inProcessOrigin } from "../mcp/testing.ts";
import { useTestServices } from "../testing/database.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { isBranchName } from "./branch-name.ts";
import { claimIssue } from "./index.ts";

/** What git itself says of each name, in one shell run outside any repository. */
function gitAccepts(names: string[]): boolean[] {
  const script = 'for n; do if git check-ref-format --branch "$n" >/dev/null 2>&1; then echo 1; else echo 0; fi; done';
  const run = spawnSync("sh", ["-c", script, "sh", ...names], {
    cwd: os.tmpdir(),
    env: { ...process.env, GIT_CEILING_DIRECTORIES: os.tmpdir() },
    encoding: "utf8",
  });
  const verdicts = run.stdout.trim().split("\n").map((line) => line === "1");
  expect(verdicts).toHaveLength(names.length);
  return verdicts;
}

const names = [
  "main", "rtsc-42/fix-the-login-redirect", "feat/x", "a.b", "x.lock.y", "a/-b", "@", "@@", "a@b", "HEAD/x", "x/HEAD", "ünïcode",
  "refs/heads/x", "feat/$(rm -rf ~)", "a;b", "a{b}", "a|b", "a`b`", "a'b", 'a"b', "a<b>",
  "", "HEAD", "-foo", "-", "foo.", "foo/", "/foo", "foo//bar", "foo..bar", "...", ".foo", "foo/.bar", "foo/.", "foo.lock",
  "foo/bar.lock/baz", "a@{b", "@{-1}", "a b", "a\tb", "a\x7fb", "a\x01b", "a~b", "a^b", "a:b", "a?b", "a*b", "a[b", "a\\b",
  "feat/<img src=x onerror=alert(1)>",
];

describe("branch names", () => {
  it("are accepted exactly when git check-ref-format --branch accepts them", () => {
    expect(names.map((name) => [name, isBranchName(name)])).toEqual(zip(names, gitAccepts(names)));
  });

  it("agree with git on random names over the characters its rules name", () => {
    const part = fc.constantFrom(..."ab-./@{}~^:?*[\\ \t\x7f".split(""), "lock", "HEAD");
    const random = fc.sample(fc.array(part, { maxLength: 8 }).map((parts) => parts.join("")), { numRuns: 300, seed: 42 });
    expect(random.map((name) => [name, isBranchName(name)])).toEqual(zip(random, gitAccepts(random)));
  });
});

const zip = (names: string[], verdicts: boolean[]) => names.map((name, k) => [name, verdicts[k]]);

const env = useTestServices();

describe("a checkpoint's branch", () => {
  it("is refused with INVALID_INPUT unless git would accept it, and nothing is stored", async () => {
    const org = await seedOrg(env.services);
    const { alice } = org.agents;
    const issue = await saveIssue(alice.ctx, { title: "Branchy", work: true, changeType: "feat", noDependency: "none" });
    const { claimToken } = await claimIssue(alice.ctx, { identifier: issue.identifier });
    const client = await connectClient(`${inProcessOrigin}/mcp`, alice.key, { fetch: inProcessFetch(env.services) });
    try {
      for (const branch of ["feat/<img src=x onerror=alert(1)>", "x; rm -rf ~", "--upload-pack=evil", "a..b", "a\nb"]) {
        const error = await callError(client, "checkpoint", { identifier: issue.identifier, claimToken, branch });
        expect({ branch, code: error.code, message: error.message }).toEqual({
          branch,
          code: "INVALID_INPUT",
          message: expect.stringContaining("branch: not a branch name git accepts"),
        });
      }
      const [stored] = await query<{ n: number }>(
        env.services.db,
        sql`select count(*)::int as n from checkpoints c join issues i on i.id = c.issue_id where i.identifier = ${issue.identifier} and i.org_id = ${org.orgId}`,
      );
      expect(stored!.n).toBe(0);
      const saved = await callOk(client, "checkpoint", { identifier: issue.identifier, claimToken, branch: "rtsc-1/feat-$(x)" });
      expect(saved.checkpoint).toMatchObject({ branch: "rtsc-1/feat-$(x)" });
    } finally {
      await client.close();
    }
  });
});
