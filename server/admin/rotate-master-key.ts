import fs from "node:fs";
import path from "node:path";
import { sql } from "drizzle-orm";
import { z } from "zod";
import type { Services } from "../context.ts";
import { invalidInput } from "../errors.ts";

export const rotateMasterKeyInput = z.object({
  newMasterKey: z
    .string()
    .trim()
    .refine((value) => /^[A-Za-z0-9+/]{43}=$/.test(value) && Buffer.from(value, "base64").length === 32, "the new master key is 32 bytes in base64 (openssl rand -base64 32)"),
});

/**
 * `rotate-master-key`: re-wraps every org's data key under a new master key in one transaction
 * (content is untouched), with the org-key table locked so no org is created meanwhile. Every
 * instance and worker must be stopped first: a running one keeps the old key and would wrap a new
 * org's key under it. In the embedded mode the data dir's master.key is replaced: the new key is
 * written beside it before the transaction and moved over it after the commit, so a crash between
 * the two leaves master.key.next, which the command's error names. With RETASC_MASTER_KEY set,
 * the operator sets the new key there.
 */
export async function rotateMasterKey(services: Services, input: z.infer<typeof rotateMasterKeyInput>) {
  const newMaster = Buffer.from(input.newMasterKey, "base64");
  const { config } = services;
  const keyFile = config.RETASC_MASTER_KEY || config.DATABASE_URL ? null : path.resolve(config.RETASC_DATA_DIR, "master.key");
  const staged = keyFile ? `${keyFile}.next` : null;
  if (staged) fs.writeFileSync(staged, input.newMasterKey + "\n", { mode: 0o600 });
  let orgKeys: number;
  try {
    orgKeys = await services.db.transaction(async (tx) => {
      await tx.execute(sql`lock table org_keys in share row exclusive mode`);
      return services.keyring.rotateMasterTo(tx, newMaster);
    });
  } catch (error) {
    if (staged) fs.rmSync(staged, { force: true });
    throw error;
  }
  if (keyFile && staged) {
    try {
      fs.renameSync(staged, keyFile);
    } catch (error) {
      throw invalidInput(
        `the org keys are now wrapped under the new key, but ${keyFile} could not be replaced (${(error as Error).message})`,
        `Move ${staged} over ${keyFile} by hand before starting the server.`,
      );
    }
  }
  return {
    orgKeys,
    masterKey: keyFile ?? "RETASC_MASTER_KEY",
    next: keyFile
      ? "Start the server: it reads the new key from the data dir."
      : "Set RETASC_MASTER_KEY to the new key for every instance and worker, then start them.",
    ...(config.BETTER_AUTH_SECRET ? {} : { sessions: "BETTER_AUTH_SECRET is derived from the master key: everyone signs in again." }),
  };
}
