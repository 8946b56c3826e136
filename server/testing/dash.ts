import crypto from "node:crypto";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll } from "vitest";
import type { Db } from "../../db/client.ts";
import { user } from "../../db/schema/index.ts";
import { Keyring } from "../crypto/index.ts";
import { connectClient } from "../mcp/testing.ts";
import { startApp, type AppProcess } from "./app-process.ts";
import { createTestDatabase, type TestDatabase } from "./db.ts";
import { createOrg, createProject, mintAgentKey } from "../orgs/index.ts";

/**
 * For tests and benchmarks of the Dash over HTTP: a person signed up through the real
 * better-auth endpoint, and an org they own seeded straight into the app's database.
 */
export async function signUpOverHttp(appUrl: string, email: string, name = "Dash Tester"): Promise<{ cookie: string }> {
  const response = await fetch(`${appUrl}/api/auth/sign-up/email`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: appUrl },
    body: JSON.stringify({ email, password: "correct horse battery", name }),
  });
  if (!response.ok) throw new Error(`sign-up failed: ${response.status} ${await response.text()}`);
  return { cookie: response.headers.getSetCookie().map((c) => c.split(";")[0]).join("; ") };
}

export async function seedOwnedOrg<R extends string>(
  db: Db,
  keyring: Keyring,
  input: { ownerEmail: string; orgName: string; prefix: string; runtimes: readonly R[]; claimCap?: number },
): Promise<{ orgId: string; projectId: string; ownerId: string; keys: Record<R, string> }> {
  const [owner] = await db.select({ id: user.id }).from(user).where(eq(user.email, input.ownerEmail.toLowerCase()));
  if (!owner) throw new Error(`${input.ownerEmail} has not signed up`);
  const orgId = await createOrg({ keyring }, db, { name: input.orgName, ownerUserId: owner.id });
  const project = await createProject(db, { orgId, name: input.orgName, prefix: input.prefix });
  const keys = {} as Record<R, string>;
  for (const runtime of input.runtimes) {
    keys[runtime] = (await mintAgentKey(db, { orgId, userId: owner.id, projectId: project.id, runtime, claimCap: input.claimCap })).key;
  }
  return { orgId, projectId: project.id, ownerId: owner.id, keys };
}

/**
 * The built app on a PostgreSQL database of its own, for the Dash's tests over real HTTP (call
 * inside a describe: it starts in beforeAll and stops in afterAll). `person` signs someone up
 * over HTTP and seeds an org they own with a codex agent connected over /mcp (and its key).
 */
export function useDashApp(env: Record<string, string> = {}) {
  let database: TestDatabase;
  let app: AppProcess;
  const masterKey = crypto.randomBytes(32);
  beforeAll(async () => {
    database = await createTestDatabase({ max: 2 });
    app = await startApp({ DATABASE_URL: database.url!, RETASC_MASTER_KEY: masterKey.toString("base64"), RETASC_EMAIL_PASSWORD: "on", ...env });
  });
  afterAll(async () => {
    await app?.stop();
    await database?.close();
  });
  return {
    get url() {
      return app.url;
    },
    /** The app's database, to set up what no door makes fast (hundreds of members). */
    get db() {
      return database.database.db;
    },
    async person(tag: string, prefix: string) {
      const email = `${tag}-${crypto.randomBytes(3).toString("hex")}@example.com`;
      const { cookie } = await signUpOverHttp(app.url, email);
      const org = await seedOwnedOrg(database.database.db, new Keyring(masterKey), { ownerEmail: email, orgName: tag, prefix, runtimes: ["codex"] });
      return { cookie, orgId: org.orgId, key: org.keys.codex, agent: await connectClient(`${app.url}/mcp`, org.keys.codex) };
    },
  };
}

/** The value a server-rendered page's `<select name=…>` has selected (its default), or null without one; `name` as the form sends it. */
export function selectedIn(html: string, name: string): string | null {
  const escaped = name.replace(/&/g, "&amp;").replace(/'/g, "&#x27;").replace(/"/g, "&quot;").replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const select = new RegExp(`<select[^>]*name="${escaped}"[^>]*>(.*?)</select>`, "s").exec(html);
  return select ? (/<option value="([^"]*)" selected="">/.exec(select[1]!)?.[1] ?? null) : null;
}
