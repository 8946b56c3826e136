import MarkdownIt from "markdown-it";

/**
 * Markdown to HTML for bodies and comments written by people and agents, so untrusted.
 * markdown-it, because its cost stays linear on hostile input where marked and micromark
 * go quadratic (docs/decisions/010-markdown-rendering.md). Safe by construction, with no
 * sanitizer pass: raw HTML is escaped, never parsed (`html: false`); every attribute comes
 * from the renderer itself; links and images keep only http(s)/mailto targets; an image is
 * shown as a link to it, never loaded (no tracking pixels, no layout shift). Runs in the
 * render worker (./worker.ts), never on the event loop of the app.
 */
const md = new MarkdownIt("default", {
  html: false,
  linkify: true,
  // Deeper structure is never written by hand; past it, blocks are cut and inline marks stay text.
  maxNesting: 20,
});

const SAFE_URL = /^(?:https?:\/\/|mailto:)/i;
/** A file kept here, which an imported body names by its download path (../transfer/pipeline/inline-files.ts); no other path. */
const ATTACHMENT_PATH = /^\/dash\/attachments\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
// Called on the normalized (percent-encoded) URL, so `java\tscript:` or `//host` cannot slip through.
md.validateLink = (url) => SAFE_URL.test(url) || ATTACHMENT_PATH.test(url);

const escape = md.utils.escapeHtml;
const REL = "noopener noreferrer nofollow";

md.renderer.rules.link_open = (tokens, idx, options, _env, self) => {
  // An empty target (`[text]()`, which markdown-it does not validate) is no link: its text stays.
  if (!tokens[idx]!.attrGet("href")) {
    const close = tokens.findIndex((t, i) => i > idx && t.type === "link_close");
    if (close !== -1) tokens[close]!.hidden = true;
    return "";
  }
  tokens[idx]!.attrSet("rel", REL);
  return self.renderToken(tokens, idx, options);
};

md.renderer.rules.link_close = (tokens, idx, options, _env, self) => (tokens[idx]!.hidden ? "" : self.renderToken(tokens, idx, options));

md.renderer.rules.image = (tokens, idx, options, env, self) => {
  const token = tokens[idx]!;
  const label = self.renderInlineAsText(token.children ?? [], options, env) || "image";
  if (!token.attrGet("src")) return escape(label);
  return `<a href="${escape(String(token.attrGet("src")))}" rel="${REL}">${escape(label)}</a>`;
};

// GFM task lists: `- [ ] todo` / `- [x] done` become disabled checkboxes, each labelled by its item's text.
const TASK = /^\[([ xX])\] /;
md.core.ruler.after("inline", "task_list", (state) => {
  const tokens = state.tokens;
  for (let i = 2; i < tokens.length; i++) {
    const inline = tokens[i]!;
    if (inline.type !== "inline" || tokens[i - 1]!.type !== "paragraph_open" || tokens[i - 2]!.type !== "list_item_open") continue;
    const first = inline.children?.[0];
    const match = first?.type === "text" ? TASK.exec(first.content) : null;
    if (!first || !match) continue;
    first.content = first.content.slice(match[0].length);
    const open = new state.Token("html_inline", "", 0);
    open.content = `<label><input type="checkbox" disabled${match[1] === " " ? "" : " checked"}> `;
    const close = new state.Token("html_inline", "", 0);
    close.content = "</label>";
    inline.children!.unshift(open);
    inline.children!.push(close);
  }
});

export function renderHtml(source: string): string {
  return md.render(source);
}
