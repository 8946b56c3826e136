import crypto from "node:crypto";
import { and, eq, isNull, lt, or, sql } from "drizzle-orm";
import { z } from "zod";
import type { Db } from "../../db/client.ts";
import { agentKeys, members, orgs, projects, user } from "../../db/schema/index.ts";
import type { Principal, Services } from "../context.ts";
import { randomToken, sha256 } from "../crypto/index.ts";
import { DomainError, invalidInput, notFound } from "../errors.ts";

export const newId = () => crypto.randomUUID();

export const prefixSchema = z
  .string()
  .trim()
  .regex(/^[A-Za-z][A-Za-z0-9]{1,9}$/, "a prefix is 2-10 letters or digits, starting with a letter")
  .transform((p) => p.toUpperCase());
export const emailSchema = z.email("must be an email address").trim().toLowerCase();
export const runtimeSchema = z
  .string()
  .trim()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9._:-]+$/, "a runtime label is letters, digits and . _ : -");

/** Finds the human with this email, creating them if needed. */
export async function ensureUser(db: Db, email: string, name?: string): Promise<string> {
  const normalized = emailSchema.parse(email);
  const existing = await db.select({ id: user.id }).from(user).where(eq(user.email, normalized));
  if (existing[0]) return existing[0].id;
  const id = newId();
  await db
    .insert(user)
    .values({ id, email: normalized, name: name ?? normalized.split("@")[0]! })
    .onConflictDoNothing();
  const row = await db.select({ id: user.id }).from(user).where(eq(user.email, normalized));
  return row[0]!.id;
}

export async function createOrg(
  services: Pick<Services, "keyring">,
  db: Db,
  input: { name: string; ownerUserId: string; timeZone?: string },
): Promise<string> {
  const name = z.string().trim().min(1).max(100).parse(input.name);
  const timeZone = input.timeZone ?? "UTC";
  if (!isTimeZone(timeZone)) throw invalidInput(`unknown time zone ${timeZone}`, "Use an IANA name such as Europe/Berlin.");
  const id = newId();
  await db.insert(orgs).values({ id, name, timeZone });
  await services.keyring.createOrgKey(db, id);
  await db.insert(members).values({ id: newId(), orgId: id, userId: input.ownerUserId, role: "owner" });
  return id;
}

export function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

export async function createProject(
  db: Db,
  input: { orgId: string; name: string; prefix: string },
): Promise<{ id: string; prefix: string }> {
  const prefix = prefixSchema.parse(input.prefix);
  const name = z.string().trim().min(1).max(100).parse(input.name);
  const taken = await db
    .select({ id: projects.id })
    .from(projects)
    .where(and(eq(projects.orgId, input.orgId), eq(projects.prefix, prefix)));
  if (taken[0]) {
    throw new DomainError("CONFLICT", `prefix ${prefix} is already used in this org`, "Pick another prefix.");
  }
  const id = newId();
  await db.insert(projects).values({ id, orgId: input.orgId, name, prefix });
  return { id, prefix };
}

export async function ensureMember(db: Db, orgId: string, userId: string, role: "owner" | "admin" | "member" = "member") {
  await db.insert(members).values({ id: newId(), orgId, userId, role }).onConflictDoNothing();
}

/** Mints an agent key. The secret is returned once; only its SHA-256 is stored. */
export async function mintAgentKey(
  db: Db,
  input: {
    orgId: string;
    userId: string;
    runtime: string;
    projectId?: string | null;
    parentKeyId?: string | null;
    claimCap?: number | null;
  },
): Promise<{ keyId: string; key: string }> {
  const runtime = runtimeSchema.parse(input.runtime);
  if (input.projectId) {
    const project = await db
      .select({ id: projects.id })
      .from(projects)
      .where(and(eq(projects.id, input.projectId), eq(projects.orgId, input.orgId)));
    if (!project[0]) throw notFound("project");
  }
  const key = randomToken("rtsc_", 32);
  const keyId = newId();
  await db.insert(agentKeys).values({
    id: keyId,
    orgId: input.orgId,
    userId: input.userId,
    projectId: input.projectId ?? null,
    runtime,
    keyHash: sha256(key),
    prefix: key.slice(0, 12),
    parentKeyId: input.parentKeyId ?? null,
    claimCap: input.claimCap ?? null,
  });
  return { keyId, key };
}

/** The agent key an `Authorization: Bearer <key>` header presents, or null. */
export function bearerKeyOf(authorization: string | null | undefined): string | null {
  const match = /^bearer\s+(\S+)\s*$/i.exec(authorization ?? "");
  return match ? match[1]! : null;
}

/**
 * Resolves a presented agent key to its principal, or null. Revoked keys and keys of
 * suspended members stop working at once: both are checked on every call, in one statement
 * built once per database (building it again was most of the CPU an MCP request's
 * authentication cost).
 */
export async function authenticateAgentKey(db: Db, secret: string): Promise<Principal | null> {
  if (!secret.startsWith("rtsc_") || secret.length > 200) return null;
  let statement = keyLookups.get(db);
  if (!statement) keyLookups.set(db, (statement = keyLookup(db)));
  const row = (await statement.execute({ keyHash: sha256(secret) }))[0];
  if (!row) return null;
  return { kind: "agent", ...row };
}

const keyLookups = new WeakMap<Db, ReturnType<typeof keyLookup>>();

function keyLookup(db: Db) {
  return db
    .select({
      keyId: agentKeys.id,
      orgId: agentKeys.orgId,
      userId: agentKeys.userId,
      projectId: agentKeys.projectId,
      runtime: agentKeys.runtime,
      claimCap: agentKeys.claimCap,
    })
    .from(agentKeys)
    .innerJoin(members, and(eq(members.orgId, agentKeys.orgId), eq(members.userId, agentKeys.userId)))
    .where(
      and(eq(agentKeys.keyHash, sql.placeholder("keyHash")), isNull(agentKeys.revokedAt), eq(members.status, "active")),
    )
    .prepare("authenticate_agent_key");
}

export async function touchKey(db: Db, keyId: string, now: Date): Promise<void> {
  await db
    .update(agentKeys)
    .set({ lastUsedAt: now })
    .where(
      and(
        eq(agentKeys.id, keyId),
        or(isNull(agentKeys.lastUsedAt), lt(agentKeys.lastUsedAt, new Date(now.getTime() - 60_000))),
      ),
    );
}

/** Deletes an org and destroys its data key first, so nothing left anywhere can be read. */
export async function deleteOrg(services: Pick<Services, "keyring">, db: Db, orgId: string): Promise<void> {
  await services.keyring.shredOrg(db, orgId);
  await db.delete(orgs).where(eq(orgs.id, orgId));
}
