import fs from "node:fs";
import path from "node:path";
import MarkdownIt from "markdown-it";
import { escapeHtml, sitePage } from "./page.ts";

/**
 * The repository's own docs/, served at /docs so a person or an agent on this server reads the
 * operator guide, the security model, the tool reference and the decisions of the code it runs.
 * The files are ours, not users' text: relative links between them are kept (pointed at the
 * served pages), headings get anchors for a table of contents. Raw HTML stays escaped.
 */
export interface PublicDoc {
  /** The served path under /docs/: `operations`, `decisions/041-org-deletion-by-crypto-shredding`. */
  slug: string;
  title: string;
}

export interface RenderedDoc extends PublicDoc {
  markdown: string;
  html: string;
  headings: { level: number; text: string; id: string }[];
}

/** The docs of the code this server runs, from its working directory (as the build is: RETASC_BUILD_DIR). */
const DOCS_DIR = path.resolve("docs");

const SLUG = /^(?:decisions\/)?[a-z0-9][a-z0-9-]*$/;

const md = new MarkdownIt("default", { html: false, linkify: true, maxNesting: 20 });
// Our own files: web links, mail, anchors and relative links between the docs; no other scheme.
md.validateLink = (url) => /^(?:https?:\/\/|mailto:|#)/i.test(url) || !/^[a-z][a-z0-9+.-]*:/i.test(url);
md.renderer.rules.link_open = (tokens, idx, options, _env, self) => {
  const token = tokens[idx]!;
  const href = String(token.attrGet("href") ?? "");
  // `security.md#roles` → `security#roles`: the served page, not its Markdown twin.
  if (!/^[a-z][a-z0-9+.-]*:/i.test(href)) token.attrSet("href", href.replace(/\.md(?=$|#)/, ""));
  else token.attrSet("rel", "noopener noreferrer");
  return self.renderToken(tokens, idx, options);
};

// A wide table scrolls sideways on a phone (site.css); keyboard users must be able to reach it too.
md.renderer.rules.table_open = (tokens, idx, options, _env, self) => {
  tokens[idx]!.attrSet("tabindex", "0");
  return self.renderToken(tokens, idx, options);
};

const slugify = (text: string) =>
  text
    .toLowerCase()
    .replace(/[^a-z0-9\s-]/g, "")
    .trim()
    .replace(/\s+/g, "-") || "section";

/** Our own Markdown (docs, the public pages) as HTML, with its headings for a table of contents. */
export function renderOwnMarkdown(markdown: string): Pick<RenderedDoc, "html" | "headings"> {
  const tokens = md.parse(markdown, {});
  const headings: RenderedDoc["headings"] = [];
  const used = new Map<string, number>();
  tokens.forEach((token, i) => {
    if (token.type !== "heading_open") return;
    const text = tokens[i + 1]?.children?.map((c) => c.content).join("") ?? "";
    // As GitHub names them, so the docs' own `#anchor` links work here too.
    const base = slugify(text);
    const n = used.get(base) ?? 0;
    used.set(base, n + 1);
    const id = n === 0 ? base : `${base}-${n}`;
    token.attrSet("id", id);
    headings.push({ level: Number(token.tag.slice(1)), text, id });
  });
  return { html: md.renderer.render(tokens, md.options, {}), headings };
}

const titleOf = (markdown: string, slug: string) => /^#\s+(.+)$/m.exec(markdown)?.[1]?.trim() ?? slug;

/** The Markdown files of a folder (not below it) as names without `.md`, each after `prefix`, sorted. */
export const markdownNames = (dir: string, prefix: string): string[] =>
  fs.existsSync(dir)
    ? fs
        .readdirSync(dir)
        .filter((file) => file.endsWith(".md"))
        .sort()
        .map((file) => `${prefix}${file.slice(0, -3)}`)
    : [];

/** Every served doc, the top-level ones first, then the decisions in order. */
export function publicDocs(docsDir = DOCS_DIR): PublicDoc[] {
  const slugs = [...markdownNames(docsDir, ""), ...markdownNames(path.join(docsDir, "decisions"), "decisions/")].filter((slug) => SLUG.test(slug));
  return slugs.map((slug) => ({ slug, title: titleOf(fs.readFileSync(path.join(docsDir, `${slug}.md`), "utf8"), slug) }));
}

const cache = new Map<string, RenderedDoc>();

/** One doc by its slug, rendered (once per process: the files are the build's), or null. */
export function readDoc(slug: string, docsDir = DOCS_DIR): RenderedDoc | null {
  if (!SLUG.test(slug)) return null;
  const file = path.join(docsDir, `${slug}.md`);
  const hit = cache.get(file);
  if (hit) return hit;
  if (!fs.existsSync(file)) return null;
  const markdown = fs.readFileSync(file, "utf8");
  const doc = { slug, title: titleOf(markdown, slug), markdown, ...renderOwnMarkdown(markdown) };
  cache.set(file, doc);
  return doc;
}

/** `/docs`: every doc by title, the decisions after. */
export function docIndexPage(origin: string): string {
  const docs = publicDocs();
  const item = (d: PublicDoc) => `<li><a href="/docs/${d.slug}">${escapeHtml(d.title)}</a></li>`;
  const body = [
    "<h1>Docs</h1>",
    "<p>The docs of the code this server runs. Each page is also Markdown: add <code>.md</code> to its address.</p>",
    `<ul>${docs.filter((d) => !d.slug.startsWith("decisions/")).map(item).join("")}</ul>`,
    "<h2>Decisions</h2>",
    `<ul>${docs.filter((d) => d.slug.startsWith("decisions/")).map(item).join("")}</ul>`,
  ].join("\n");
  return sitePage({ origin, path: "/docs", title: "Docs · Retasc", description: "How this Retasc server works: operations, security, reliability, the MCP tools, and the decisions behind them.", body });
}

/** `/docs/<slug>`: the doc with a table of contents of its sections. */
export function docPage(origin: string, doc: RenderedDoc): string {
  const sections = doc.headings.filter((h) => h.level === 2);
  const contents =
    sections.length > 1
      ? `<nav class="contents" aria-label="Contents"><ol>${sections.map((h) => `<li><a href="#${h.id}">${escapeHtml(h.text)}</a></li>`).join("")}</ol></nav>`
      : "";
  return sitePage({
    origin,
    path: `/docs/${doc.slug}`,
    title: `${doc.title} · Retasc docs`,
    description: `${doc.title}: from the docs of the Retasc server at ${origin}.`,
    body: `${contents}\n${doc.html}`,
    markdownPath: `/docs/${doc.slug}.md`,
  });
}
