import { describe, expect, it } from "vitest";
import { renderHtml } from "../../markdown/render.ts";
import { asanaRichText } from "./rich-text.ts";

// The examples follow Asana's rich text reference: a `<body>` root, newlines as line breaks.
describe("asanaRichText", () => {
  it("converts Asana's inline marks, links and mentions", () => {
    const md = asanaRichText(
      '<body>Ship <strong>the API</strong> with <em>care</em>, <s>not</s> <u>now</u> and <code>npm test</code>.\nSee <a href="https://example.com/spec?a=1&amp;b=2">the spec</a>; ask <a data-asana-gid="1200" data-asana-type="user" href="https://app.asana.com/0/profile/1200">@Ana Lee</a>.</body>',
    );
    expect(md).toBe("Ship **the API** with *care*, ~~not~~ now and `npm test`.  \nSee [the spec](https://example.com/spec?a=1&b=2); ask @Ana Lee.");
    const html = renderHtml(md!);
    expect(html).toContain("<strong>the API</strong>");
    expect(html).toContain('<a href="https://example.com/spec?a=1&amp;b=2"');
    expect(html).toContain("<br>");
    expect(html).not.toContain("profile/1200");
  });

  it("converts headings, nested lists, quotes, code blocks, rules and tables", () => {
    const md = asanaRichText(
      "<body><h1>Plan</h1><ul><li>one<ul><li>one.a</li></ul></li><li>two</li></ul><ol><li>first</li><li>second</li></ol>" +
        "<blockquote>quoted\nline</blockquote><pre>const x = `a`;\n```\n</pre><hr/><h2>Table</h2>" +
        "<table><tr><td>a|b</td><td><strong>c</strong></td></tr><tr><td>1</td><td>2</td></tr></table></body>",
    );
    expect(md).toBe(
      [
        "# Plan",
        "- one\n\n  - one.a\n- two",
        "1. first\n2. second",
        "> quoted  \n> line",
        "````\nconst x = `a`;\n```\n````",
        "---",
        "## Table",
        "| a\\|b | **c** |\n| --- | --- |\n| 1 | 2 |",
      ].join("\n\n"),
    );
    const html = renderHtml(md!);
    expect(html).toMatch(/<h1>Plan<\/h1>/);
    expect(html).toMatch(/<ul>\s*<li>[\s\S]*<ul>\s*<li>one\.a<\/li>/);
    expect(html).toMatch(/<ol>\s*<li>first<\/li>/);
    expect(html).toMatch(/<blockquote>/);
    expect(html).toContain("<pre><code>const x = `a`;\n```\n</code></pre>");
    expect(html).toContain("<table>");
  });

  it("keeps text that looks like Markdown as text, and entities as their characters", () => {
    const md = asanaRichText("<body># not a heading\n- not a list\n*not em* [not](a link) &lt;b&gt; &amp;copy; back\\slash</body>");
    const html = renderHtml(md!);
    expect(html).not.toMatch(/<h1|<ul|<em|<a /);
    expect(html).toContain("# not a heading");
    expect(html).toContain("*not em* [not](a link) &lt;b&gt; &amp;copy; back\\slash");
  });

  it("leaves hostile markup inert: no script, no handler, no script link, embeds dropped", () => {
    const md = asanaRichText(
      '<body><script>alert(1)</script><img src=x onerror="alert(2)"><a href="javascript:alert(3)">click</a> <a href=" JaVaScRiPt:alert(4)">two</a>' +
        '<object type="asana/task" data-asana-gid="9"></object><a href="data:text/html,x">three</a><iframe src="https://evil.example"></iframe>[x](javascript:alert(5))</body>',
    );
    const html = renderHtml(md!);
    expect(html).not.toMatch(/<script|<img|<iframe|<a [^>]*href="(javascript|data)|<[a-z][^>]*\son\w+=/i);
    expect(html).toContain("click");
    expect(html).not.toContain("alert(1)");
  });

  it("stays linear and bounded on deep or unclosed input", () => {
    const deep = `<body>${"<ul><li>".repeat(5000)}x${"</li></ul>".repeat(5000)}</body>`;
    const md = asanaRichText(deep)!;
    expect(md).toContain("x");
    expect(md.length).toBeLessThan(100_000);
    const unclosed = `<body>${"<strong><em>".repeat(10_000)}end`;
    const started = performance.now();
    expect(asanaRichText(unclosed)).toContain("end");
    const attrs = `<body><a ${"x=1 ".repeat(50_000)}`;
    expect(asanaRichText(attrs)).not.toBeNull();
    // A quadratic walk of these takes seconds; a linear one a few milliseconds.
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it("answers null for empty rich text", () => {
    expect(asanaRichText("<body></body>")).toBeNull();
    expect(asanaRichText("")).toBeNull();
    expect(asanaRichText(undefined)).toBeNull();
  });
});
