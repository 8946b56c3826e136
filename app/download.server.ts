import type { OrgExport } from "../server/transfer/export.ts";

/**
 * An export as an HTTP download, read from the database only as fast as the client takes it
 * (pull-based: each chunk is produced when the stream asks for one). A failure mid-way errors
 * the stream, so the client sees a broken download rather than a short file that looks whole.
 */
export function exportResponse(download: OrgExport): Response {
  const chunks = download.chunks[Symbol.asyncIterator]();
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await chunks.next();
      if (next.done) controller.close();
      else controller.enqueue(encoder.encode(next.value));
    },
    async cancel() {
      await chunks.return?.();
    },
  });
  return new Response(body, {
    headers: {
      "content-type": download.contentType,
      "content-disposition": `attachment; filename="${download.filename}"`,
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
    },
  });
}
