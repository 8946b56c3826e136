import fs from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { removeTemps, tempDir } from "../server/testing/temp-dirs.ts";
import { saveUploadForm } from "./upload.server.ts";

/**
 * The Dash's upload form (decision 037, issue 39 finding 4): the file goes to disk as its bytes
 * arrive, so an upload costs a buffer, never its size, and a file past the limit is cut there.
 */
afterAll(removeTemps);

const MiB = 1024 * 1024;
const boundary = "----retasc-upload-test";
const bytes = (text: string) => new TextEncoder().encode(text);
const head = bytes(
  `--${boundary}\r\nContent-Disposition: form-data; name="orgName"\r\n\r\nAcme\r\n` +
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="export.json"\r\nContent-Type: application/json\r\n\r\n`,
);
const tail = bytes(`\r\n--${boundary}--\r\n`);

/** A form post whose body the test feeds, a chunk at a time, as a slow client sends it. */
function slowUpload() {
  let feed!: ReadableStreamDefaultController<Uint8Array>;
  const body = new ReadableStream<Uint8Array>({ start: (controller) => void (feed = controller) });
  const request = new Request("http://localhost/dash/settings/transfer", {
    method: "POST",
    headers: { "content-type": `multipart/form-data; boundary=${boundary}` },
    body,
    duplex: "half",
  } as RequestInit & { duplex: "half" });
  return { request, feed };
}

async function until(check: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return check();
}

const sizeOf = (file: string) => (fs.existsSync(file) ? fs.statSync(file).size : 0);

describe("the upload form", () => {
  it("writes the file as its bytes arrive, before the body ends, into a 0600 file", async () => {
    const dir = tempDir("retasc-upload-");
    const { request, feed } = slowUpload();
    const saving = saveUploadForm(request, dir, { fileField: "file", maxBytes: 32 * MiB });
    const chunk = new Uint8Array(MiB).fill(0x20);
    feed.enqueue(head);
    for (let i = 0; i < 4; i++) feed.enqueue(chunk);
    // 4 MiB sent and the body still open: they are on disk already (busboy holds back at most a boundary's length).
    const target = path.join(dir, "upload");
    expect(await until(() => sizeOf(target) >= 4 * MiB - 1024, 10_000), `${sizeOf(target)} bytes on disk while the body is open`).toBe(true);
    feed.enqueue(chunk);
    feed.enqueue(tail);
    feed.close();
    const saved = await saving;
    expect(saved.orgName).toBe("Acme");
    expect(saved.file).toEqual({ path: target, bytes: 5 * MiB, truncated: false });
    expect(fs.statSync(target).mode & 0o777).toBe(0o600);
  });

  it("cuts a file past the limit there and marks it truncated, reading on to the end of the form", async () => {
    const dir = tempDir("retasc-upload-");
    const { request, feed } = slowUpload();
    const saving = saveUploadForm(request, dir, { fileField: "file", maxBytes: MiB });
    feed.enqueue(head);
    feed.enqueue(new Uint8Array(3 * MiB).fill(0x20));
    feed.enqueue(tail);
    feed.close();
    const saved = await saving;
    expect(saved.file).toMatchObject({ bytes: MiB, truncated: true });
    expect(sizeOf(saved.file!.path)).toBe(MiB);
  });
});
