import { afterAll, beforeAll, expect, it } from "vitest";
import { systemPrincipal, type Services } from "../context.ts";
import { withPrincipal } from "../with-principal.ts";
import { createConnector } from "./create.ts";
import { servicesFor, testConfig } from "../testing/db.ts";
import { useTestServices } from "../testing/database.ts";
import type { FakeForge } from "../../test/fakes/git-forge.ts";
import { startFakeGithub } from "../../test/fakes/github.ts";
import { startFakeGitlab } from "../../test/fakes/gitlab.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { openRequestFor } from "./open-request.ts";

/**
 * `retasc done`'s pull/merge request (decision 063): asked of the key's project's connector with
 * its token, against local fake GitHub and GitLab APIs; never a refusal.
 */
const env = useTestServices();
let services: Services;
let github: FakeForge;
let gitlab: FakeForge;

beforeAll(async () => {
  github = await startFakeGithub({ token: "ghp_pr_lookup" });
  gitlab = await startFakeGitlab({ token: "glpat-pr-lookup" });
  // The fake GitLab is a self-hosted base URL on loopback: the outbound guard lets it through only when listed.
  services = servicesFor(env.tdb.database, { config: testConfig({ GITHUB_API_URL: github.url, RETASC_OUTBOUND_ALLOW_HOSTS: new URL(gitlab.url).host }) });
});
afterAll(async () => {
  await Promise.all([github?.close(), gitlab?.close()]);
});

it("GitHub: the branch's open pull request, newest first, with the connector's token; none found, or the token refused, says so", async () => {
  const org = await seedOrg(services, { prefix: "OPG" });
  const bob = org.agents.bob.ctx;
  expect(await openRequestFor(bob, { branch: "opg-1/fix" })).toMatchObject({ pr: null, provider: null, note: expect.stringContaining("no GitHub or GitLab connector") });

  await createConnector(withPrincipal(services, systemPrincipal(org.orgId)), { provider: "github", repo: "acme/web", project: "OPG", token: "ghp_pr_lookup" });
  github.pulls.push(
    { repo: "acme/web", branch: "opg-1/fix", number: 3, state: "closed" },
    { repo: "acme/web", branch: "opg-1/fix", number: 7, state: "open" },
    { repo: "acme/web", branch: "opg-1/fix", number: 5, state: "open" },
    { repo: "acme/other", branch: "opg-1/fix", number: 11, state: "open" },
  );
  expect(await openRequestFor(bob, { branch: "opg-1/fix" })).toEqual({
    branch: "opg-1/fix",
    pr: "https://github.com/acme/web/pull/7",
    number: 7,
    repo: "acme/web",
    provider: "github",
    note: "found pull request https://github.com/acme/web/pull/7",
  });
  expect(await openRequestFor(bob, { branch: "opg-2/nothing" })).toMatchObject({ pr: null, provider: "github", note: "no open pull/merge request found for opg-2/nothing in acme/web" });
  expect(github.problems).toEqual([]);

  github.failWith = 401;
  try {
    expect(await openRequestFor(bob, { branch: "opg-1/fix" })).toMatchObject({ pr: null, note: expect.stringContaining("the connector's token was refused (401)") });
  } finally {
    github.failWith = null;
  }
  await expect(openRequestFor(bob, { branch: " " })).rejects.toMatchObject({ name: "ZodError" });
});

it("GitLab (self-hosted): the branch's open merge request, through the outbound guard, which refuses an address it does not allow", async () => {
  const org = await seedOrg(services, { prefix: "OPL" });
  await createConnector(withPrincipal(services, systemPrincipal(org.orgId)), { provider: "gitlab", repo: "group/web", project: "OPL", baseUrl: gitlab.url, token: "glpat-pr-lookup" });
  gitlab.pulls.push({ repo: "group/web", branch: "opl-1/fix", number: 4, state: "open" }, { repo: "group/web", branch: "opl-1/fix", number: 2, state: "closed" });
  expect(await openRequestFor(org.agents.bob.ctx, { branch: "opl-1/fix" })).toMatchObject({ pr: `${gitlab.url}/group/web/-/merge_requests/4`, number: 4, provider: "gitlab" });
  expect(await openRequestFor(org.agents.bob.ctx, { branch: "opl-9/none" })).toMatchObject({ pr: null, provider: "gitlab", note: expect.stringContaining("no open pull/merge request found") });
  expect(gitlab.problems).toEqual([]);

  // The same deployment without the loopback host allowed: the guard refuses the call, and nothing reaches the fake.
  const asked = gitlab.requests.length;
  const guarded = servicesFor(env.tdb.database, { config: testConfig({ GITHUB_API_URL: github.url }), keyring: services.keyring });
  const answer = await openRequestFor(withPrincipal(guarded, org.agents.bob.principal), { branch: "opl-1/fix" });
  expect(answer).toMatchObject({ pr: null, note: expect.stringContaining("could not ask group/web") });
  expect(gitlab.requests.length).toBe(asked);
});
