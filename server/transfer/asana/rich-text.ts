import MarkdownIt from "markdown-it";
import { BODY_MAX_CHARS } from "../../issues/schemas.ts";

/**
 * Asana's rich text (`html_notes` on a task, `html_text` on a comment story) as Markdown.
 * Asana documents it as a small XML dialect inside `<body>`: strong, em, u, s, code, a (links,
 * and @-mentions of people, tasks and projects), h1, h2, ul, ol, li, blockquote, pre, hr,
 * table, and img/object for embedded files. No HTML-to-Markdown library is in the lockfile, and
 * the ones that exist need a DOM; this dialect is closed and small, so a tokenizer and a tree
 * walk of our own convert it (decision 092). What it does not know keeps its text; images and
 * embeds are dropped (their files come as attachments); only web and mail links stay links. The
 * result is rendered by our safe renderer like any body, so anything misread is shown, never run.
 */
interface Element {
  tag: string;
  attrs: Record<string, string>;
  children: Node[];
}
type Node = Element | string;

/** Past this depth a tag is ignored and its content joins its parent: recursion stays bounded. */
const MAX_DEPTH = 32;
/** Twice the body limit of input is more than any body that fits once its tags are gone. */
const MAX_INPUT = BODY_MAX_CHARS * 2;
const VOID = new Set(["br", "hr", "img"]);
const BLOCK = new Set(["body", "p", "div", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "blockquote", "pre", "hr", "table", "tr", "td", "th", "thead", "tbody", "img", "object"]);
const DROPPED = new Set(["img", "object", "script", "style"]);

// `\\` first, so the decoder's backslash escapes leave a literal backslash of the text alone.
const unescapeAll = new MarkdownIt().utils.unescapeAll;
const decode = (text: string) => unescapeAll(text.replace(/\\/g, "\\\\"));

// A tag is `<`, a name and anything but angle brackets: linear on any input, unlike an attribute grammar.
const TOKEN = /<(\/?)([a-zA-Z][a-zA-Z0-9]*)([^<>]*)>|<!--[\s\S]*?-->|[^<]+|</g;
const ATTR = /([^\s=/"']+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"']+))/g;

function parse(html: string): Element {
  const root: Element = { tag: "body", attrs: {}, children: [] };
  const stack: Element[] = [root];
  let ignored = 0;
  for (const m of html.slice(0, MAX_INPUT).matchAll(TOKEN)) {
    const top = stack.at(-1)!;
    if (m[2] === undefined) {
      if (!m[0].startsWith("<!--")) top.children.push(decode(m[0]));
      continue;
    }
    const tag = m[2].toLowerCase();
    if (m[1]) {
      const open = stack.findLastIndex((e, i) => i > 0 && e.tag === tag);
      if (open > 0) stack.length = open;
      else if (ignored > 0) ignored--;
      continue;
    }
    if (tag === "body") continue;
    const attrs: Record<string, string> = {};
    for (const a of (m[3] ?? "").matchAll(ATTR)) attrs[a[1]!.toLowerCase()] = decode(a[2] ?? a[3] ?? a[4] ?? "");
    const element: Element = { tag, attrs, children: [] };
    const selfClosing = VOID.has(tag) || (m[3] ?? "").trimEnd().endsWith("/");
    if (!selfClosing && stack.length > MAX_DEPTH) {
      ignored++;
      continue;
    }
    top.children.push(element);
    if (!selfClosing) stack.push(element);
  }
  return root;
}

const linkable = (url: string) => /^(https?:|mailto:)/i.test(url) && !/[\s<>]/.test(url);
/** Text that means itself in Markdown: punctuation Markdown reads is escaped, and so is a line start that opens a block. */
const escapeText = (text: string) =>
  text.replace(/[\\`*_[\]<>~&!]/g, "\\$&").replace(/^(\s*)([#+=-]|\d+[.)])/gm, "$1\\$2");

function textOf(node: Node): string {
  return typeof node === "string" ? node : DROPPED.has(node.tag) ? "" : node.children.map(textOf).join("");
}

/** Inline content as Markdown; a line break in Asana's text is a hard break. */
function inline(nodes: Node[]): string {
  return nodes.map(inlineNode).join("");
}

function wrap(mark: string, inner: string): string {
  const core = inner.trim();
  if (!core) return inner;
  const lead = inner.slice(0, inner.length - inner.trimStart().length);
  const trail = inner.slice(inner.trimEnd().length);
  return `${lead}${mark}${core}${mark}${trail}`;
}

function inlineNode(node: Node): string {
  if (typeof node === "string") return escapeText(node);
  switch (node.tag) {
    case "strong":
    case "b":
      return wrap("**", inline(node.children));
    case "em":
    case "i":
      return wrap("*", inline(node.children));
    case "s":
    case "strike":
    case "del":
      return wrap("~~", inline(node.children));
    case "code": {
      const code = textOf(node).replace(/\n/g, " ");
      const fence = "`".repeat(Math.max(0, ...[...code.matchAll(/`+/g)].map((r) => r[0].length)) + 1);
      return code ? `${fence}${code.startsWith("`") || code.endsWith("`") ? ` ${code} ` : code}${fence}` : "";
    }
    case "a": {
      const text = inline(node.children);
      const href = (node.attrs.href ?? "").trim();
      // An @-mention of a person is their name; a task or project mention keeps its link.
      if (node.attrs["data-asana-type"] === "user" || !linkable(href)) return text;
      return `[${text.trim() || escapeText(href)}](${/[()]/.test(href) ? `<${href}>` : href})`;
    }
    case "br":
      return "\n";
    default:
      return DROPPED.has(node.tag) ? "" : inline(node.children);
  }
}

/** A run of inline content as a paragraph: Asana's newlines are hard breaks, a blank line a new paragraph. */
function paragraph(nodes: Node[]): string {
  return inline(nodes)
    .split(/\n{2,}/)
    .map((p) => p.trim().split("\n").map((l) => l.trimEnd()).join("  \n"))
    .filter(Boolean)
    .join("\n\n");
}

function blocks(nodes: Node[]): string[] {
  const out: string[] = [];
  let run: Node[] = [];
  const flush = () => {
    const p = paragraph(run);
    if (p) out.push(p);
    run = [];
  };
  for (const node of nodes) {
    if (typeof node === "string" || !BLOCK.has(node.tag)) {
      run.push(node);
      continue;
    }
    flush();
    const b = block(node);
    if (b) out.push(b);
  }
  flush();
  return out;
}

const indent = (text: string, by: string) => text.split("\n").map((l, i) => (i === 0 || !l ? l : by + l)).join("\n");

function block(node: Element): string {
  switch (node.tag) {
    case "h1":
    case "h2":
    case "h3":
    case "h4":
    case "h5":
    case "h6": {
      const text = inline(node.children).replace(/\s+/g, " ").trim();
      return text ? `${"#".repeat(Number(node.tag[1]))} ${text}` : "";
    }
    case "hr":
      return "---";
    case "ul":
    case "ol": {
      const items = node.children.filter((c): c is Element => typeof c !== "string" && c.tag === "li");
      return items
        .map((li, i) => {
          const marker = node.tag === "ol" ? `${i + 1}. ` : "- ";
          const body = blocks(li.children).join("\n\n") || "\u200b";
          return marker + indent(body, " ".repeat(marker.length));
        })
        .join("\n");
    }
    case "blockquote":
      return blocks(node.children).join("\n\n").split("\n").map((l) => (l ? `> ${l}` : ">")).join("\n");
    case "pre": {
      const code = textOf(node).replace(/^\n/, "").replace(/\n$/, "");
      const fence = "`".repeat(Math.max(2, ...[...code.matchAll(/`+/g)].map((r) => r[0].length)) + 1);
      return `${fence}\n${code}\n${fence}`;
    }
    case "table":
      return table(node);
    default:
      return DROPPED.has(node.tag) ? "" : blocks(node.children).join("\n\n");
  }
}

function table(node: Element): string {
  const rows: Element[] = [];
  const collect = (n: Element) => {
    for (const c of n.children) if (typeof c !== "string") c.tag === "tr" ? rows.push(c) : collect(c);
  };
  collect(node);
  const cells = rows.map((r) =>
    r.children.filter((c): c is Element => typeof c !== "string" && (c.tag === "td" || c.tag === "th")).map((c) => inline(c.children).replace(/\s+/g, " ").trim().replace(/\|/g, "\\|")),
  );
  const width = Math.max(0, ...cells.map((r) => r.length));
  if (width === 0) return "";
  const line = (r: string[]) => `| ${Array.from({ length: width }, (_, i) => r[i] ?? "").join(" | ")} |`;
  return [line(cells[0]!), `|${" --- |".repeat(width)}`, ...cells.slice(1).map(line)].join("\n");
}

/** Asana's rich text as Markdown, or null when it holds nothing to show. */
export function asanaRichText(html: string | null | undefined): string | null {
  if (typeof html !== "string" || !html.trim()) return null;
  const markdown = blocks(parse(html).children).join("\n\n").trim();
  return markdown ? markdown.slice(0, BODY_MAX_CHARS) : null;
}
