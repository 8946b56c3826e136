import crypto from "node:crypto";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { query } from "../../db/client.ts";
import { createTestDatabase, servicesFor, type TestDatabase } from "../testing/db.ts";
import type { Services } from "../context.ts";
import { saveIssue } from "../issues/index.ts";
import { deleteOrg } from "../orgs/index.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { Keyring, KeyUnavailableError, PLAIN_CACHE_MAX_CIPHERTEXT, PlainCache } from "./index.ts";

let tdb: TestDatabase;
let services: Services;
const master = crypto.randomBytes(32);
beforeAll(async () => {
  tdb = await createTestDatabase();
  services = servicesFor(tdb.database, { keyring: new Keyring(master) });
});
afterAll(() => tdb.close());

// Which columns are sealed, and that none holds plaintext: plaintext-scan.test.ts.
describe("encryption at rest", () => {
  it("crypto-shreds an org: after deletion its ciphertext cannot be decrypted", async () => {
    const org = await seedOrg(services);
    const a = org.agents.alice.ctx;
    const issue = await saveIssue(a, { title: "shred me", work: true, changeType: "feat", noDependency: "none" });
    const [row] = await query<{ title_enc: string }>(services.db, sql`select title_enc from issues where org_id = ${org.orgId}`);
    const cipher = await services.keyring.forOrg(services.db, org.orgId);
    expect(cipher.decrypt(row!.title_enc)).toBe("shred me");
    await deleteOrg(services, services.db, org.orgId);
    // A process that never saw the key (a fresh keyring with the same master key) finds nothing to decrypt with.
    const freshKeyring = new Keyring(master);
    await expect(freshKeyring.forOrg(services.db, org.orgId)).rejects.toBeInstanceOf(KeyUnavailableError);
    await expect(services.keyring.forOrg(services.db, org.orgId)).rejects.toBeInstanceOf(KeyUnavailableError);
    expect(issue.identifier).toBe("RTSC-1");
  });

  it("re-wraps org keys under a new master key without touching content", async () => {
    const org = await seedOrg(services);
    await saveIssue(org.agents.alice.ctx, { title: "survives rotation", work: true, changeType: "feat", noDependency: "none" });
    const oldMaster = master;
    const newMaster = crypto.randomBytes(32);
    const [before] = await query<{ title_enc: string }>(services.db, sql`select title_enc from issues where org_id = ${org.orgId}`);
    await services.db.transaction((tx) => Keyring.rotateMaster(tx, oldMaster, newMaster));
    const rotated = new Keyring(newMaster);
    const cipher = await rotated.forOrg(services.db, org.orgId);
    expect(cipher.decrypt(before!.title_enc)).toBe("survives rotation");
    await expect(new Keyring(oldMaster).forOrg(services.db, org.orgId)).rejects.toThrow();
    (services as { keyring: Keyring }).keyring = rotated;
  });

  it("rejects tampered ciphertext", async () => {
    const keyring = new Keyring(crypto.randomBytes(32));
    const org = await seedOrg({ ...services, keyring });
    const cipher = await keyring.forOrg(services.db, org.orgId);
    const sealed = cipher.encrypt("integrity");
    const bytes = Buffer.from(sealed.split(".")[1]!, "base64");
    bytes[bytes.length - 1] ^= 1;
    expect(() => cipher.decrypt(`v1.${bytes.toString("base64")}`)).toThrow();
  });

  it("keeps decrypted short texts for their org only, bounded, and forgets a shredded org's (decision 111)", async () => {
    const keyring = new Keyring(crypto.randomBytes(32));
    const shared = { ...services, keyring };
    const [one, two] = [await seedOrg(shared), await seedOrg(shared)];
    const [a, b] = [await keyring.forOrg(services.db, one.orgId), await keyring.forOrg(services.db, two.orgId)];
    const title = a.encrypt("a title of org one");
    expect(a.decrypt(title)).toBe("a title of org one");
    expect(a.decrypt(title)).toBe("a title of org one");
    // Another org's cipher never answers from org one's entry: its key and associated data refuse the text, as before.
    expect(() => b.decrypt(title)).toThrow();
    const cache = (keyring as unknown as { plainCache: PlainCache }).plainCache;
    expect(cache.size).toBe(1);
    // A body-sized text is decrypted each time, never kept.
    const body = a.encrypt("x".repeat(PLAIN_CACHE_MAX_CIPHERTEXT));
    expect(a.decrypt(body)).toHaveLength(PLAIN_CACHE_MAX_CIPHERTEXT);
    expect(cache.size).toBe(1);
    await deleteOrg(shared, services.db, one.orgId);
    expect(cache.size).toBe(0);
    const bounded = new PlainCache(2);
    bounded.set("o", "c1", "p1");
    bounded.set("o", "c2", "p2");
    bounded.set("o", "c3", "p3");
    expect([bounded.size, bounded.get("o", "c1"), bounded.get("o", "c3"), bounded.get("other", "c3")]).toEqual([2, undefined, "p3", undefined]);
  });
});
