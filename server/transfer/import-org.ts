import { sql } from "drizzle-orm";
import { z } from "zod";
import { query, type Db } from "../../db/client.ts";
import type { Services } from "../context.ts";
import { DomainError, invalidInput } from "../errors.ts";
import { ImportRun } from "./import-run.ts";
import { orderedIds } from "./ordered-ids.ts";
import { openExport, type ReadLimits } from "./read-export.ts";

export const importInput = z.object({
  file: z.string({ error: "--file is required" }).trim().min(1, "--file is required"),
  "org-name": z.string({ error: "--org-name is required" }).trim().min(1, "--org-name is required").max(100),
});

/**
 * Brings a JSON export back as a new org, in one transaction (all or nothing): people matched
 * on email (created when new, as the operator commands do), every record checked as the live
 * tools check what they write (checks.ts) and re-encrypted under the new org's key, timestamps
 * and identifiers as exported, new ids throughout (so an org can be imported beside the one it
 * came from). Imported agent keys keep their record but no secret: nobody holds one, so they
 * authenticate nothing until revoked and replaced. The file is read a record at a time within
 * `limits` (read-export.ts).
 */
export async function importExport(
  services: Services,
  raw: z.input<typeof importInput>,
  options: { ownerUserId?: string; ownerEmail?: string; limits?: ReadLimits } = {},
) {
  const input = importInput.parse(raw);
  const { header, entries } = await openExport(input.file, options.limits);
  const now = services.clock.now();
  return services.db.transaction(async (tx) => {
    // One import per person at a time on every instance (the Dash's uploads; decision 037).
    if (options.ownerUserId !== undefined) await lockImporter(tx, options.ownerUserId);
    const newOrg = { name: input["org-name"], timeZone: header.org.timeZone, ownerUserId: options.ownerUserId, ownerEmail: options.ownerEmail };
    const run = new ImportRun(services, tx, newOrg, orderedIds(now), now);
    let position = 0;
    for await (const entry of entries) {
      position++;
      try {
        await run.take(entry);
      } catch (error) {
        throw malformed(error, `record ${position} (${entry.section})`);
      }
    }
    const orgId = await run.finish().catch((error: unknown) => {
      throw malformed(error, "the export's last records");
    });
    return { orgId, ...run.counts };
  });
}

/** RATE_LIMITED: another import of the person's is running, or this server runs as many as it takes (import.ts). */
export function busy(reason: "person" | "server", limit = 1): DomainError {
  return reason === "person"
    ? new DomainError("RATE_LIMITED", "another import of yours is still running: one at a time per person", "Wait until it finishes (its page comes back when it does), then try again.", { reason, limit })
    : new DomainError("RATE_LIMITED", `this server is already importing ${limit} exports, as many as it takes at once`, "Try again in a minute.", { reason, limit });
}

/** Holds the person's import lock to the end of the transaction, or refuses when another instance holds it. */
async function lockImporter(tx: Db, userId: string): Promise<void> {
  const [row] = await query<{ locked: boolean }>(tx, sql`select pg_try_advisory_xact_lock(hashtextextended(${`retasc:import:${userId}`}, 0)) as locked`);
  if (!row?.locked) throw busy("person");
}

/**
 * A record the import cannot take (a field missing or of the wrong type, a value the schema
 * refuses) is a bad file, said as such with where it is, never a stack trace.
 */
function malformed(error: unknown, where: string): DomainError {
  if (error instanceof DomainError) return new DomainError(error.code, `${where}: ${error.message}`, error.hint, error.details);
  return invalidInput(`${where} is malformed`, "Pass the file as the export wrote it; an edited export must keep every field of docs/export-format.md.");
}
