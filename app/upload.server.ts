import fs from "node:fs";
import path from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import Busboy from "busboy";
import { invalidInput, unstorableText, unstorableTextIn } from "../server/errors.ts";
import type { SavedUpload } from "../server/transfer/import.ts";

/**
 * Reads a multipart form with one file as it arrives, writing the file into `dir` (mode 0600)
 * and keeping only the small fields in memory, so an upload costs a buffer, not its size. The
 * file is written up to `maxBytes` and its size counted; a larger one is cut there and marked
 * `truncated`, for the caller to refuse. A client that hangs up (or is cut off by the server's
 * request timeout) ends the read at once, so its place among the imports is freed.
 */
export async function saveUploadForm(request: Request, dir: string, { fileField, maxBytes }: { fileField: string; maxBytes: number }): Promise<SavedUpload & { fields: Record<string, string> }> {
  const contentType = request.headers.get("content-type") ?? "";
  if (!request.body || !/^multipart\/form-data\b/i.test(contentType)) {
    throw invalidInput("the request body is not a form with a file", "Submit the page's form (multipart/form-data).");
  }
  const fields: Record<string, string> = {};
  let file: SavedUpload["file"] = null;
  let writing: Promise<void> | null = null;
  const form = Busboy({ headers: { "content-type": contentType }, limits: { files: 1, fields: 8, fieldSize: 4096, parts: 10, fileSize: maxBytes } });
  form.on("field", (name, value) => {
    if (name !== "__proto__") fields[name] = value;
  });
  let unstorable: string | null = null;
  form.on("file", (name, stream, info) => {
    unstorable ??= unstorableTextIn({ [name]: info.filename ?? "" });
    if (name !== fileField || writing) {
      stream.resume();
      return;
    }
    const target = path.join(dir, "upload");
    const saved = { path: target, bytes: 0, truncated: false };
    file = saved;
    stream.on("data", (chunk: Buffer) => (saved.bytes += chunk.length));
    // Past the limit busboy gives no more bytes: the file is larger than the limit, by how much is not read.
    stream.on("limit", () => (saved.truncated = true));
    writing = pipeline(stream, fs.createWriteStream(target, { mode: 0o600 }));
  });
  try {
    // The body stream never ends when the client hangs up; the request's signal says so.
    await pipeline(Readable.fromWeb(request.body as unknown as NodeReadableStream), form, { signal: request.signal });
    await writing;
  } catch (error) {
    if ((error as { code?: string }).code === "INVALID_INPUT") throw error;
    throw invalidInput("the form could not be read", "Submit the page's form again.");
  }
  // As readForm refuses for every other page: no field (or file name) may hold text no column can store.
  const where = unstorable ?? unstorableTextIn(fields);
  if (where !== null) throw unstorableText(where);
  return { orgName: fields.orgName ?? "", file, fields };
}
