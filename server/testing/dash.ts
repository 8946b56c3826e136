import { eq } from "drizzle-orm";
import type { Db } from "../../db/client.ts";
import { user } from "../../db/schema/index.ts";
import type { Keyring } from "../crypto/index.ts";
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
