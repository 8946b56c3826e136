import { describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { downloadPath } from "../issues/attachments-files.ts";
import { renderHtml } from "./render.ts";

describe("renderHtml", () => {
  it("keeps Markdown structure: headings, tables, task lists, code, emphasis, links, quotes", () => {
    const html = renderHtml(
      [
        "# Title",
        "| a | b |\n|:--|--:|\n| 1 | 2 |",
        "- [x] done\n- [ ] todo",
        "```js\nconst a = 1;\n```",
        "**bold** _em_ ~~gone~~ `code` [ok](https://ok.example \"t\") <https://auto.example> mail@example.com",
        "> quoted",
      ].join("\n\n"),
    );
    expect(html).toContain("<h1>Title</h1>");
    expect(html).toMatch(/<table>[\s\S]*<th style="text-align:left">a<\/th>/);
    expect(html).toContain('<li><label><input type="checkbox" disabled checked> done</label></li>');
    expect(html).toContain('<li><label><input type="checkbox" disabled> todo</label></li>');
    expect(html).toContain('<code class="language-js">');
    expect(html).toContain("<strong>bold</strong> <em>em</em> <s>gone</s> <code>code</code>");
    expect(html).toContain('<a href="https://ok.example" title="t" rel="noopener noreferrer nofollow">ok</a>');
    expect(html).toContain('<a href="https://auto.example" rel="noopener noreferrer nofollow">');
    expect(html).toContain('<a href="mailto:mail@example.com" rel="noopener noreferrer nofollow">');
    expect(html).toContain("<blockquote>");
  });

  it("leaves hostile HTML and script URLs inert", () => {
    const html = renderHtml(
      [
        '<img src=x onerror="alert(1)"> <iframe src="https://evil"></iframe> <a href="https://ok.example" onclick="x()">raw</a>',
        "<script>alert(1)</script>",
        "<div onmouseover=alert(1)>\nblock html\n</div>",
        "[js](javascript:alert(1)) [JS](JAVASCRIPT:alert(1)) [tab](java\tscript:alert(1)) [ent](javascript&colon;alert(1))",
        "[vb](vbscript:msgbox) [data](data:text/html,hi) [file](file:///etc/passwd) [proto](//evil.example) [rel](/dash/keys)",
        "<javascript:alert(1)> ![pixel](https://tracker.example/p.gif) ![js](javascript:alert(1)) ![data](data:image/png;base64,AAAA)",
        "[ref][1]\n\n[1]: javascript:alert(1)",
        '```js" onmouseover="alert(1)\ncode\n```',
        '[t](https://ok.example "a\\" onmouseover=\\"x")',
      ].join("\n\n"),
    );
    // Every tag and attribute is one the renderer writes; raw HTML shows as text.
    const tags = [...html.matchAll(/<([a-z0-9]+)([^>]*)>/g)];
    expect(new Set(tags.map((t) => t[1]))).toEqual(new Set(["p", "a", "pre", "code"]));
    const attributes = tags.flatMap((t) => [...t[2]!.matchAll(/\s([a-z-]+)(?:="[^"]*")?/g)].map((a) => a[1]));
    expect(new Set(attributes)).toEqual(new Set(["href", "rel", "class", "title"]));
    expect(html).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(html).toContain("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;");
    // Link targets are http(s) only, and an image is a link to it, never loaded.
    const hrefs = [...html.matchAll(/href="([^"]*)"/g)].map((m) => m[1]);
    expect(hrefs.filter((h) => !/^https:\/\/[a-z.]+\.example(\/[a-z.]*)?$|^https:\/\/evil$/.test(h!))).toEqual([]);
    expect(html).toContain('<a href="https://tracker.example/p.gif" rel="noopener noreferrer nofollow">pixel</a>');
    expect(html).toContain('<a href="https://ok.example" title="a&quot; onmouseover=&quot;x" rel="noopener noreferrer nofollow">t</a>');
  });

  it("links a file kept here by its download path, and no other path", () => {
    const path = downloadPath(randomUUID());
    expect(renderHtml(`![shot.png](${path})`)).toContain(`<a href="${path}" rel="noopener noreferrer nofollow">shot.png</a>`);
    const html = renderHtml(`[a](/dash/attachments/../keys) [b](/dash/attachments/x) [c](${path}/../../keys) [d](//evil${path})`);
    expect(html).not.toContain("<a ");
  });

  it("renders 99,000 nested quotes without throwing, cutting the structure past the nesting limit", () => {
    const html = renderHtml(">".repeat(99_000));
    expect(html.match(/<blockquote>/g)!.length).toBeLessThanOrEqual(20);
  });
});
