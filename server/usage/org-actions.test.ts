import { describe, expect, test } from "vitest";
import { withPrincipal } from "../with-principal.ts";
import { saveLabel } from "../issues/labels.ts";
import { humanPrincipal } from "../orgs/access.ts";
import { createInvite, revokeInvite } from "../orgs/invites.ts";
import { mintKey, revokeKey, rotateKey } from "../orgs/keys.ts";
import { listMembers, setMemberRole } from "../orgs/members.ts";
import { createSetupCode } from "../orgs/setup-codes.ts";
import { TestClock } from "../testing/db.ts";
import { useTestServices } from "../testing/database.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { rateCard } from "./rate-card.ts";
import { billingOnConfig, ledgerOf, setBalance } from "./testing.ts";

/**
 * The org actions only the Dash and the CLI offer (invites, roles, keys, setup codes) pay the
 * plumbing tier in their transaction, like the member actions MCP offers; repeats that change
 * nothing are free, and revoking (a key, an invite) is wind-down: it works at zero credit.
 */
const env = useTestServices({ clock: new TestClock(), config: billingOnConfig() });

async function ownerOfNewOrg() {
  const org = await seedOrg(env.services);
  const owner = withPrincipal(env.services, humanPrincipal(org.orgId, org.agents.alice.userId, "dash"));
  const { members } = await listMembers(owner);
  const bob = members.find((m) => m.kind === "human" && m.userId === org.agents.bob.userId)!;
  const since = (await ledgerOf(env.services.db, org.orgId)).length;
  const charges = async () => (await ledgerOf(env.services.db, org.orgId)).slice(since).map((r) => [r.tool, r.tier, r.microCredits]);
  return { org, owner, bobMemberId: bob.memberId, charges };
}

describe("the Dash's and the CLI's own org actions", () => {
  test("each is charged the plumbing price once, against the person and the door that acted; invites are free", async () => {
    const { org, owner, bobMemberId, charges } = await ownerOfNewOrg();
    const invite = await createInvite(owner);
    await revokeInvite(owner, { inviteId: invite.inviteId });
    const minted = await mintKey(owner, { runtime: "codex", projectId: org.projectId });
    const rotated = await rotateKey(owner, { keyId: minted.keyId });
    await revokeKey(owner, { keyId: rotated.keyId });
    await setMemberRole(owner, { memberId: bobMemberId, role: "admin" });
    await createSetupCode(owner, { projectId: org.projectId });
    await saveLabel(owner, { name: "bug", color: "#ff0000" });

    const plumbing = (tool: string) => [tool, "plumbing", rateCard.plumbing];
    expect(await charges()).toEqual([
      plumbing("mint_key"),
      plumbing("rotate_key"),
      plumbing("revoke_key"),
      plumbing("set_member_role"),
      plumbing("create_setup_code"),
      ["save_label", "bookkeeping", rateCard.bookkeeping],
    ]);
    const rows = (await ledgerOf(env.services.db, org.orgId)).slice(-6);
    expect(new Set(rows.map((r) => `${r.userId} ${r.runtime} ${r.keyId}`))).toEqual(new Set([`${org.agents.alice.userId} dash null`]));
  });

  test("a repeat that changes nothing is free", async () => {
    const { org, owner, bobMemberId, charges } = await ownerOfNewOrg();
    const invite = await createInvite(owner);
    const minted = await mintKey(owner, { runtime: "codex", projectId: org.projectId });
    await saveLabel(owner, { name: "bug", color: "#ff0000" });
    const paid = (await charges()).length;

    await revokeInvite(owner, { inviteId: invite.inviteId });
    await revokeInvite(owner, { inviteId: invite.inviteId });
    await revokeKey(owner, { keyId: minted.keyId });
    await revokeKey(owner, { keyId: minted.keyId });
    await setMemberRole(owner, { memberId: bobMemberId, role: "member" });
    await saveLabel(owner, { name: "bug", color: "#ff0000" });
    await saveLabel(owner, { name: "bug" });
    expect((await charges()).slice(paid).map(([tool]) => tool)).toEqual(["revoke_key"]);
    // A new color is a change, and is paid.
    expect((await saveLabel(owner, { name: "bug", color: "#00ff00" })).color).toBe("#00ff00");
    expect((await charges()).at(-1)).toEqual(["save_label", "bookkeeping", rateCard.bookkeeping]);
  });

  test("out of credit, the ones that grant are refused and write nothing; revoking a key still works, and invites, free, work", async () => {
    const { org, owner, bobMemberId, charges } = await ownerOfNewOrg();
    const invite = await createInvite(owner);
    const minted = await mintKey(owner, { runtime: "codex", projectId: org.projectId });
    await setBalance(env.services.db, org.orgId, 500);
    const paid = (await charges()).length;

    const refusal = (promise: Promise<unknown>) => promise.then(() => "accepted", (error: { code?: string }) => error.code);
    expect(await refusal(createInvite(owner))).toBe("accepted");
    expect(await refusal(mintKey(owner, { runtime: "cursor", projectId: org.projectId }))).toBe("BILLING_INACTIVE");
    expect(await refusal(rotateKey(owner, { keyId: minted.keyId }))).toBe("BILLING_INACTIVE");
    expect(await refusal(setMemberRole(owner, { memberId: bobMemberId, role: "admin" }))).toBe("BILLING_INACTIVE");
    expect(await refusal(createSetupCode(owner, { projectId: org.projectId }))).toBe("BILLING_INACTIVE");
    expect(await refusal(saveLabel(owner, { name: "late" }))).toBe("BILLING_INACTIVE");
    expect((await charges()).length).toBe(paid);
    const { members } = await listMembers(owner);
    expect(members.find((m) => m.memberId === bobMemberId)).toMatchObject({ kind: "human", role: "member" });

    expect((await revokeKey(owner, { keyId: minted.keyId })).changed).toBe(true);
    expect((await revokeInvite(owner, { inviteId: invite.inviteId })).changed).toBe(true);
  });
});
