import { Marked } from "marked";
import sanitizeHtml from "sanitize-html";

/**
 * Issue bodies are Markdown written by people and agents, so untrusted: rendered on the
 * server with marked, then cut down to an allow-list of tags and attributes. No raw HTML
 * survives except what the list allows; links keep only http(s)/mailto targets and open
 * nothing with the page's privileges. Images are dropped (no tracking pixels, no layout shift).
 */
const markdown = new Marked({ gfm: true, async: false });

const allowList: sanitizeHtml.IOptions = {
  allowedTags: [
    "h1", "h2", "h3", "h4", "h5", "h6", "p", "br", "hr", "blockquote", "pre", "code", "em", "strong", "del", "s",
    "ul", "ol", "li", "a", "table", "thead", "tbody", "tr", "th", "td", "input", "kbd", "sup", "sub",
  ],
  allowedAttributes: {
    a: ["href", "title", "rel"],
    code: ["class"],
    th: ["align"],
    td: ["align"],
    ol: ["start"],
    input: ["type", "checked", "disabled"],
  },
  allowedClasses: { code: [/^language-[\w-]+$/] },
  allowedSchemes: ["http", "https", "mailto"],
  allowProtocolRelative: false,
  disallowedTagsMode: "discard",
  exclusiveFilter: (frame) => frame.tag === "input" && frame.attribs.type !== "checkbox",
  transformTags: {
    a: sanitizeHtml.simpleTransform("a", { rel: "noopener noreferrer nofollow" }),
    input: (_tag, attribs) => ({ tagName: "input", attribs: { ...attribs, disabled: "" } }),
  },
};

export function renderMarkdown(source: string | null | undefined): string {
  if (!source) return "";
  return sanitizeHtml(markdown.parse(source, { async: false }), allowList);
}
