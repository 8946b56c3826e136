import { eq, sql } from "drizzle-orm";
import fs from "node:fs";
import path from "node:path";
import { query } from "../db/client.ts";
import { beforeAll, describe, expect, it } from "vitest";
import { intakeDeliveries } from "../db/schema/index.ts";
import { systemPrincipal } from "../server/context.ts";
import { withPrincipal } from "../server/with-principal.ts";
import { callOk } from "../server/mcp/testing.ts";
import { tempDir } from "../server/testing/temp-dirs.ts";
import { importExport } from "../server/transfer/import.ts";
import { exportText } from "../server/transfer/testing.ts";
import { hostile, issueEvent, issueOpened, useTrustWorld, type TrustClients } from "./testing/intake-trust.ts";

/**
 * Issue 37's trust finding 7 and the org's export (docs/decisions/038-outsiders-text-waits-for-a-person.md):
 * a replayed delivery, an older edit and a re-import bring nothing back (workers/testing/intake-trust.ts).
 */
const { world, clients, deliverGithub, linkOf } = useTrustWorld();
let { github1, agent } = {} as TrustClients;
beforeAll(() => ({ github1, agent } = clients));

describe("re-import", () => {
  it("the org's export carries an item awaiting triage as pending with none of its held text, and importing it lets nothing in", async () => {
    const HOSTILE = hostile("t0");
    await deliverGithub("issues", issueOpened(37_050_001, 3705, "NONE", { title: "Re-import me", body: HOSTILE }));
    const { identifier } = await linkOf(37_050_001);
    const exported = await exportText(withPrincipal(world.services, systemPrincipal(world.org.orgId)));
    expect(exported).not.toContain(HOSTILE);
    const file = path.join(tempDir("retasc-trust-"), "export.json");
    fs.writeFileSync(file, exported);
    const imported = await importExport(world.services, { file, "org-name": "Re-imported" }, { ownerUserId: world.org.agents.bob.userId });
    const rows = await query<{ triage: string | null }>(world.services.db, sql`select triage from issues where org_id = ${imported.orgId} and identifier = ${identifier}`);
    expect(rows).toEqual([{ triage: "pending" }]);
  });
});

describe("finding 7: a replayed delivery does nothing", () => {
  it("a copy of a signed edit sent again under a new delivery id is a duplicate: the old text does not come back", async () => {
    const HOSTILE = hostile("t8");
    await deliverGithub("issues", issueOpened(37_700_001, 3771, "MEMBER", { title: "v1", body: "first", updated_at: "2030-01-01T00:00:00Z" }));
    const { identifier } = await linkOf(37_700_001);
    const second = issueEvent("edited", 37_700_001, 3771, "MEMBER", { title: "v2", body: "second", updated_at: "2030-01-01T00:01:00Z" });
    await deliverGithub("issues", second, "edit-2");
    await deliverGithub("issues", issueEvent("edited", 37_700_001, 3771, "MEMBER", { title: "v3", body: "third", updated_at: "2030-01-01T00:02:00Z" }), "edit-3");
    await world.settled();
    expect((await callOk(agent, "get_issue", { identifier })).title).toBe("v3");
    const replay = await deliverGithub("issues", second, "copied-edit-2");
    expect(await replay.json()).toMatchObject({ outcome: "duplicate" });
    await world.settled();
    expect(await callOk(agent, "get_issue", { identifier })).toMatchObject({ title: "v3", body: "third" });
    // An older edit the door has not seen (a late retry) changes nothing either.
    await deliverGithub("issues", issueEvent("edited", 37_700_001, 3771, "MEMBER", { title: "v0", body: "older", updated_at: "2029-12-31T00:00:00Z" }), "late");
    await world.settled();
    expect((await callOk(agent, "get_issue", { identifier })).title).toBe("v3");
  });

  it("a copy of a signed close sent again after the source was reopened is a duplicate: nothing is canceled", async () => {
    const HOSTILE = hostile("t9");
    await deliverGithub("issues", issueOpened(37_800_001, 3781, "MEMBER", { title: "Keep me", body: "work", updated_at: "2030-02-01T00:00:00Z" }));
    const { identifier } = await linkOf(37_800_001);
    const claimed = await callOk<{ claimToken: string }>(agent, "claim_issue", { identifier });
    // Closed at the source while an agent holds it: noted, not canceled; then reopened there.
    const closed = issueEvent("closed", 37_800_001, 3781, "MEMBER", { title: "Keep me", body: "work", state: "closed", updated_at: "2030-02-01T00:01:00Z" });
    await deliverGithub("issues", closed, "close-1");
    await deliverGithub("issues", issueEvent("reopened", 37_800_001, 3781, "MEMBER", { title: "Keep me", body: "work", updated_at: "2030-02-01T00:02:00Z" }), "reopen-1");
    await world.settled();
    await callOk(agent, "release_issue", { identifier, claimToken: claimed.claimToken, note: "test" });
    const replay = await deliverGithub("issues", closed, "copied-close-1");
    expect(await replay.json()).toMatchObject({ outcome: "duplicate" });
    await world.settled();
    expect((await callOk(agent, "get_issue", { identifier })).status).not.toBe("canceled");
    const stored = await world.services.db.select({ id: intakeDeliveries.deliveryId }).from(intakeDeliveries).where(eq(intakeDeliveries.connectorId, github1.connectorId));
    expect(stored.map((d) => d.id)).not.toContain("copied-close-1");
  });
});
