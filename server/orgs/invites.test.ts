import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { user } from "../../db/schema/index.ts";
import { startApp, type AppProcess } from "../testing/app-process.ts";
import { signUpOverHttp } from "../testing/dash.ts";
import { startFakeSmtp, type FakeSmtp } from "../../test/fakes/smtp.ts";
import { TestClock, testConfig } from "../testing/db.ts";
import type { Ctx } from "../context.ts";
import { seedOrg, type SeededOrg } from "../testing/fixtures.ts";
import { useTestServices } from "../testing/database.ts";
import { humanCtx, membershipOf } from "./access.ts";
import { ensureUser } from "./org-rows.ts";
import { createInvite, listInvites, revokeInvite } from "./invites.ts";
import { emailInvite } from "./invite-mail.ts";
import { redeemInvite } from "./invite-redeem.ts";
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
const unique = (name: string) => `${name}-${Date.now()}-${n++}@example.com`;
/** A person as an email + password sign-up leaves them: the address unverified. */
async function signedUp(email: string): Promise<string> {
  const id = await ensureUser(env.services.db, email, "Signed Up");
  await env.services.db.update(user).set({ emailVerified: false }).where(eq(user.id, id));
  return id;
}

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

  it("pages in SQL, newest first: every invite once across the pages, ties in time by id, a foreign cursor refused", async () => {
    // Three in the same instant (the test clock stands still), four later: the keyset breaks ties by id.
    for (let i = 0; i < 3; i++) await createInvite(as.alice);
    clock.advance(1_000);
    for (let i = 0; i < 4; i++) await createInvite(as.alice, { email: unique("paged") });
    const whole = (await listInvites(as.alice)).invites.map((i) => i.inviteId);
    expect(whole).toHaveLength(7);
    expect((await listInvites(as.alice)).nextCursor).toBeUndefined();
    for (const limit of [1, 2, 3]) {
      const seen: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await listInvites(as.alice, { cursor, limit });
        expect(page.invites.length).toBeLessThanOrEqual(limit);
        seen.push(...page.invites.map((i) => i.inviteId));
        cursor = page.nextCursor;
      } while (cursor);
      expect(seen).toEqual(whole);
    }
    expect((await refusal(listInvites(as.alice, { cursor: "not-one" }))).code).toBe("INVALID_INPUT");
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

describe("invites by email", () => {
  let smtp: FakeSmtp;
  /** The acting person's ctx on a server that mails (SMTP_URL, SMTP_FROM set to the local fake). */
  const mailing = (ctx: Ctx): Ctx => ({ ...ctx, config: testConfig({ SMTP_URL: smtp.url, SMTP_FROM: "Retasc <retasc@example.com>" }) });
  beforeAll(async () => {
    smtp = await startFakeSmtp();
  });
  afterAll(() => smtp?.close());

  it("is redeemed only by the person signed in with that verified address, however it is capitalised", async () => {
    const email = unique("nora");
    const invite = await createInvite(as.alice, { email: `  ${email.toUpperCase()} `, role: "admin" });
    expect(invite).toMatchObject({ email, role: "admin" });
    const stranger = await newcomer();
    const wrong = await refusal(redeemInvite(env.services, { userId: stranger, code: invite.code }));
    expect(wrong).toMatchObject({ code: "FORBIDDEN", details: { reason: "email_mismatch" } });
    expect(wrong.message).toContain(email);
    expect(await membershipOf(env.services.db, org.orgId, stranger)).toBeNull();
    expect((await listInvites(as.alice)).invites[0]).toMatchObject({ inviteId: invite.inviteId, email, role: "admin", state: "pending", emailedAt: null });
    const nora = await ensureUser(env.services.db, email, "Nora");
    expect(await redeemInvite(env.services, { userId: nora, code: invite.code })).toMatchObject({ orgId: org.orgId, role: "admin" });
  });

  it("refuses an unverified account of that address unless this server mailed the link", async () => {
    const email = unique("otto");
    const otto = await signedUp(email);
    const handed = await createInvite(as.alice, { email });
    expect(await refusal(redeemInvite(env.services, { userId: otto, code: handed.code }))).toMatchObject({ code: "FORBIDDEN", details: { reason: "email_unverified" } });
    expect((await listInvites(as.alice)).invites.find((i) => i.inviteId === handed.inviteId)?.state).toBe("pending");

    const mailed = await createInvite(as.alice, { email });
    const link = `https://retasc.example/join/${mailed.code}`;
    expect(await emailInvite(mailing(as.alice), { inviteId: mailed.inviteId, link })).toEqual({ emailed: true, reason: null });
    expect(await redeemInvite(env.services, { userId: otto, code: mailed.code })).toMatchObject({ orgId: org.orgId, role: "member" });
  });

  it("mails the invite's own link once, and says why not when it cannot", async () => {
    const email = unique("pia");
    const invite = await createInvite(as.alice, { email });
    const link = `https://retasc.example/join/${invite.code}`;
    // No SMTP: nothing sent, and the reason for the page to show.
    expect(await emailInvite(as.alice, { inviteId: invite.inviteId, link })).toEqual({ emailed: false, reason: expect.stringContaining("SMTP_URL") });
    // Never a link other than the invite's own under its name.
    const other = await createInvite(as.alice, { email: unique("other") });
    expect(await refusal(emailInvite(mailing(as.alice), { inviteId: invite.inviteId, link: `https://evil.example/join/${other.code}` }))).toMatchObject({ code: "INVALID_INPUT" });
    // Members cannot send it.
    expect(await refusal(emailInvite(mailing(as.bob), { inviteId: invite.inviteId, link }))).toMatchObject({ code: "FORBIDDEN" });

    expect(await emailInvite(mailing(as.alice), { inviteId: invite.inviteId, link })).toEqual({ emailed: true, reason: null });
    expect(await emailInvite(mailing(as.alice), { inviteId: invite.inviteId, link })).toEqual({ emailed: true, reason: null });
    const mails = smtp.mailsTo(email);
    expect(mails).toHaveLength(1);
    expect(mails[0]!.text).toContain(link);
    expect(mails[0]!.subject).toMatch(/invited you to Org /);
    expect((await listInvites(as.alice)).invites.find((i) => i.inviteId === invite.inviteId)?.emailedAt).toEqual(clock.now().toISOString());

    // A refused address is reported, not thrown: the inviter sends the link themselves.
    const bounced = unique("gone");
    smtp.rejected.add(bounced);
    const refused = await createInvite(as.alice, { email: bounced });
    const result = await emailInvite(mailing(as.alice), { inviteId: refused.inviteId, link: `https://retasc.example/join/${refused.code}` });
    expect(result).toMatchObject({ emailed: false, reason: expect.stringContaining("No such user") });
  });

  it("keeps role rank: an admin invites members only, nobody invites an owner, and a bad address is refused", async () => {
    await setMemberRole(as.alice, { memberId: memberIds.bob, role: "admin" });
    expect(await refusal(createInvite(as.bob, { email: unique("x"), role: "admin" }))).toMatchObject({ code: "FORBIDDEN" });
    await expect(createInvite(as.alice, { email: unique("x"), role: "owner" as "admin" })).rejects.toThrow(/member or an admin/);
    await expect(createInvite(as.alice, { email: "not an address" })).rejects.toThrow(/email/);
    expect(await createInvite(as.bob, { email: "", role: "member" })).toMatchObject({ email: null, role: "member" });
  });
});

describe("the Members page over HTTP, with a mail server", () => {
  let app: AppProcess;
  let smtp: FakeSmtp;
  let owner: string;
  const form = (path: string, cookie: string, fields: Record<string, string>) =>
    fetch(`${app.url}${path}`, { method: "POST", redirect: "manual", headers: { cookie, origin: app.url, "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams(fields) });

  beforeAll(async () => {
    smtp = await startFakeSmtp();
    // The embedded mode, as `npm start` runs it, so this holds on either test driver.
    app = await startApp({ SMTP_URL: smtp.url, SMTP_FROM: "Retasc <retasc@example.com>" }, { timeoutMs: 240_000 });
    ({ cookie: owner } = await signUpOverHttp(app.url, unique("olive"), "Olive"));
    const created = await form("/dash/orgs/new", owner, { name: "Mailed", projectName: "Web", prefix: "WEB" });
    expect(created.status).toBe(302);
    expect(created.headers.get("location")).toBe("/dash");
    owner += `; ${created.headers.getSetCookie().find((c) => c.startsWith("retasc_org="))!.split(";")[0]}`;
  }, 420_000);
  afterAll(async () => {
    await app?.stop();
    await smtp?.close();
  });

  it("invites by email with a role, mails the link, lists it pending, and only that person joins", async () => {
    const email = unique("nora");
    const page = await form("/dash/settings/members", owner, { intent: "invite", email, role: "admin", expiresDays: "3" });
    const html = await page.text();
    expect(page.status).toBe(200);
    expect(html).toContain(`The link was emailed to ${email}.`);
    const link = /(http:\/\/127\.0\.0\.1:\d+\/join\/rtscinv_[A-Za-z0-9_-]+)/.exec(html)?.[1];
    expect(link).toBeDefined();
    await expect.poll(() => smtp.mailsTo(email).length, { timeout: 10_000 }).toBe(1);
    expect(smtp.mailsTo(email)[0]!.text).toContain(link);

    const listed = await (await fetch(`${app.url}/dash/settings/members`, { headers: { cookie: owner } })).text();
    expect(listed).toMatch(new RegExp(`data-invite="${email.replace(/[.]/g, "\\.")}"[\\s\\S]*?admin[\\s\\S]*?pending`));
    expect(listed).not.toContain(link!.split("/join/")[1]);

    const path = new URL(link!).pathname;
    const { cookie: stranger } = await signUpOverHttp(app.url, unique("sam"), "Sam");
    const seen = await (await fetch(`${app.url}${path}`, { headers: { cookie: stranger } })).text();
    expect(seen).toContain(`This invite is for <strong class="[overflow-wrap:anywhere]">${email}</strong>`);
    const refused = await form(path, stranger, {});
    expect(refused.status).toBe(200);
    expect(await refused.text()).toContain(`this invite is for ${email}`);

    // Nora signs up with a password (unverified), and the mailed link is her proof.
    const { cookie: nora } = await signUpOverHttp(app.url, email, "Nora");
    const joined = await form(path, nora, {});
    expect(joined.status).toBe(302);
    expect(joined.headers.get("location")).toBe("/dash");
    const members = await (await fetch(`${app.url}/dash/settings/members`, { headers: { cookie: owner } })).text();
    expect(members).toMatch(new RegExp(`data-member="${email.replace(/[.]/g, "\\.")}"[\\s\\S]*?admin`));
  });

  it("revokes a pending invite from the page", async () => {
    const email = unique("rex");
    await form("/dash/settings/members", owner, { intent: "invite", email });
    const before = await (await fetch(`${app.url}/dash/settings/members`, { headers: { cookie: owner } })).text();
    const inviteId = new RegExp(`data-invite="${email.replace(/[.]/g, "\\.")}"[\\s\\S]*?name="inviteId" value="([^"]+)"`).exec(before)?.[1];
    expect(inviteId).toBeDefined();
    const revoked = await form("/dash/settings/members", owner, { intent: "revoke-invite", inviteId: inviteId! });
    expect(await revoked.text()).toContain("Invite revoked.");
  });
});
