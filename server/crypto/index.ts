import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { and, desc, eq } from "drizzle-orm";
import type { Db } from "../../db/client.ts";
import { orgKeys } from "../../db/schema/index.ts";
import { invalidInput } from "../errors.ts";

/**
 * Envelope encryption. The master key wraps one random 256-bit data key per org
 * (AES-256-GCM, org id as associated data); content is AES-256-GCM under the org's
 * data key. Ciphertext format: `v<keyVersion>.<base64(iv | tag | ciphertext)>`.
 * Deleting an org's `org_keys` rows makes its content unreadable (crypto-shredding).
 */
const IV_BYTES = 12;
const TAG_BYTES = 16;

function seal(key: Buffer, plaintext: Buffer, aad: string): Buffer {
  const iv = crypto.randomBytes(IV_BYTES);
  const cipher = crypto.createCipheriv("aes-256-gcm", key, iv);
  cipher.setAAD(Buffer.from(aad));
  const ct = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), ct]);
}

function open(key: Buffer, sealed: Buffer, aad: string): Buffer {
  const iv = sealed.subarray(0, IV_BYTES);
  const tag = sealed.subarray(IV_BYTES, IV_BYTES + TAG_BYTES);
  const decipher = crypto.createDecipheriv("aes-256-gcm", key, iv);
  decipher.setAAD(Buffer.from(aad));
  decipher.setAuthTag(tag);
  return Buffer.concat([decipher.update(sealed.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]);
}

export class KeyUnavailableError extends Error {
  constructor(orgId: string) {
    super(`no data key for org ${orgId}: it was deleted or never created`);
    this.name = "KeyUnavailableError";
  }
}

/** How many decrypted texts a keyring keeps, and the longest ciphertext kept (a 500-character title's, with room; not bodies). */
export const PLAIN_CACHE_ENTRIES = 10_000;
export const PLAIN_CACHE_MAX_CIPHERTEXT = 1_000;

/**
 * Short texts this process has decrypted, by ciphertext (decision 111): titles are decrypted on
 * every claim and finish (the issue's, the wave's five) at about 4 us of CPU each. A ciphertext
 * carries a random IV, so it names one plaintext; an entry also names its org, and is used only
 * by that org's cipher. Shared by a keyring's ciphers and bounded in count (the oldest entry
 * goes first), so it holds at most PLAIN_CACHE_ENTRIES texts of PLAIN_CACHE_MAX_CIPHERTEXT
 * characters of ciphertext each, whatever the number of orgs; it holds nothing the keyring's
 * cached data keys could not decrypt, and shredding an org empties its entries.
 */
export class PlainCache {
  private readonly entries = new Map<string, { orgId: string; plain: string }>();
  constructor(private readonly capacity = PLAIN_CACHE_ENTRIES) {}

  get(orgId: string, ciphertext: string): string | undefined {
    const entry = this.entries.get(ciphertext);
    return entry !== undefined && entry.orgId === orgId ? entry.plain : undefined;
  }

  set(orgId: string, ciphertext: string, plain: string): void {
    if (ciphertext.length > PLAIN_CACHE_MAX_CIPHERTEXT) return;
    if (this.entries.size >= this.capacity) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(ciphertext, { orgId, plain });
  }

  forgetOrg(orgId: string): void {
    for (const [ciphertext, entry] of this.entries) if (entry.orgId === orgId) this.entries.delete(ciphertext);
  }

  get size(): number {
    return this.entries.size;
  }
}

/** Encrypts and decrypts one org's content under its current data key. */
export class OrgCipher {
  constructor(
    private readonly orgId: string,
    private readonly keys: Map<number, Buffer>,
    private readonly currentVersion: number,
    private readonly plainCache: PlainCache = new PlainCache(),
  ) {}

  encrypt(plaintext: string): string;
  encrypt(plaintext: string | null | undefined): string | null;
  encrypt(plaintext: string | null | undefined): string | null {
    if (plaintext === null || plaintext === undefined) return null;
    const key = this.keys.get(this.currentVersion)!;
    const sealed = seal(key, Buffer.from(plaintext, "utf8"), this.orgId);
    return `v${this.currentVersion}.${sealed.toString("base64")}`;
  }

  decrypt(ciphertext: string): string;
  decrypt(ciphertext: string | null | undefined): string | null;
  decrypt(ciphertext: string | null | undefined): string | null {
    if (ciphertext === null || ciphertext === undefined) return null;
    const cached = this.plainCache.get(this.orgId, ciphertext);
    if (cached !== undefined) return cached;
    const dot = ciphertext.indexOf(".");
    const version = Number(ciphertext.slice(1, dot));
    const key = this.keys.get(version);
    if (!key) throw new KeyUnavailableError(this.orgId);
    const plain = open(key, Buffer.from(ciphertext.slice(dot + 1), "base64"), this.orgId).toString("utf8");
    this.plainCache.set(this.orgId, ciphertext, plain);
    return plain;
  }

  /**
   * A keyed fingerprint of `value` (HMAC-SHA256 under a key derived from the org's first data
   * key, hex): equal values match, and without the org's key it confirms no guess of the value.
   * For deduplicating outside content (intake deliveries) without storing a plain digest of it.
   */
  fingerprint(value: string): string {
    const first = Math.min(...this.keys.keys());
    const key = Buffer.from(crypto.hkdfSync("sha256", this.keys.get(first)!, Buffer.alloc(0), "retasc:fingerprint", 32));
    return crypto.createHmac("sha256", key).update(value, "utf8").digest("hex");
  }

  private termKey: Buffer | undefined;

  /**
   * The duplicate gate's keyed digest of a normalized term (decision 066): the first 8 bytes of an
   * HMAC-SHA256 under its own key derived from the org's first data key, as a signed 64-bit integer
   * in decimal. Equal terms match within the org; without its key a digest confirms no guessed word,
   * and the same word digests differently in another org.
   */
  termDigest(term: string): string {
    const first = Math.min(...this.keys.keys());
    this.termKey ??= Buffer.from(crypto.hkdfSync("sha256", this.keys.get(first)!, Buffer.alloc(0), "retasc:terms", 32));
    return crypto.createHmac("sha256", this.termKey).update(term, "utf8").digest().readBigInt64BE(0).toString();
  }

  /**
   * Bytes (file attachments): the same sealing with the key version in four leading bytes
   * instead of the text prefix, so a 10 MB file is stored as bytea, not as 13 MB of base64.
   */
  encryptBytes(plaintext: Buffer): Buffer {
    const version = Buffer.alloc(4);
    version.writeUInt32BE(this.currentVersion);
    return Buffer.concat([version, seal(this.keys.get(this.currentVersion)!, plaintext, this.orgId)]);
  }

  decryptBytes(ciphertext: Buffer): Buffer {
    const key = this.keys.get(ciphertext.readUInt32BE(0));
    if (!key) throw new KeyUnavailableError(this.orgId);
    return open(key, ciphertext.subarray(4), this.orgId);
  }
}

export class Keyring {
  private readonly cache = new Map<string, OrgCipher>();
  /** Decrypted short texts of every org's cipher (decision 111). */
  private readonly plainCache = new PlainCache();

  constructor(private readonly masterKey: Buffer) {
    if (masterKey.length !== 32) throw new Error("master key must be 32 bytes");
  }

  /**
   * A stable secret for another purpose (better-auth's session signing), derived from the
   * master key so a self-hoster has one key to keep, not two.
   */
  deriveSecret(purpose: string): string {
    const bytes = crypto.hkdfSync("sha256", this.masterKey, Buffer.alloc(0), `retasc:${purpose}`, 32);
    return Buffer.from(bytes).toString("base64url");
  }

  /** Creates version 1 of an org's data key, inside the caller's transaction. */
  async createOrgKey(db: Db, orgId: string): Promise<void> {
    const dataKey = crypto.randomBytes(32);
    await db.insert(orgKeys).values({
      orgId,
      version: 1,
      wrappedKey: seal(this.masterKey, dataKey, orgId).toString("base64"),
    });
  }

  async forOrg(db: Db, orgId: string): Promise<OrgCipher> {
    const cached = this.cache.get(orgId);
    if (cached) return cached;
    const rows = await db
      .select()
      .from(orgKeys)
      .where(eq(orgKeys.orgId, orgId))
      .orderBy(desc(orgKeys.version));
    if (rows.length === 0) throw new KeyUnavailableError(orgId);
    const keys = new Map<number, Buffer>();
    for (const row of rows) {
      keys.set(row.version, open(this.masterKey, Buffer.from(row.wrappedKey, "base64"), orgId));
    }
    const cipher = new OrgCipher(orgId, keys, rows[0]!.version, this.plainCache);
    this.cache.set(orgId, cipher);
    return cipher;
  }

  /** Destroys an org's data keys: everything encrypted under them is unreadable from now on. */
  async shredOrg(db: Db, orgId: string): Promise<void> {
    await db.delete(orgKeys).where(eq(orgKeys.orgId, orgId));
    this.cache.delete(orgId);
    this.plainCache.forgetOrg(orgId);
  }

  /** Re-wraps every org key under `newMaster`, from this keyring's master key (server/admin/rotate-master-key.ts). */
  rotateMasterTo(db: Db, newMaster: Buffer): Promise<number> {
    if (newMaster.equals(this.masterKey)) throw invalidInput("the new master key is the current one", "Generate a new one: openssl rand -base64 32.");
    return Keyring.rotateMaster(db, this.masterKey, newMaster);
  }

  /** Re-wraps every org key under a new master key without touching content. */
  static async rotateMaster(db: Db, oldMaster: Buffer, newMaster: Buffer): Promise<number> {
    const rows = await db.select().from(orgKeys);
    for (const row of rows) {
      const dataKey = open(oldMaster, Buffer.from(row.wrappedKey, "base64"), row.orgId);
      await db
        .update(orgKeys)
        .set({ wrappedKey: seal(newMaster, dataKey, row.orgId).toString("base64") })
        .where(and(eq(orgKeys.orgId, row.orgId), eq(orgKeys.version, row.version)));
    }
    return rows.length;
  }
}

/**
 * The master key: RETASC_MASTER_KEY when set; in the embedded mode, generated once into
 * the data dir (mode 0600) so a self-hoster can start with nothing configured.
 */
export function resolveMasterKey(
  configured: string | undefined,
  dataDir: string | undefined,
  warn: (message: string) => void,
): Buffer {
  if (configured) return Buffer.from(configured, "base64");
  if (!dataDir) throw new Error("RETASC_MASTER_KEY is required when DATABASE_URL is set");
  const file = path.join(dataDir, "master.key");
  if (fs.existsSync(file)) {
    const key = Buffer.from(fs.readFileSync(file, "utf8").trim(), "base64");
    if (key.length !== 32) throw new Error(`${file} does not hold a 32-byte base64 key`);
    return key;
  }
  const key = crypto.randomBytes(32);
  fs.mkdirSync(dataDir, { recursive: true });
  fs.writeFileSync(file, key.toString("base64") + "\n", { mode: 0o600, flag: "wx" });
  warn(
    `generated a master key in ${file}; back it up — without it the data cannot be read. ` +
      "Set RETASC_MASTER_KEY to manage it yourself.",
  );
  return key;
}

export const sha256 = (value: string) => crypto.createHash("sha256").update(value).digest("hex");

export function randomToken(prefix: string, bytes = 24): string {
  return prefix + crypto.randomBytes(bytes).toString("base64url");
}

export function constantTimeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  return ab.length === bb.length && crypto.timingSafeEqual(ab, bb);
}
