import { describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { account, members, orgs, user } from "../../db/schema/index.ts";
import crypto from "node:crypto";
import { boot } from "../boot.ts";
import { loadConfig } from "../config/index.ts";
import { createTestDatabase, testConfig, testDriver } from "../testing/db.ts";
import { runEntry, migratedDataDir } from "../testing/app-process.ts";
import { createAuth } from "../auth/index.ts";
import { authenticateAgentKey } from "../orgs/index.ts";
import { bootstrap, mintKey, setPassword } from "./commands.ts";
import { postToAuth, TEST_ORIGIN } from "../testing/auth.ts";
import { useTestServices } from "../testing/database.ts";

const env = useTestServices();

describe("operator commands", () => {
  it("bootstrap prints orgId, projectId, userId and a key that authenticates by hash", async () => {
    const result = await bootstrap(env.services, { org: "Acme", project: "Web", prefix: "web", email: "Owner@Example.com" });
    expect(Object.keys(result).sort()).toEqual(["key", "orgId", "projectId", "userId"]);
    expect(result.key).toMatch(/^rtsc_[A-Za-z0-9_-]{40,}$/);
    const principal = await authenticateAgentKey(env.services.db, result.key);
    expect(principal).toMatchObject({ orgId: result.orgId, projectId: result.projectId, userId: result.userId });
    expect(await authenticateAgentKey(env.services.db, result.key + "x")).toBeNull();
  });

  it("mint-key adds the person as a member and their key authenticates", async () => {
    const { orgId, projectId } = await bootstrap(env.services, { org: "B", project: "P", prefix: "BB", email: "o@b.example" });
    const minted = await mintKey(env.services, { org: orgId, email: "new@b.example", runtime: "codex" });
    expect(Object.keys(minted).sort()).toEqual(["key", "userId"]);
    const principal = await authenticateAgentKey(env.services.db, minted.key);
    expect(principal).toMatchObject({ orgId, projectId, userId: minted.userId, runtime: "codex" });
  });

  it("refuses an unknown org clearly", async () => {
    await expect(mintKey(env.services, { org: "nope", email: "x@y.example", runtime: "r" })).rejects.toMatchObject({
      code: "NOT_FOUND",
    });
  });
});

describe("an account nobody proved the address of", () => {
  /** A sign-up through better-auth's endpoint, as the sign-up page posts it: the email is recorded unverified. */
  async function signUp(email: string) {
    const response = await postToAuth(createAuth(env.services), "/sign-up/email", { email, password: "correct horse battery", name: "Squatter" });
    expect(response.status).toBe(200);
    const [row] = await env.services.db.select().from(user).where(eq(user.email, email));
    expect(row!.emailVerified).toBe(false);
    return row!.id;
  }

  it("is never made the owner by bootstrap, nor a member by mint-key: refused, nothing created", async () => {
    const squatter = await signUp("ceo@corp.test");
    const refused = await bootstrap(env.services, { org: "Corp", project: "Web", prefix: "CORP", email: "CEO@corp.test" }).catch((e) => e);
    expect(refused).toMatchObject({ code: "FORBIDDEN", details: { reason: "email_unverified" }, hint: expect.stringContaining("/dash/orgs/new") });
    expect(await env.services.db.select().from(orgs).where(eq(orgs.name, "Corp"))).toEqual([]);

    const { orgId } = await bootstrap(env.services, { org: "Corp2", project: "Web", prefix: "CORP", email: "real-ceo@corp.test" });
    await expect(mintKey(env.services, { org: orgId, email: "ceo@corp.test", runtime: "codex" })).rejects.toMatchObject({
      code: "FORBIDDEN",
      details: { reason: "email_unverified" },
    });
    expect(await env.services.db.select().from(members).where(eq(members.userId, squatter))).toEqual([]);
  });

  it("attaches an account whose provider verified the address, and people the operator made", async () => {
    const id = "oauth-verified-user";
    await env.services.db.insert(user).values({ id, email: "dev@corp.test", name: "Dev", emailVerified: true });
    await env.services.db.insert(account).values({ id: "acc-1", userId: id, providerId: "github", accountId: "42" });
    const { orgId, userId } = await bootstrap(env.services, { org: "Verified", project: "Web", prefix: "VER", email: "dev@corp.test" });
    expect(userId).toBe(id);
    // bootstrap's own person (no sign-in of their own) gets a key in another org too.
    const owner = await bootstrap(env.services, { org: "Other", project: "P", prefix: "OTH", email: "ops@corp.test" });
    expect((await mintKey(env.services, { org: orgId, email: "ops@corp.test", runtime: "ci" })).userId).toBe(owner.userId);
  });
});

it("the admin command refuses such an account in one line and exits non-zero", async () => {
  const database = testDriver === "postgres" ? await createTestDatabase({ max: 2 }) : null;
  const childEnv: Record<string, string> = database
    ? { DATABASE_URL: database.url!, RETASC_MASTER_KEY: crypto.randomBytes(32).toString("base64"), RETASC_EMAIL_PASSWORD: "on" }
    : { RETASC_DATA_DIR: migratedDataDir(), RETASC_EMAIL_PASSWORD: "on" };
  try {
    // The sign-up goes through the deployment's own better-auth, on the database the command then opens.
    const booted = await boot(loadConfig({ ...childEnv, LOG_LEVEL: "silent" }), { warn: () => {}, poolSize: 1 });
    try {
      const response = await postToAuth(createAuth(booted.services), "/sign-up/email", { email: "ceo@corp.test", password: "correct horse battery", name: "Squatter" });
      expect(response.status).toBe(200);
    } finally {
      await booted.close();
    }
    const result = runEntry("server/admin/main.ts", ["bootstrap", "--org", "Corp", "--project", "Web", "--prefix", "WEB", "--email", "ceo@corp.test", "--json"], childEnv);
    expect(result.status).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr.trim().split("\n")).toEqual([expect.stringMatching(/^✗ FORBIDDEN: ceo@corp.test has an account whose email is not verified/)]);
  } finally {
    await database?.close();
  }
});

describe("set-password", () => {
  /** A sign-in through better-auth's own endpoint, as the sign-in page posts it. */
  async function signIn(email: string, password: string) {
    const response = await postToAuth(createAuth(env.services), "/sign-in/email", { email, password });
    return { status: response.status, cookie: response.headers.getSetCookie().join("; ") };
  }

  it("gives a bootstrapped person a password they sign in with; a wrong one is refused", async () => {
    const { userId } = await bootstrap(env.services, { org: "C", project: "P", prefix: "CC", email: "c@example.com" });
    expect(await signIn("c@example.com", "correct horse battery")).toMatchObject({ status: 401 });
    const result = await setPassword(env.services, { email: "C@Example.com", password: "correct horse battery" });
    expect(result).toEqual({ userId, email: "c@example.com", replaced: false, signedOut: false });
    const ok = await signIn("c@example.com", "correct horse battery");
    expect(ok.status).toBe(200);
    expect(ok.cookie).toContain("better-auth.session_token=");
    expect((await signIn("c@example.com", "correct horse battery!")).status).toBe(401);
    // Stored the way sign-up stores it: one credential account, a hash and never the password.
    const rows = await env.services.db.select().from(account).where(eq(account.userId, userId));
    expect(rows).toEqual([expect.objectContaining({ providerId: "credential", accountId: userId })]);
    expect(rows[0]!.password).not.toContain("correct horse");
  });

  it("replaces the password of someone who signed up, so only the new one works", async () => {
    const auth = createAuth(env.services);
    const signUp = await postToAuth(auth, "/sign-up/email", { email: "d@example.com", password: "first password", name: "D" });
    expect(signUp.status).toBe(200);
    const session = async (cookie: string) =>
      (await auth.handler(new Request(`${TEST_ORIGIN}/api/auth/get-session`, { headers: { cookie, origin: TEST_ORIGIN } }))).json();
    const signedUpCookie = signUp.headers.getSetCookie().join("; ");
    expect(await session(signedUpCookie)).toMatchObject({ user: { email: "d@example.com" } });
    expect(await setPassword(env.services, { email: "d@example.com", password: "second password" })).toMatchObject({
      replaced: true,
      signedOut: true,
    });
    // The session of the old password ends with it.
    expect(await session(signedUpCookie)).toBeNull();
    expect((await signIn("d@example.com", "first password")).status).toBe(401);
    expect((await signIn("d@example.com", "second password")).status).toBe(200);
  });

  it("enforces sign-up's length rules, refuses an unknown email, and refuses when email sign-in is off", async () => {
    await bootstrap(env.services, { org: "E", project: "P", prefix: "EE", email: "e@example.com" });
    await expect(setPassword(env.services, { email: "e@example.com", password: "7 chars" })).rejects.toMatchObject({
      code: "INVALID_INPUT",
      message: "the password must be 8 to 128 characters",
    });
    await expect(setPassword(env.services, { email: "e@example.com", password: "x".repeat(129) })).rejects.toMatchObject({ code: "INVALID_INPUT" });
    expect((await setPassword(env.services, { email: "e@example.com", password: "8 chars!" })).replaced).toBe(false);
    expect((await signIn("e@example.com", "8 chars!")).status).toBe(200);
    await expect(setPassword(env.services, { email: "nobody@example.com", password: "long enough" })).rejects.toMatchObject({ code: "NOT_FOUND" });
    const off = { ...env.services, config: testConfig({ RETASC_EMAIL_PASSWORD: "off" }) };
    await expect(setPassword(off, { email: "e@example.com", password: "long enough" })).rejects.toMatchObject({ code: "UNAVAILABLE" });
  });
});
