import { beforeEach, describe, expect, it } from "vitest";
import { TestClock } from "../testing/db.ts";
import type { Ctx } from "../context.ts";
import { seedOrg, type SeededOrg } from "../testing/fixtures.ts";
import { useTestServices } from "../testing/database.ts";
import { humanCtx, membershipOf } from "./access.ts";
import { ensureUser } from "./index.ts";
import { createInvite, listInvites, redeemInvite, revokeInvite } from "./invites.ts";
import { mintKey } from "./keys.ts";
import { setMemberRole } from "./members.ts";
import { peopleOf, refusal, type Person } from "./testing.ts";

const clock = new TestClock();

const env = useTestServices({ clock });

let org: SeededOrg;
let as: Record<Person, Ctx>;
let memberIds: Record<Person, string>;
let n = 0;
const newcomer = () => ensureUser(env.services.db, `newcomer-${Date.now()}-${n++}@example.com`, "Newcomer");

beforeEach(async () => {
  org = await seedOrg(env.services);
  ({ as, memberIds } = await peopleOf(env.services, org));
});

describe("invites", () => {
  it("adds the person who redeems it as a member with their own key", async () => {
    const invite = await createInvite(as.alice);
    expect(invite.code).toMatch(/^rtscinv_/);
    expect(new Date(invite.expiresAt).getTime() - clock.now().getTime()).toBe(7 * 86_400_000);
    const dana = await newcomer();
    const joined = await redeemInvite(env.services, { userId: dana, code: invite.code });
    expect(joined).toMatchObject({ orgId: org.orgId, role: "member" });
    const { ctx } = await humanCtx(env.services, { orgId: org.orgId, userId: dana, runtime: "cli" });
    const key = await mintKey(ctx, { projectId: org.projectId, runtime: "claude-code" });
    expect(key.userId).toBe(dana);
    const { invites } = await listInvites(as.alice);
    expect(invites[0]).toMatchObject({ inviteId: invite.inviteId, state: "accepted", expiresAt: null });
  });

  it("carries the role the person joins as: an owner invites an admin, an admin only members", async () => {
    const invite = await createInvite(as.alice, { role: "admin" });
    expect(invite.role).toBe("admin");
    expect(await redeemInvite(env.services, { userId: await newcomer(), code: invite.code })).toMatchObject({ role: "admin" });
    expect((await listInvites(as.alice)).invites[0]).toMatchObject({ inviteId: invite.inviteId, role: "admin" });
    await setMemberRole(as.alice, { memberId: memberIds.bob, role: "admin" });
    expect((await refusal(createInvite(as.bob, { role: "admin" }))).code).toBe("FORBIDDEN");
    expect((await createInvite(as.bob, { role: "member" })).role).toBe("member");
  });

  it("accepts an invite link as well as the bare code", async () => {
    const invite = await createInvite(as.alice);
    const joined = await redeemInvite(env.services, { userId: await newcomer(), code: `https://retasc.example/join/${invite.code}` });
    expect(joined.orgId).toBe(org.orgId);
  });

  it("refuses a reused code, saying it was used", async () => {
    const invite = await createInvite(as.alice);
    await redeemInvite(env.services, { userId: await newcomer(), code: invite.code });
    const error = await refusal(redeemInvite(env.services, { userId: await newcomer(), code: invite.code }));
    expect(error.code).toBe("CONFLICT");
    expect(error.message).toContain("already used");
    expect(error.details).toEqual({ reason: "used" });
  });

  it("refuses a revoked code, saying it was revoked", async () => {
    const invite = await createInvite(as.alice);
    expect(await revokeInvite(as.alice, { inviteId: invite.inviteId })).toMatchObject({ state: "revoked", changed: true });
    const error = await refusal(redeemInvite(env.services, { userId: await newcomer(), code: invite.code }));
    expect(error.message).toBe("this invite was revoked");
    expect((await listInvites(as.alice)).invites[0]!.state).toBe("revoked");
  });

  it("refuses an expired code, saying when it expired", async () => {
    const invite = await createInvite(as.alice, { expiresDays: 1 });
    clock.advance(86_400_000 + 1);
    const error = await refusal(redeemInvite(env.services, { userId: await newcomer(), code: invite.code }));
    expect(error.message).toContain("expired on");
    expect(error.details).toEqual({ reason: "expired" });
    expect((await listInvites(as.alice)).invites[0]!.state).toBe("expired");
    expect((await refusal(revokeInvite(as.alice, { inviteId: invite.inviteId }))).code).toBe("CONFLICT");
  });

  it("refuses an unknown code and a malformed one", async () => {
    expect((await refusal(redeemInvite(env.services, { userId: await newcomer(), code: "rtscinv_" + "x".repeat(32) }))).code).toBe("NOT_FOUND");
    await expect(redeemInvite(env.services, { userId: await newcomer(), code: "hello" })).rejects.toThrow(/invite code looks like/);
  });

  it("is redeemed exactly once under concurrent redemptions", async () => {
    const invite = await createInvite(as.alice);
    const people = await Promise.all([1, 2, 3, 4, 5, 6].map(() => newcomer()));
    const results = await Promise.allSettled(people.map((userId) => redeemInvite(env.services, { userId, code: invite.code })));
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    const joined = await Promise.all(people.map((userId) => membershipOf(env.services.db, org.orgId, userId)));
    expect(joined.filter(Boolean)).toHaveLength(1);
  });

  it("tells an existing member they are already in, without spending the code", async () => {
    const invite = await createInvite(as.alice);
    expect((await refusal(redeemInvite(env.services, { userId: org.agents.bob.userId, code: invite.code }))).code).toBe("CONFLICT");
    expect((await listInvites(as.alice)).invites[0]!.state).toBe("pending");
  });

  it("lets owners and admins invite, never members", async () => {
    const error = await refusal(createInvite(as.bob));
    expect(error.code).toBe("FORBIDDEN");
    expect((await refusal(listInvites(as.bob))).code).toBe("FORBIDDEN");
    await setMemberRole(as.alice, { memberId: memberIds.carol, role: "admin" });
    const invite = await createInvite(as.carol, { expiresDays: 30 });
    expect((await refusal(revokeInvite(as.bob, { inviteId: invite.inviteId }))).code).toBe("FORBIDDEN");
    await expect(createInvite(as.alice, { expiresDays: 31 })).rejects.toThrow(/1 to 30 days/);
  });
});
