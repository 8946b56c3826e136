import pino from "pino";
import { expect, test } from "vitest";
import { withPrincipal } from "../server/with-principal.ts";
import { DomainError } from "../server/errors.ts";
import { saveIssue } from "../server/issues/index.ts";
import { humanPrincipal } from "../server/orgs/access.ts";
import { useTestServices } from "../server/testing/database.ts";
import { seedOrg } from "../server/testing/fixtures.ts";
import { billingOnConfig, setBalance } from "../server/usage/testing.ts";
import { toErrorBody } from "./errors.server.ts";

const env = useTestServices({ config: billingOnConfig() });

test("the Dash and CLI doors refuse a write the org cannot pay for with 402 and tellHuman in the error body", async () => {
  const org = await seedOrg(env.services, { name: "Dry Org" });
  await setBalance(env.services.db, org.orgId, 0);
  const person = withPrincipal(env.services, humanPrincipal(org.orgId, org.agents.alice.userId, "dash"));
  const error = await saveIssue(person, { title: "From the Dash", work: true, changeType: "feat", noDependency: "independent" }).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(DomainError);
  const { status, body } = toErrorBody(error, pino({ level: "silent" }));
  expect(status).toBe(402);
  expect(body).toMatchObject({ code: "BILLING_INACTIVE" });
  expect(body.tellHuman).toContain("https://retasc.example.com/dash/settings/billing");
  expect(body.tellHuman).toContain("Alice");
});
