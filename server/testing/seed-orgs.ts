/**
 * Seeds orgs into the database a spawned app will serve (same environment as the app:
 * DATABASE_URL + RETASC_MASTER_KEY, or RETASC_DATA_DIR before the app holds it) and
 * prints them as JSON: `tsx server/testing/seed-orgs.ts RTSC OTH`. For HTTP tests.
 */
import crypto from "node:crypto";
import { connectors } from "../../db/schema/index.ts";
import { boot } from "../boot.ts";
import { loadConfig } from "../config/index.ts";
import { seedOrg } from "./fixtures.ts";

export interface SeededOrgJson {
  prefix: string;
  orgId: string;
  projectId: string;
  connectorId: string;
  people: Record<"alice" | "bob" | "carol", { userId: string; key: string; keyId: string }>;
}

const booted = await boot(loadConfig(), { warn: () => {}, poolSize: 2 });
try {
  const seeded: SeededOrgJson[] = [];
  for (const prefix of process.argv.slice(2)) {
    const org = await seedOrg(booted.services, { prefix, name: `Org ${prefix}` });
    const cipher = await booted.services.keyring.forOrg(booted.services.db, org.orgId);
    const connectorId = crypto.randomUUID();
    await booted.services.db.insert(connectors).values({
      id: connectorId,
      orgId: org.orgId,
      projectId: org.projectId,
      provider: "github",
      repo: `${prefix.toLowerCase()}/repo`,
      webhookSecretEnc: cipher.encrypt(crypto.randomBytes(16).toString("hex")),
    });
    const person = (who: "alice" | "bob" | "carol") => ({
      userId: org.agents[who].userId,
      key: org.agents[who].key,
      keyId: org.agents[who].principal.keyId!,
    });
    seeded.push({
      prefix,
      orgId: org.orgId,
      projectId: org.projectId,
      connectorId,
      people: { alice: person("alice"), bob: person("bob"), carol: person("carol") },
    });
  }
  process.stdout.write(JSON.stringify(seeded) + "\n");
} finally {
  await booted.close();
}
