import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { eq } from "drizzle-orm";
import { user } from "../../db/schema/index.ts";
import type { Ctx, Services } from "../context.ts";
import { invalidInput } from "../errors.ts";
import { actorOf, requireRole } from "../orgs/access.ts";
import { busy, importExport } from "./import-org.ts";
import { refuseWhileFrozen } from "../orgs/freeze.ts";
import type { ReadLimits } from "./read-export.ts";

/**
 * The import of our own JSON export: the Dash's upload here, the import itself (a new org, one
 * transaction) in import-org.ts, the records it takes in import-run.ts and import-issue.ts.
 */
export { importExport, importInput } from "./import-org.ts";

/**
 * The largest export the Dash takes as an upload. The form is streamed to a private file as it
 * arrives (never held in memory) and the export read from it a record at a time; a larger org
 * comes back through `npm run admin -- import`, which reads the same way with wider limits.
 */
export const UPLOAD_MAX_BYTES = 32 * 1024 * 1024;
/** The path the upload is posted to, and what the form around the file may add to its body. */
export const UPLOAD_PATH = "/dash/settings/transfer";
export const UPLOAD_FORM_SLACK_BYTES = 64 * 1024;

/**
 * What reading one uploaded export may cost (read-export.ts): a record no larger than the upload,
 * parsing at most 200,000 values at once (an issue with thousands of comments holds far fewer),
 * and a turn of the event loop for other requests every 10 ms.
 */
export const UPLOAD_READ_LIMITS: ReadLimits = { recordBytes: UPLOAD_MAX_BYTES, recordValues: 200_000, depth: 32, sliceMs: 10 };

/** The form an upload arrives in, saved into a private folder by the door that reads it. */
export interface SavedUpload {
  orgName: string;
  /** The saved file and its size in bytes (cut at the limit, and `truncated`, when larger), or null when none was chosen. */
  file: { path: string; bytes: number; truncated: boolean } | null;
}

/**
 * The Dash's import of an uploaded export into a new org the uploader owns (decision 037). In
 * this order, so a refusal costs nothing: the uploader must be an owner or admin of the org they
 * are in (as for export); they may run one import at a time (per process here, on every instance
 * under a database lock) and the process `IMPORT_UPLOADS_AT_ONCE`, or it is refused
 * `RATE_LIMITED` saying which; only then is the body read, by `save`, into a private temporary
 * folder removed afterwards, and imported as the admin command does, within UPLOAD_READ_LIMITS.
 */
export async function importUpload(ctx: Ctx, save: (dir: string) => Promise<SavedUpload>) {
  refuseWhileFrozen(ctx.principal);
  const actor = await actorOf(ctx);
  requireRole(actor, ["owner", "admin"], "importing an export");
  const release = takeImportSlot(ctx.config, actor.userId);
  const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), "retasc-import-"));
  try {
    const upload = await save(dir);
    const orgName = upload.orgName.trim();
    if (!orgName || orgName.length > 100) throw invalidInput("the new org needs a name of 1 to 100 characters", "Name the org the export becomes.");
    const { file } = upload;
    if (!file || file.bytes === 0) throw invalidInput("no file was chosen", "Choose the .json file the Export card downloads.");
    if (file.truncated || file.bytes > UPLOAD_MAX_BYTES) {
      throw invalidInput(
        `the file is larger than ${UPLOAD_MAX_BYTES} bytes, the most an upload may be (32 MiB)`,
        "A larger export comes back through `npm run admin -- import --file <export.json> --org-name <name>` on the server.",
      );
    }
    const [uploader] = await ctx.db.select({ email: user.email }).from(user).where(eq(user.id, actor.userId));
    return await importExport(ctx, { file: file.path, "org-name": orgName }, { ownerUserId: actor.userId, ownerEmail: uploader?.email, limits: UPLOAD_READ_LIMITS });
  } finally {
    await fs.promises.rm(dir, { recursive: true, force: true });
    release();
  }
}

/** The Dash's imports running in this process, and whose. */
const running = { count: 0, people: new Set<string>() };

/** A place for one upload of `userId` in this process, or RATE_LIMITED saying why not; the returned function frees it. */
function takeImportSlot(config: Services["config"], userId: string): () => void {
  if (running.people.has(userId)) throw busy("person");
  if (running.count >= config.IMPORT_UPLOADS_AT_ONCE) throw busy("server", config.IMPORT_UPLOADS_AT_ONCE);
  running.count++;
  running.people.add(userId);
  let freed = false;
  return () => {
    if (freed) return;
    freed = true;
    running.count--;
    running.people.delete(userId);
  };
}
