/**
 * The content type of an attached file, from its first bytes, never from its name or the
 * uploader's word: what the Dash serves it as depends on it. A small table of our own (the
 * formats agents attach: screenshots, PDFs, archives, logs, JSON traces) rather than a
 * library: the well-known ones (file-type) are ESM-only streams over a hundred formats, none
 * of which tells HTML or SVG apart from text, and that is the distinction that matters here.
 */
const signatures: { type: string; at?: number; bytes: number[] | string }[] = [
  { type: "image/png", bytes: [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a] },
  { type: "image/jpeg", bytes: [0xff, 0xd8, 0xff] },
  { type: "image/gif", bytes: "GIF87a" },
  { type: "image/gif", bytes: "GIF89a" },
  { type: "image/webp", at: 8, bytes: "WEBP" },
  { type: "application/pdf", bytes: "%PDF-" },
  { type: "application/zip", bytes: [0x50, 0x4b, 0x03, 0x04] },
  { type: "application/zip", bytes: [0x50, 0x4b, 0x05, 0x06] },
  { type: "application/gzip", bytes: [0x1f, 0x8b, 0x08] },
];

const matches = (bytes: Buffer, at: number, expected: number[] | string) => {
  const want = typeof expected === "string" ? Buffer.from(expected, "latin1") : Buffer.from(expected);
  return bytes.length >= at + want.length && bytes.subarray(at, at + want.length).equals(want);
};

/** Markup a browser would render as a page (WHATWG MIME sniffing's HTML patterns), SVG and other XML. */
const MARKUP = /^\s*<(?:!doctype\s+html|html|head|body|script|iframe|h1|div|font|table|a|style|title|b|br|p|svg|\?xml|!--)[\s>/]/i;

export function sniffContentType(bytes: Buffer): string {
  for (const s of signatures) {
    if (matches(bytes, s.at ?? 0, s.bytes) && (s.type !== "image/webp" || matches(bytes, 0, "RIFF"))) return s.type;
  }
  const text = utf8Text(bytes);
  if (text === null) return "application/octet-stream";
  const head = text.slice(0, 1024).replace(/^\uFEFF/, "");
  if (MARKUP.test(head)) return /^\s*<(?:\?xml|svg)/i.test(head) ? (/<svg[\s>]/i.test(text.slice(0, 4096)) ? "image/svg+xml" : "application/xml") : "text/html";
  if (/^\s*[[{]/.test(head) && isJson(text)) return "application/json";
  return "text/plain; charset=utf-8";
}

/** The bytes as text if they are UTF-8 without control characters a text file does not hold (NUL and the like). */
function utf8Text(bytes: Buffer): string | null {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return null;
  }
  return /[\u0000-\u0008\u000e-\u001a\u001c-\u001f\u007f]/.test(text) ? null : text;
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** Types a browser shows as an image and nothing more: served inline (thumbnails); everything else downloads. */
const INLINE_IMAGES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);
export const isInlineImage = (contentType: string) => INLINE_IMAGES.has(contentType);

/**
 * What the Dash's download answers with: images inline, everything else as an attachment,
 * and markup a browser would run (HTML, SVG, XML) as opaque bytes, so a file can never
 * become a page on our origin. Always with nosniff, so the browser takes the type as given.
 */
export function downloadHeaders(filename: string, contentType: string, size: number): Record<string, string> {
  const inline = isInlineImage(contentType);
  const served = /html|svg|xml/.test(contentType) ? "application/octet-stream" : contentType;
  const ascii = filename.replace(/[^\x20-\x7e]|["\\]/g, "_");
  return {
    "content-type": served,
    "content-length": String(size),
    "content-disposition": `${inline ? "inline" : "attachment"}; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename)}`,
    "x-content-type-options": "nosniff",
    "content-security-policy": "default-src 'none'; sandbox",
    "cache-control": "private, no-store",
  };
}
