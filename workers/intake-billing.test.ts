import { eq, sql } from "drizzle-orm";
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { query } from "../db/client.ts";
import { billingCharges } from "../db/schema/index.ts";
import { retascJobs } from "./catalog.ts";
import { startInlineRunner } from "./inline.ts";
import type { JobRunner } from "./runner.ts";
import { waitFor } from "../server/testing/wait.ts";
import { systemPrincipal, type Services } from "../server/context.ts";
import { withPrincipal } from "../server/with-principal.ts";
import { saveIssue } from "../server/issues/index.ts";
import { createLogger } from "../server/log.ts";
import { servicesFor, testConfig } from "../server/testing/db.ts";
import { useTestServices } from "../server/testing/database.ts";
import { githubDelivery } from "../test/fakes/github.ts";
import { seedOrg, type SeededOrg } from "../server/testing/fixtures.ts";
import { createConnector } from "../server/intake/create.ts";
import { intakeWebhookResponse } from "../server/intake/http.ts";
import { personAccepts, personCtx } from "../server/intake/testing.ts";

/**
 * Intake's writes are the system's and are not metered (docs/decisions/026-intake-pull-requests.md):
 * with billing on and no credit left, members' writes are refused, and a delivery still becomes
 * its issue with no charge; a person accepting it is a member's write, and is metered.
 */
const log = createLogger("silent");
const env = useTestServices();
const examples = JSON.parse(fs.readFileSync(path.resolve("node_modules/@octokit/webhooks-examples/api.github.com/index.json"), "utf8")) as {
  name: string;
  examples: Record<string, any>[];
}[];

let services: Services;
let org: SeededOrg;
let runner: JobRunner;

beforeAll(async () => {
  services = servicesFor(env.tdb.database, {
    config: testConfig({ RETASC_BILLING: "on", BILLING_SIGNUP_CREDIT: "0", STRIPE_SECRET_KEY: "sk_test_placeholder", STRIPE_WEBHOOK_SECRET: "whsec_placeholder", OUTBOX_POLL_MS: "200" }),
  });
  org = await seedOrg(services, { prefix: "BIL" });
  runner = await startInlineRunner({ services, database: env.tdb.database, log, catalog: retascJobs, sweeps: [], exclusive: false });
});
afterAll(async () => {
  await runner?.stop();
});

it("with no credit, a delivery still files its issue and charges nothing; a person's acceptance is refused", async () => {
  // Connected as the operator's `connect` does (the system: no charge, so no credit is needed).
  const connector = await createConnector(withPrincipal(services, systemPrincipal(org.orgId)), { provider: "github", repo: "Codertocat/Hello-World", project: "BIL" });
  await expect(saveIssue(org.agents.bob.ctx, { title: "A member's write", work: true, changeType: "feat", noDependency: "none" })).rejects.toMatchObject({ code: "BILLING_INACTIVE" });
  const charged = async () => (await services.db.select().from(billingCharges).where(eq(billingCharges.orgId, org.orgId))).map((c) => c.tool);
  expect(await charged()).toEqual([]);

  const opened = structuredClone(examples.find((e) => e.name === "issues")!.examples.find((x) => x.action === "opened")!);
  Object.assign(opened.issue, { id: 9_300_001, number: 9, author_association: "NONE" });
  const reply = await intakeWebhookResponse(services, log, "github", connector.connectorId, await githubDelivery(`http://localhost/webhooks/github/${connector.connectorId}`, connector.secret, "issues", opened));
  expect(reply.status).toBe(202);
  const [filed] = await waitFor(
    async () => {
      const rows = await query<{ identifier: string; triage: string | null }>(services.db, sql`select i.identifier, i.triage from intake_links l join issues i on i.id = l.issue_id where l.connector_id = ${connector.connectorId}`);
      return rows.length > 0 ? rows : undefined;
    },
    3_000,
    "the issue",
  );
  expect(filed!.triage).toBe("pending");
  expect(await charged()).toEqual([]);
  await expect(personAccepts(personCtx(services, org.orgId, org.agents.alice.userId), filed!.identifier)).rejects.toMatchObject({ code: "BILLING_INACTIVE" });
});
