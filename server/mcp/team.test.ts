import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { importGhosts, linearImportRuns, user } from "../../db/schema/index.ts";
import { humanCtx } from "../orgs/access.ts";
import { createProject, ensureUser, newId } from "../orgs/index.ts";
import { setMemberScope } from "../orgs/members.ts";
import { emailHash, placeholderUser } from "../transfer/pipeline/ghosts.ts";
import { redeemInvite } from "../orgs/invite-redeem.ts";
import { useTestServices } from "../testing/database.ts";
import { seedOrg, type SeededOrg } from "../testing/fixtures.ts";
import { billingOnConfig, ledgerOf, setBalance } from "../usage/testing.ts";
import { callError, callOk, connectClient, inProcessFetch, inProcessOrigin } from "./testing.ts";

/**
 * The team tools from an agent's side, over /mcp with the SDK client (in process): invite_member
 * asks before it invites, list_invites and revoke_invite are the owners' and admins', and
 * accept_invite answers only the caller's own human's invite, which whoami lists. Each refusal
 * is followed by what its hint says, which then succeeds. Billing is on and the org has no
 * credit: none of these is metered.
 */
const env = useTestServices({ config: billingOnConfig() });
const clients: Client[] = [];
let org: SeededOrg;
let other: SeededOrg;
let alice: Client;
let bob: Client;
let outsider: Client;
let secondProject: { id: string; prefix: string };

const connect = async (key: string) => {
  const client = await connectClient(`${inProcessOrigin}/mcp`, key, { fetch: inProcessFetch(env.services) });
  clients.push(client);
  return client;
};

beforeAll(async () => {
  org = await seedOrg(env.services, { name: "Acme" });
  other = await seedOrg(env.services, { name: "Globex" });
  secondProject = await createProject(env.services.db, { orgId: org.orgId, name: "Web", prefix: `W${org.projectId.slice(0, 4).replace(/[^A-Za-z0-9]/g, "x")}`.toUpperCase() });
  await setBalance(env.services.db, org.orgId, 0);
  await setBalance(env.services.db, other.orgId, 0);
  alice = await connect(org.agents.alice.key);
  bob = await connect(org.agents.bob.key);
  outsider = await connect(other.agents.alice.key);
});
afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
});

const emailOf = async (userId: string) => (await env.services.db.select({ email: user.email }).from(user).where(eq(user.id, userId)))[0]!.email;

describe("invite_member", () => {
  test("a member is refused and told who may; the owner is asked the questions first, then invites with the answers", async () => {
    const refused = await callError(bob, "invite_member");
    expect(refused).toMatchObject({ code: "FORBIDDEN", message: expect.stringContaining("owner or admin"), hint: "Ask an owner or admin of the org." });

    const asked = await callOk(alice, "invite_member");
    expect(asked.invited).toBe(false);
    expect(asked.askHuman.map((q: { resume: { arg: string } }) => q.resume.arg)).toEqual(["email", "role", "projectIds"]);
    for (const question of asked.askHuman) expect(question.resume.tool).toBe("invite_member");
    expect(asked.askHuman[0]).toMatchObject({ input: "text", context: expect.stringContaining("Acme") });
    expect(asked.askHuman[1].options.map((o: { value: string }) => o.value)).toEqual(["member", "admin"]);
    const projects = asked.askHuman[2];
    expect(projects.multiple).toBe(true);
    expect(projects.options.map((o: { value: string }) => o.value)).toEqual(expect.arrayContaining(["__all__", org.projectId, secondProject.id]));
    expect(projects.options.map((o: { value: string }) => o.value)).not.toContain(other.projectId);
    // Nothing was made by asking.
    expect((await callOk(alice, "list_invites")).invites).toEqual([]);

    const email = "dana@example.com";
    const invited = await callOk(alice, "invite_member", { email: "Dana@Example.com", role: "member", projectIds: [secondProject.id], decided: true });
    expect(invited).toMatchObject({ invited: true, email, role: "member", projectIds: [secondProject.id], emailed: false });
    expect(invited.link).toMatch(/\/join\/rtscinv_[A-Za-z0-9_-]+$/);
    // No SMTP here: the human is told to send the link, and why it was not mailed.
    expect(invited.tellHuman).toContain(invited.link);
    expect(invited.tellHuman).toMatch(/not mailed: email is not configured/);

    // The link works for that person: they join scoped to the project chosen.
    const dana = await ensureUser(env.services.db, email, "Dana");
    expect(await redeemInvite(env.services, { userId: dana, code: invited.link })).toMatchObject({ orgId: org.orgId, role: "member", projectIds: [secondProject.id] });
    // Free: the org has no credit, and nothing was charged.
    expect((await ledgerOf(env.services.db, org.orgId)).filter((row) => row.tool.includes("invite"))).toEqual([]);
  });

  test("a project of another org reads as unknown, and a scope on an admin is refused; following the hints succeeds", async () => {
    const unknown = await callError(alice, "invite_member", { projectIds: [other.projectId], decided: true });
    expect(unknown).toMatchObject({ code: "NOT_FOUND", hint: expect.stringContaining("projects") });
    expect(JSON.stringify(unknown)).not.toContain("Globex");
    expect(await callOk(alice, "invite_member", { projectIds: [org.projectId], decided: true })).toMatchObject({ invited: true, email: null, projectIds: [org.projectId] });

    const scopedAdmin = await callError(alice, "invite_member", { role: "admin", projectIds: [org.projectId], decided: true });
    expect(scopedAdmin).toMatchObject({ code: "INVALID_INPUT", message: expect.stringContaining("cannot be scoped"), hint: expect.stringContaining("null for an admin") });
    const admin = await callOk(alice, "invite_member", { role: "admin", decided: true });
    expect(admin).toMatchObject({ invited: true, role: "admin", projectIds: null });
    expect(admin.tellHuman).toContain(admin.link);
  });
});

describe("list_invites and revoke_invite", () => {
  test("a member is refused; the owner pages through the org's invites only", async () => {
    expect((await callError(bob, "list_invites")).code).toBe("FORBIDDEN");
    const made = await callOk(outsider, "invite_member", { decided: true });
    const first = await callOk(alice, "list_invites", { limit: 1 });
    expect(first.invites).toHaveLength(1);
    expect(first.nextCursor).toEqual(expect.any(String));
    const rest = await callOk(alice, "list_invites", { cursor: first.nextCursor });
    const all = [...first.invites, ...rest.invites];
    expect(all.length).toBeGreaterThanOrEqual(3);
    expect(all.map((i: { inviteId: string }) => i.inviteId)).not.toContain(made.inviteId);
    expect(all.find((i: { email: string | null }) => i.email === "dana@example.com")).toMatchObject({ state: "accepted", role: "member" });
  });

  test("another org's invite is not found; following the hint to list_invites finds one to revoke, once", async () => {
    const theirs = await callOk(outsider, "invite_member", { decided: true });
    const refused = await callError(alice, "revoke_invite", { inviteId: theirs.inviteId });
    expect(refused).toMatchObject({ code: "NOT_FOUND", hint: expect.stringContaining("list_invites") });
    expect((await callError(bob, "revoke_invite", { inviteId: theirs.inviteId })).code).toBe("FORBIDDEN");

    const pending = (await callOk(alice, "list_invites")).invites.find((i: { state: string }) => i.state === "pending");
    expect(await callOk(alice, "revoke_invite", { inviteId: pending.inviteId })).toEqual({ inviteId: pending.inviteId, state: "revoked", changed: true });
    expect(await callOk(alice, "revoke_invite", { inviteId: pending.inviteId })).toEqual({ inviteId: pending.inviteId, state: "revoked", changed: false });
    // Theirs stands.
    expect((await callOk(outsider, "list_invites")).invites.find((i: { inviteId: string }) => i.inviteId === theirs.inviteId).state).toBe("pending");
  });
});

describe("accept_invite and whoami's pending invites", () => {
  test("only the caller's human's own invite: others are not found; whoami lists theirs, and accepting it joins them", async () => {
    const bobEmail = await emailOf(org.agents.bob.userId);
    const carolEmail = await emailOf(org.agents.carol.userId);
    const forBob = await callOk(outsider, "invite_member", { email: bobEmail, decided: true });
    const forCarol = await callOk(outsider, "invite_member", { email: carolEmail, decided: true });
    const open = await callOk(outsider, "invite_member", { decided: true });

    // Someone else's invite, and an open one (its code is the credential), read as unknown.
    for (const inviteId of [forCarol.inviteId, open.inviteId, "no-such-invite"]) {
      const refused = await callError(bob, "accept_invite", { inviteId });
      expect(refused).toMatchObject({ code: "NOT_FOUND", hint: expect.stringContaining("whoami") });
      expect(JSON.stringify(refused)).not.toContain("Globex");
    }
    const before = await callOk(bob, "whoami");
    expect(before.pendingInvites).toEqual([{ inviteId: forBob.inviteId, orgName: "Globex", role: "member", expiresAt: forBob.expiresAt }]);
    expect((await callOk(alice, "whoami")).pendingInvites).toEqual([]);

    const joined = await callOk(bob, "accept_invite", { inviteId: before.pendingInvites[0].inviteId });
    expect(joined).toMatchObject({ orgId: other.orgId, orgName: "Globex", role: "member", projectIds: null });
    expect((await callOk(bob, "whoami")).pendingInvites).toEqual([]);
    // The key stays in its org; the membership is in the other.
    expect((await callOk(bob, "whoami")).org.id).toBe(org.orgId);
    const members = (await callOk(outsider, "list_members")).members;
    expect(members.some((m: { kind: string; email?: string }) => m.kind === "human" && m.email === bobEmail)).toBe(true);
    const again = await callError(bob, "accept_invite", { inviteId: forBob.inviteId });
    expect(again.code).toBe("CONFLICT");
  });

  test("an address nothing proves is the human's: the invite is not listed, and accepting it says why", async () => {
    const carolEmail = await emailOf(org.agents.carol.userId);
    const invite = await callOk(outsider, "invite_member", { email: carolEmail, role: "member", decided: true });
    const carol = await connect(org.agents.carol.key);
    await env.services.db.update(user).set({ emailVerified: false }).where(eq(user.id, org.agents.carol.userId));
    try {
      expect((await callOk(carol, "whoami")).pendingInvites).toEqual([]);
      const refused = await callError(carol, "accept_invite", { inviteId: invite.inviteId });
      expect(refused).toMatchObject({ code: "FORBIDDEN", details: { reason: "email_unverified" } });
    } finally {
      await env.services.db.update(user).set({ emailVerified: true }).where(eq(user.id, org.agents.carol.userId));
    }
    expect((await callOk(carol, "whoami")).pendingInvites.map((p: { inviteId: string }) => p.inviteId)).toContain(invite.inviteId);
  });
});

describe("setup_status", () => {
  test("one state at a time, in priority order, each left by doing what it says", async () => {
    const fresh = await seedOrg(env.services, { name: "Initech" });
    const owner = await connect(fresh.agents.alice.key);
    const member = await connect(fresh.agents.bob.key);
    const bobEmail = await emailOf(fresh.agents.bob.userId);
    const prefix = (await callOk(owner, "whoami")).project.prefix as string;

    // A new org: nothing filed yet.
    const empty = await callOk(member, "setup_status");
    expect(empty).toMatchObject({ state: "EMPTY_PROJECT", org: "Initech", project: prefix, next: expect.stringContaining(`project ${prefix} has no issues`) });
    expect(empty.next).toMatch(/save_issue/);
    expect(empty.next).toMatch(/run_import, for an owner or admin/);
    // The handshake says as much before any call: where the key works, and the state with what to do.
    expect(member.getInstructions()).toContain(`This key works in Initech / ${prefix}. setup_status now: EMPTY_PROJECT. ${empty.next}`);

    // An invite for the member's human outranks everything: the question, with accept_invite to resume.
    const invite = await callOk(outsider, "invite_member", { email: bobEmail, decided: true });
    const invited = await callOk(member, "setup_status");
    expect(invited.state).toBe("PENDING_INVITE");
    const [question] = invited.askHuman;
    expect(question.resume).toEqual({ tool: "accept_invite", arg: "inviteId" });
    expect(question.options.map((o: { value: string }) => o.value)).toEqual([invite.inviteId, "__decline__"]);
    expect(question.options[0].label).toBe("Join Globex");
    expect((await callOk(owner, "setup_status")).state).toBe("EMPTY_PROJECT");
    await callOk(member, "accept_invite", { inviteId: question.options[0].value });

    // A running import, then a failed one, in the member's projects.
    const run = { id: newId(), orgId: fresh.orgId, projectId: fresh.projectId, source: "linear", teamId: "team", teamKey: "ENG", phase: "applying" as const, done: 3, total: 10 };
    await env.services.db.insert(linearImportRuns).values(run);
    expect(await callOk(member, "setup_status")).toMatchObject({ state: "IMPORT_RUNNING", next: expect.stringContaining("3 of 10") });
    await env.services.db.update(linearImportRuns).set({ phase: "failed", error: "SOURCE_UNAUTHORIZED" }).where(eq(linearImportRuns.id, run.id));
    expect(await callOk(member, "setup_status")).toMatchObject({ state: "IMPORT_FAILED", next: expect.stringContaining("SOURCE_UNAUTHORIZED") });
    // Another org sees nothing of it.
    expect((await callOk(outsider, "setup_status")).state).not.toMatch(/IMPORT/);
    // A member scoped away from the import's project does not see it either.
    const other = await createProject(env.services.db, { orgId: fresh.orgId, name: "Other", prefix: "OTHR" });
    const ownerCtx = (await humanCtx(env.services, { orgId: fresh.orgId, userId: fresh.agents.alice.userId, runtime: "dash" })).ctx;
    const bobMember = (await callOk(owner, "list_members")).members.find((m: { kind: string; email?: string }) => m.kind === "human" && m.email === bobEmail);
    await setMemberScope(ownerCtx, { memberId: bobMember.memberId, projectIds: [other.id] });
    expect((await callOk(member, "setup_status")).state).not.toMatch(/IMPORT/);
    await setMemberScope(ownerCtx, { memberId: bobMember.memberId, projectIds: null });
    // A later import that finished is what counts.
    await env.services.db.insert(linearImportRuns).values({ ...run, id: newId(), phase: "done", done: 10, error: null });

    // Still no issues; filing one, as the state says, moves on.
    expect((await callOk(member, "setup_status")).state).toBe("EMPTY_PROJECT");
    await callOk(member, "save_issue", { title: "First", work: true, changeType: "feat", noDependency: "the first" });

    // The import left a placeholder carrying the member's email: named, not blocking, claimed as it says.
    const cipher = await env.services.keyring.forOrg(env.services.db, fresh.orgId);
    const ghostUser = await placeholderUser(env.services.db, "Bob at Linear");
    const ghostId = newId();
    await env.services.db.insert(importGhosts).values({ id: ghostId, orgId: fresh.orgId, source: "linear", sourceUserId: "lin-bob", userId: ghostUser, emailEnc: cipher.encrypt(bobEmail), emailHash: emailHash(bobEmail) });
    const ghosts = await callOk(member, "setup_status");
    expect(ghosts).toMatchObject({ state: "GHOSTS_UNCLAIMED", next: expect.stringContaining(ghostId) });
    expect(ghosts.next).toContain("Bob at Linear");
    expect((await callOk(owner, "setup_status")).state).toBe("READY");
    expect(await callOk(member, "claim_ghost")).toMatchObject({ claimed: [ghostId] });

    expect(await callOk(member, "setup_status")).toMatchObject({ state: "READY", next: expect.stringContaining("next_issue") });
  });
});

describe("the placeholders an import left: list_claimable_ghosts, claim_ghost, dismiss_ghost_prompt", () => {
  /** A placeholder as an import makes one, carrying `email` as the source gave it. */
  const ghost = async (orgId: string, name: string, email: string) => {
    const cipher = await env.services.keyring.forOrg(env.services.db, orgId);
    const ghostId = newId();
    await env.services.db.insert(importGhosts).values({ id: ghostId, orgId, source: "jira", sourceUserId: `jira-${ghostId}`, userId: await placeholderUser(env.services.db, name), emailEnc: cipher.encrypt(email), emailHash: emailHash(email) });
    return ghostId;
  };

  test("each human is offered only the placeholders with their email; another's is refused and says why; dismissing ends the offer, free, and a dismissed one is still claimed by its id", async () => {
    const fresh = await seedOrg(env.services, { name: "Hooli", prefix: "HOOL" });
    const member = await connect(fresh.agents.bob.key);
    const owner = await connect(fresh.agents.alice.key);
    await callOk(member, "save_issue", { title: "Imported work", work: true, changeType: "feat", noDependency: "setup" });
    const bobs = await ghost(fresh.orgId, "Bob at Jira", await emailOf(fresh.agents.bob.userId));
    const alices = await ghost(fresh.orgId, "Alice at Jira", await emailOf(fresh.agents.alice.userId));

    const listed = await callOk(member, "list_claimable_ghosts");
    expect(listed.ghosts).toEqual([{ ghostId: bobs, name: "Bob at Jira", source: "jira", importedAt: expect.any(String), dismissed: false }]);
    expect(listed.next).toMatch(/Ask your human.*claim_ghost.*dismiss_ghost_prompt/);
    // An owner's rank gives no one else's placeholder: as on the Dash, each claims their own.
    expect((await callOk(owner, "list_claimable_ghosts")).ghosts.map((g: { ghostId: string }) => g.ghostId)).toEqual([alices]);
    const refused = await callError(member, "claim_ghost", { ghostId: alices });
    expect(refused).toMatchObject({ code: "FORBIDDEN", message: "this placeholder's email is not yours", details: { reason: "email_mismatch" } });

    // Billing on, no credit: the prompt's tools are free (membership), and nothing reaches the ledger.
    await setBalance(env.services.db, fresh.orgId, 0);
    expect((await callOk(member, "setup_status")).state).toBe("GHOSTS_UNCLAIMED");
    expect(await callOk(member, "dismiss_ghost_prompt")).toMatchObject({ dismissed: [bobs], next: expect.stringContaining("claim_ghost with a ghostId") });
    expect(await callOk(member, "dismiss_ghost_prompt")).toMatchObject({ dismissed: [] });
    expect((await ledgerOf(env.services.db, fresh.orgId)).filter((row) => /ghost/.test(row.tool))).toEqual([]);
    expect((await callOk(member, "setup_status")).state).toBe("READY");
    expect(await callOk(member, "list_claimable_ghosts")).toMatchObject({ ghosts: [{ ghostId: bobs, dismissed: true }], next: expect.stringContaining("dismissed") });
    // The owner's offer is untouched by Bob's answer.
    expect((await callOk(owner, "setup_status")).state).toBe("GHOSTS_UNCLAIMED");

    // Nothing offered now: claim_ghost without an id says so, and its hint (claim by ghostId) works.
    await setBalance(env.services.db, fresh.orgId, 10_000_000);
    const none = await callError(member, "claim_ghost");
    expect(none).toMatchObject({ code: "NOT_FOUND", hint: expect.stringContaining("by its ghostId (list_claimable_ghosts)") });
    const claimed = (await member.callTool({ name: "claim_ghost", arguments: { ghostId: bobs } })) as CallToolResult;
    expect(claimed.structuredContent).toMatchObject({ claimed: [bobs] });
    // Where it landed, in the text an agent reads: the org as a whole.
    expect(claimed.content.at(-1)).toEqual({ type: "text", text: "— in Hooli, org-wide" });
    expect((await callOk(member, "list_claimable_ghosts")).ghosts).toEqual([]);
  });

  test("a later import's placeholder is offered again; an unverified email is told why nothing is offered", async () => {
    const fresh = await seedOrg(env.services, { name: "Pied Piper", prefix: "PIPE" });
    const member = await connect(fresh.agents.bob.key);
    const bobEmail = await emailOf(fresh.agents.bob.userId);
    const first = await ghost(fresh.orgId, "Bob at Jira", bobEmail);
    await callOk(member, "dismiss_ghost_prompt");
    const second = await ghost(fresh.orgId, "Bob at Asana", bobEmail);
    expect((await callOk(member, "list_claimable_ghosts")).ghosts.map((g: { ghostId: string; dismissed: boolean }) => [g.ghostId, g.dismissed])).toEqual([
      [first, true],
      [second, false],
    ]);
    await env.services.db.update(user).set({ emailVerified: false }).where(eq(user.id, fresh.agents.bob.userId));
    expect(await callOk(member, "list_claimable_ghosts")).toEqual({ ghosts: [], next: expect.stringContaining("not verified") });
  });
});
