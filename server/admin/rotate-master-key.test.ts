import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { Keyring } from "../crypto/index.ts";
import { createIssue } from "../issues/create.ts";
import { issues } from "../../db/schema/index.ts";
import { eq } from "drizzle-orm";
import { runEntry, migratedDataDir } from "../testing/app-process.ts";
import { testConfig, testDriver } from "../testing/db.ts";
import { useTestServices } from "../testing/database.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { rotateMasterKey } from "./rotate-master-key.ts";

const newKey = () => crypto.randomBytes(32).toString("base64");

describe("rotating the master key", () => {
  const oldMaster = crypto.randomBytes(32);
  const env = useTestServices({ config: testConfig({ RETASC_MASTER_KEY: oldMaster.toString("base64") }), keyring: new Keyring(oldMaster) });

  test("re-wraps every org's key: the content opens with the new key only, and is not rewritten", async () => {
    const org = await seedOrg(env.services);
    const created = await createIssue(org.agents.alice.ctx, { title: "Keep this readable", work: true, changeType: "feat", noDependency: "independent" });
    const [before] = await env.services.db.select().from(issues).where(eq(issues.identifier, created.identifier));
    const next = newKey();

    const result = await rotateMasterKey(env.services, { newMasterKey: next });
    expect(result.orgKeys).toBeGreaterThanOrEqual(1);
    expect(result.masterKey).toBe("RETASC_MASTER_KEY");

    const [after] = await env.services.db.select().from(issues).where(eq(issues.identifier, created.identifier));
    expect(after!.titleEnc).toBe(before!.titleEnc);
    const opened = await new Keyring(Buffer.from(next, "base64")).forOrg(env.services.db, org.orgId);
    expect(opened.decrypt(after!.titleEnc)).toBe("Keep this readable");
    await expect(new Keyring(oldMaster).forOrg(env.services.db, org.orgId)).rejects.toThrow();
  });

  test("refuses the key it already has, and changes nothing", async () => {
    const next = newKey();
    const keyring = new Keyring(Buffer.from(next, "base64"));
    const services = { ...env.services, keyring };
    await rotateMasterKey(env.services, { newMasterKey: next }).catch(() => {});
    await expect(rotateMasterKey(services, { newMasterKey: next })).rejects.toMatchObject({ code: "INVALID_INPUT", message: "the new master key is the current one" });
  });
});

// The embedded mode has no database server: it runs once, in the PGlite run of the suite.
describe.skipIf(testDriver !== "pglite")("npm run admin -- rotate-master-key, in the embedded mode", () => {
  const admin = (dir: string, args: string[], input?: string) => runEntry("server/admin/main.ts", args, { RETASC_DATA_DIR: dir }, input);

  test("takes the new key on stdin, replaces the data dir's master.key, and the data still opens", async () => {
    const dir = migratedDataDir();
    try {
      const boot = admin(dir, ["bootstrap", "--org", "Acme", "--project", "Core", "--prefix", "CORE", "--email", "ops@example.com", "--json"]);
      expect(boot.status, boot.stderr).toBe(0);
      const { orgId } = JSON.parse(boot.stdout) as { orgId: string };
      const keyFile = path.join(dir, "master.key");
      const original = fs.readFileSync(keyFile, "utf8");

      const bad = admin(dir, ["rotate-master-key", "--json"], "not a key\n");
      expect(bad.status).toBe(1);
      expect(bad.stderr).toContain("32 bytes in base64");
      expect(bad.stderr).not.toContain("    at ");
      expect(fs.readFileSync(keyFile, "utf8")).toBe(original);

      const next = newKey();
      const rotated = admin(dir, ["rotate-master-key", "--json"], `${next}\n`);
      expect(rotated.status, rotated.stderr).toBe(0);
      expect(JSON.parse(rotated.stdout)).toMatchObject({ orgKeys: 1, masterKey: keyFile });
      expect(rotated.stdout + rotated.stderr).not.toContain(next);
      expect(fs.readFileSync(keyFile, "utf8").trim()).toBe(next);
      expect(fs.statSync(keyFile).mode & 0o777).toBe(0o600);
      expect(fs.existsSync(`${keyFile}.next`)).toBe(false);

      // The next process reads the new key from the data dir, and the org's content opens with it.
      const exported = admin(dir, ["export", "--org", orgId, "--format", "json"]);
      expect(exported.status, exported.stderr).toBe(0);
      expect(exported.stdout).toContain('"Core"');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 300_000);
});
