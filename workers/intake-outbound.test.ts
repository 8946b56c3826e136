import { eq } from "drizzle-orm";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectors } from "../db/schema/index.ts";
import { saveIssue } from "../server/issues/index.ts";
import { listConnectors } from "../server/intake/connectors.ts";
import { createConnector } from "../server/intake/create.ts";
import { freePort } from "../server/testing/app-process.ts";
import { gitlabDelivery } from "../test/fakes/gitlab.ts";
import { waitFor } from "../server/testing/wait.ts";
import { gitlabFixture, hookUrl, useIntakeWorld } from "./testing/intake.ts";

/**
 * Finding 4 of issue 37: a GitLab connector's base URL is an address a person typed, and the
 * server calls it with the connector's token. It must be https to a public address (the tests'
 * fake GitLab is allowed through RETASC_OUTBOUND_ALLOW_HOSTS), and a connector whose stored URL
 * is not (made before the guard) is never called: its card says the same whether or not anything
 * listens at that port.
 */
const world = useIntakeWorld("OUT");
const alice = () => world.org.agents.alice.ctx;

// A local server standing for "a port that answers": it refuses every token, as a GitLab would.
const answered: string[] = [];
let listening: http.Server;
beforeAll(async () => {
  listening = http.createServer((req, res) => {
    answered.push(`${req.method} ${req.url} ${req.headers["private-token"] ?? ""}`);
    res.writeHead(401, { "content-type": "application/json" }).end('{"message":"401 Unauthorized"}');
  });
  await new Promise<void>((resolve) => listening.listen(0, "127.0.0.1", resolve));
});
afterAll(() => listening?.close());

describe("a self-hosted GitLab's base URL", () => {
  it("is refused INVALID_INPUT at creation when it is loopback, private, link-local, metadata or plain http", async () => {
    const port = (listening.address() as AddressInfo).port;
    for (const [baseUrl, reason] of [
      [`http://127.0.0.1:${port}`, "only https URLs can be called"],
      [`https://127.0.0.1:${port}`, "127.0.0.1 is not a public address"],
      ["https://169.254.169.254", "169.254.169.254 is not a public address"],
      ["https://10.0.0.8", "10.0.0.8 is not a public address"],
      ["https://[::ffff:a9fe:a9fe]", "[::ffff:a9fe:a9fe] is not a public address"],
      [`https://localhost:${port}`, "localhost resolves to"],
    ]) {
      const refusal = createConnector(alice(), { provider: "gitlab", repo: "group/app", project: "OUT", baseUrl, token: "glpat-x" });
      await expect(refusal, baseUrl).rejects.toMatchObject({ code: "INVALID_INPUT", message: expect.stringContaining(`baseUrl: ${reason}`) });
    }
    // A member is told they may not connect before anything is resolved.
    await expect(createConnector(world.org.agents.bob.ctx, { provider: "gitlab", repo: "group/app", project: "OUT", baseUrl: "https://169.254.169.254" })).rejects.toMatchObject({ code: "FORBIDDEN" });
    expect(answered).toEqual([]);
    expect((await listConnectors(alice(), {})).connectors).toEqual([]);
  });

  it("stored before the guard, is never called: the write-back card reads the same for a port that answers and one that does not", async () => {
    const cards: string[] = [];
    for (const [n, port] of [[41, (listening.address() as AddressInfo).port], [42, await freePort()]] as const) {
      // Made through the allowed fake, then pointed where a person could have pointed it before.
      const connector = await createConnector(alice(), { provider: "gitlab", repo: `group/app${n}`, project: "OUT", baseUrl: world.fakeGitlab.url, token: "glpat-outbound" });
      const opened = gitlabFixture("gitlab-issue-open.json");
      Object.assign(opened.object_attributes, { id: 4_100 + n, iid: n });
      Object.assign(opened.project, { path_with_namespace: `group/app${n}` });
      await world.post("gitlab", connector.connectorId, gitlabDelivery(hookUrl("gitlab", connector.connectorId), connector.secret, "Issue Hook", opened));
      const { identifier } = await waitFor(() => world.linked(connector.connectorId, String(4_100 + n)), 3_000, "the GitLab issue");
      await world.services.db.update(connectors).set({ baseUrl: `https://127.0.0.1:${port}` }).where(eq(connectors.id, connector.connectorId));
      await saveIssue(alice(), { identifier, status: "canceled", cancelReason: "outbound test" });
      cards.push(
        await waitFor(async () => (await listConnectors(alice(), {})).connectors.find((c) => c.id === connector.connectorId)!.lastError, 3_000, "the card's last error"),
      );
    }
    expect(cards).toEqual(["write-back refused: 127.0.0.1 is not a public address", "write-back refused: 127.0.0.1 is not a public address"]);
    expect(answered).toEqual([]);
  });
});
