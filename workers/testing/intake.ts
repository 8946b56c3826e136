import { sql } from "drizzle-orm";
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll } from "vitest";
import { query } from "../../db/client.ts";
import type { ConnectorProvider } from "../../db/schema/index.ts";
import type { Services } from "../../server/context.ts";
import { createLogger } from "../../server/log.ts";
import { intakeWebhookResponse } from "../../server/intake/http.ts";
import { servicesFor, testConfig } from "../../server/testing/db.ts";
import { useTestServices } from "../../server/testing/database.ts";
import type { FakeForge } from "../../test/fakes/git-forge.ts";
import { githubDelivery, startFakeGithub } from "../../test/fakes/github.ts";
import { gitlabDelivery, startFakeGitlab } from "../../test/fakes/gitlab.ts";
import { seedOrg, type SeededOrg } from "../../server/testing/fixtures.ts";
import { waitFor } from "../../server/testing/wait.ts";
import { retascJobs } from "../catalog.ts";
import { startInlineRunner } from "../inline.ts";
import type { JobRunner } from "../runner.ts";

/**
 * The world of the intake tests in one process: real GitHub payloads (@octokit/webhooks-examples)
 * and GitLab's documented examples (server/intake/fixtures/), signed as the providers sign them
 * and posted through the routes' handler; processing and write-back by the in-process job
 * runner; local fake GitHub and GitLab APIs recording what they receive (on the fake GitLab,
 * author 51 is a Developer). Call at a test file's top level: it starts in beforeAll.
 */
const examples = JSON.parse(fs.readFileSync(path.resolve("node_modules/@octokit/webhooks-examples/api.github.com/index.json"), "utf8")) as {
  name: string;
  examples: Record<string, any>[];
}[];

/** A copy of GitHub's example delivery of `event` with `action` (the first if none is given). */
export const githubExample = (event: string, action?: string): Record<string, any> => {
  const found = examples.find((e) => e.name === event)?.examples.find((x) => action === undefined || x.action === action);
  if (!found) throw new Error(`no GitHub example of ${event} ${action ?? ""}`);
  return structuredClone(found);
};
/** Whether GitHub's examples have a delivery of `event` with `action`. */
export const hasGithubExample = (event: string, action: string) => examples.some((e) => e.name === event && e.examples.some((x) => x.action === action));

/** A copy of one of GitLab's documented payloads in server/intake/fixtures/. */
export const gitlabFixture = (name: string) => JSON.parse(fs.readFileSync(path.resolve(import.meta.dirname, "../../server/intake/fixtures", name), "utf8"));

/**
 * An outsider's pull request: the examples are the owner's own, so the id, number and standing are
 * set. The examples have no `edited` delivery: it is the opened one with GitHub's action name.
 */
export const outsidersPullRequest = (action: string, id: number, number: number, extra: Record<string, unknown> = {}) => {
  const payload = hasGithubExample("pull_request", action) ? githubExample("pull_request", action) : { ...githubExample("pull_request", "opened"), action };
  Object.assign(payload.pull_request, { id, number, author_association: "CONTRIBUTOR", ...extra });
  return payload;
};
/** GitLab's documented merge request event, `attributes` set on it. */
export const gitlabMergeRequest = (attributes: Record<string, unknown>) => {
  const payload = gitlabFixture("gitlab-merge-request-open.json");
  Object.assign(payload.object_attributes, attributes);
  return payload;
};

export const hookUrl = (provider: string, id: string) => `http://localhost/webhooks/${provider}/${id}`;

export function useIntakeWorld(prefix: string) {
  const log = createLogger("silent");
  const env = useTestServices();
  const world = {} as { services: Services; org: SeededOrg; fakeGithub: FakeForge; fakeGitlab: FakeForge; runner: JobRunner };
  beforeAll(async () => {
    world.fakeGithub = await startFakeGithub({ token: "ghp_test_writeback" });
    world.fakeGitlab = await startFakeGitlab({ token: "glpat-test-writeback", members: { 51: 30 } });
    // The fake GitLab is a self-hosted base URL on loopback: the outbound guard lets it through only when listed.
    const config = testConfig({ GITHUB_API_URL: world.fakeGithub.url, RETASC_OUTBOUND_ALLOW_HOSTS: new URL(world.fakeGitlab.url).host, JOB_BACKOFF_MS: "50", OUTBOX_POLL_MS: "200" });
    world.services = servicesFor(env.tdb.database, { config });
    world.org = await seedOrg(world.services, { prefix });
    world.runner = await startInlineRunner({ services: world.services, database: env.tdb.database, log, catalog: retascJobs, sweeps: [], exclusive: false });
  });
  afterAll(async () => {
    await world.runner?.stop();
    await Promise.all([world.fakeGithub?.close(), world.fakeGitlab?.close()]);
  });

  /** Posts a request to the webhook route's handler. */
  const post = (provider: ConnectorProvider, connectorId: string, request: Request) => intakeWebhookResponse(world.services, log, provider, connectorId, request);
  /** A GitHub delivery signed with the connector's secret (or `secret`), posted. */
  const postGithub = async (connector: { connectorId: string; secret: string }, event: string, payload: unknown, options: { id?: string; secret?: string } = {}) =>
    post("github", connector.connectorId, await githubDelivery(hookUrl("github", connector.connectorId), options.secret ?? connector.secret, event, payload, options.id));
  /** A GitLab delivery carrying the connector's secret (or `token`) as X-Gitlab-Token, posted. */
  const postGitlab = (connector: { connectorId: string; secret: string }, event: string, payload: unknown, token = connector.secret) =>
    post("gitlab", connector.connectorId, gitlabDelivery(hookUrl("gitlab", connector.connectorId), token, event, payload));

  /** The Retasc issue (and link kind) a source issue or request is linked to. */
  const linked = async (connectorId: string, sourceId: string) =>
    (
      await query<{ identifier: string; triage: string | null; kind: string }>(
        world.services.db,
        sql`select i.identifier, i.triage, l.kind from intake_links l join issues i on i.id = l.issue_id where l.connector_id = ${connectorId} and l.source_id = ${sourceId}`,
      )
    )[0];
  /** Until every delivery is processed and every outbox job has ended. */
  const settled = () =>
    waitFor(
      async () =>
        Number(
          (
            await query<{ n: number }>(
              world.services.db,
              sql`select (select count(*) from intake_deliveries where processed_at is null) + (select count(*) from outbox where completed_at is null and failed_at is null) as n`,
            )
          )[0]!.n,
        ) === 0,
      3_000,
      "deliveries and jobs to settle",
    );

  return {
    get services() {
      return world.services;
    },
    get org() {
      return world.org;
    },
    get fakeGithub() {
      return world.fakeGithub;
    },
    get fakeGitlab() {
      return world.fakeGitlab;
    },
    log,
    post,
    postGithub,
    postGitlab,
    linked,
    settled,
  };
}
