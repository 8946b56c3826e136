import { sha256 } from "../../crypto/index.ts";
import type { SourceAttachment, SourceIssue, SourcePerson } from "./stream.ts";

/**
 * Files a body or a comment names inline (an image pasted into a Linear description is
 * `![shot.png](https://uploads.linear.app/…)`) come over as files too. Otherwise they would point
 * at the source's uploads host, which serves them only with the source's credential. The adapter
 * adds each as an attachment marked `inline`. Staging downloads it like any file. The apply
 * points the text at the file's download path here, once it is one (./apply-children.ts).
 */

// A Markdown link or image target: `](url)`, `](<url>)` or `](url "title")`.
const TARGET = /(!?)\[([^\]\n]{0,500})\]\(\s*<?([^\s)<>]+)>?(?:\s+"[^"\n]*")?\s*\)/g;

export interface NamedFile {
  url: string;
  title: string;
}

/** The distinct urls the texts link to (image or link) that `isUpload` takes for the source's own files, with a name for each. */
export function filesNamed(texts: (string | null | undefined)[], isUpload: (url: string) => boolean): NamedFile[] {
  const found = new Map<string, NamedFile>();
  for (const text of texts) {
    if (!text) continue;
    for (const m of text.matchAll(TARGET)) {
      const url = m[3]!;
      if (found.has(url) || !isUpload(url)) continue;
      found.set(url, { url, title: (m[2]!.trim() || lastSegment(url)).slice(0, 500) });
    }
  }
  return [...found.values()];
}

function lastSegment(url: string): string {
  const name = new URL(url).pathname.split("/").filter(Boolean).at(-1) ?? "file";
  try {
    return decodeURIComponent(name);
  } catch {
    return name;
  }
}

/**
 * An issue's attachments with the files its texts name inline: an attachment the texts name is
 * marked `inline`, and a named file with no attachment becomes one. Its id is derived from the
 * issue's and the url, so a second run finds it again.
 */
export function withInlineFiles(issue: Pick<SourceIssue, "id" | "createdAt">, attachments: SourceAttachment[], named: NamedFile[], author: SourcePerson | null): SourceAttachment[] {
  const urls = new Set(named.map((n) => n.url));
  const listed = attachments.map((a) => (urls.has(a.url) ? { ...a, inline: true as const } : a));
  const attached = new Set(attachments.map((a) => a.url));
  const added = named
    .filter((n) => !attached.has(n.url))
    .map((n) => ({ id: `${issue.id}:inline:${sha256(n.url).slice(0, 32)}`, title: n.title, url: n.url, createdAt: issue.createdAt, author, file: { size: null }, inline: true as const }));
  return [...listed, ...added];
}

/** `text` with every url of `files` replaced by the path of the file it came over as. */
export function pointAtFiles<T extends string | null>(text: T, files: Map<string, string> | undefined): T {
  if (!text || !files || files.size === 0) return text;
  let out: string = text;
  for (const [url, path] of files) out = out.split(url).join(path);
  return out as T;
}
