import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../server/log.ts";
import { callError, callOk, connectClient, inProcessFetch, inProcessOrigin } from "../../server/mcp/testing.ts";
import { createProject } from "../../server/orgs/index.ts";
import { humanCtx } from "../../server/orgs/access.ts";
import { mintKey } from "../../server/orgs/keys.ts";
import { useTestServices } from "../../server/testing/database.ts";
import { seedOrg, type SeededOrg } from "../../server/testing/fixtures.ts";
import { setVerification } from "../../server/verification/settings.ts";
import { action } from "./api.ci.verify.ts";

/**
 * A CI key (decision 045) through POST /api/ci/verify's handler: it attests checks for its
 * project's finishes awaiting verification, and /mcp, another project's issue and a commit the
 * finish did not name are refused it; an agent key is refused here.
 */
const env = useTestServices();
const log = createLogger("silent");
const endpoint = `${inProcessOrigin}/mcp`;
let org: SeededOrg;
let agent: Client;
let other: Client;

beforeAll(async () => {
  org = await seedOrg(env.services, { prefix: "CIK" });
  agent = await connectClient(endpoint, org.agents.alice.key, { fetch: inProcessFetch(env.services) });
  other = await connectClient(endpoint, org.agents.bob.key, { fetch: inProcessFetch(env.services) });
  const { ctx } = await humanCtx(env.services, { orgId: org.orgId, userId: org.agents.alice.userId, runtime: "dash" });
  await setVerification(ctx, { projectId: org.projectId, mode: "ci", checks: ["test", "lint"] });
});
afterAll(async () => {
  await agent?.close();
  await other?.close();
});

const attest = (key: string, body: Record<string, unknown>) =>
  action({
    request: new Request("http://localhost/api/ci/verify", { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify(body) }),
    context: { services: env.services, log },
  } as never);

const commit = "c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1";

describe("a CI key", () => {
  it("attests for its project's finishes, and is refused everything else", async () => {
    const minted = await mintKey(org.agents.alice.ctx, { projectId: org.projectId, runtime: "ci", ci: true });
    expect(minted.key).toMatch(/^rtci_/);
    const blocker = (await callOk(agent, "save_issue", { title: "attested", work: true, changeType: "feat", noDependency: "a test" })).identifier as string;
    const dependent = (await callOk(agent, "save_issue", { title: "after it", work: true, changeType: "feat", blockedBy: [blocker] })).identifier as string;
    const { claimToken } = await callOk(agent, "claim_issue", { identifier: blocker });
    await callOk(agent, "save_issue", { identifier: blocker, claimToken, status: "done", evidence: { commit } });

    expect((await attest(minted.key, { identifier: blocker, commit: "d2d2d2d2", status: "pass", check: "test" })).status).toBe(409);
    const first = await attest(minted.key, { identifier: blocker, commit, status: "pass", check: "test", url: "https://ci.example.com/run/1" });
    expect(await first.json()).toMatchObject({ recorded: true, verification: "pending" });
    expect((await callError(other, "claim_issue", { identifier: dependent })).code).toBe("BLOCKED");
    const second = await attest(minted.key, { identifier: blocker, commit, status: "pass", check: "lint" });
    expect(await second.json()).toMatchObject({ verification: "passed" });
    expect(await callOk(other, "claim_issue", { identifier: dependent })).toMatchObject({ identifier: dependent });

    // An agent key is not a CI key, and a CI key is no agent key.
    expect((await attest(org.agents.alice.key, { identifier: blocker, commit, status: "pass", check: "test" })).status).toBe(401);
    const mcp = await inProcessFetch(env.services)(endpoint, {
      method: "POST",
      headers: { authorization: `Bearer ${minted.key}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "next_issue", arguments: {} } }),
    });
    expect(mcp.status).toBe(403);
    await expect(connectClient(endpoint, minted.key, { fetch: inProcessFetch(env.services) })).rejects.toThrow();

    // Another project's issue is not its to attest.
    await env.services.db.transaction((tx) => createProject(tx, { orgId: org.orgId, name: "Other", prefix: "OTH" }));
    const foreign = await callOk(agent, "save_issue", { title: "other project", work: true, changeType: "feat", noDependency: "a test", project: "OTH" });
    expect((await attest(minted.key, { identifier: foreign.identifier, commit, status: "pass", check: "test" })).status).toBe(404);
  });
});
