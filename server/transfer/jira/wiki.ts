import { BODY_MAX_CHARS } from "../../issues/schemas.ts";

/**
 * Jira's wiki markup (the bodies of REST v2, which Data Center speaks) as Markdown, by a small
 * converter of its common parts (decision 074): headings, quotes, lists, tables, code and
 * noformat blocks, rules, bold, italic, strikethrough, monospace, links and mentions. Images are
 * dropped (attachments come on their own); colour, panel and other macros keep their text; what
 * it does not know passes as text. Only web and mail links become links. The result is Markdown
 * rendered by our safe renderer like any body, so markup it misreads is shown, never run.
 */
const FENCE = "```";
/** A code block's content may not close its fence early. */
const unfence = (line: string) => line.replace(/`{3,}/g, (run) => run.split("").join("\u200b"));
const linkable = (url: string) => /^(https?:|mailto:)/i.test(url) && !/[\s()<>]/.test(url);

/** One line's inline markup. Monospace is set aside first, so nothing inside it is converted. */
export function wikiInline(line: string): string {
  const spans: string[] = [];
  const hold = (text: string) => `\u0000${spans.push(text) - 1}\u0000`;
  let s = line.replace(/\{\{(.+?)\}\}/g, (_, code: string) => hold(`\`${code.replace(/`/g, "'")}\``));
  s = s.replace(/![^!\s|][^!|]*(?:\|[^!]*)?!/g, "");
  s = s.replace(/\{color(?::[^}]*)?\}/g, "");
  s = s.replace(/\[~([^\]]+)\]/g, (_, who: string) => hold(`@${who.replace(/^accountid:/, "")}`));
  s = s.replace(/\[([^\]|]*)\|([^\]]*)\]/g, (_, text: string, url: string) => hold(linkable(url.trim()) ? `[${text.trim() || url.trim()}](${url.trim()})` : text));
  s = s.replace(/\[([^\]|\s]+)\]/g, (whole, url: string) => (linkable(url) ? hold(`<${url}>`) : url.startsWith("^") ? url.slice(1) : whole));
  const inline = (mark: string, to: string) => {
    const m = mark.replace(/[*+^-]/g, "\\$&");
    s = s.replace(new RegExp(`(^|[\\s(\\[>])${m}(\\S(?:[^${m}]*\\S)?)${m}(?=$|[\\s).,:;!?\\]])`, "g"), (_, before: string, text: string) => `${before}${to}${text}${to}`);
  };
  inline("*", "**");
  inline("_", "*");
  inline("-", "~~");
  inline("+", "");
  s = s.replace(/\\\\/g, "  \n");
  return s.replace(/\u0000(\d+)\u0000/g, (_, i: string) => spans[Number(i)]!);
}

const cells = (row: string, sep: RegExp) => row.replace(/^\|\|?/, "").replace(/\|\|?\s*$/, "").split(sep).map((c) => wikiInline(c.trim()).replace(/\|/g, "\\|"));

export function wikiToMarkdown(wiki: string | null | undefined): string | null {
  if (typeof wiki !== "string" || !wiki.trim()) return null;
  const out: string[] = [];
  let block: "code" | "noformat" | "quote" | null = null;
  for (const raw of wiki.replace(/\r\n?/g, "\n").split("\n")) {
    const line = raw.trimEnd();
    if (block === "code" || block === "noformat") {
      const end = line.indexOf(`{${block}}`);
      if (end === -1) {
        out.push(unfence(line));
        continue;
      }
      if (end > 0) out.push(unfence(line.slice(0, end)));
      out.push(FENCE);
      block = null;
      continue;
    }
    const code = /^\s*\{(code|noformat)(?::([^}]*))?\}(.*)$/.exec(line);
    if (code) {
      if (out.at(-1)) out.push("");
      const language = code[1] === "code" ? (code[2] ?? "").split("|")[0]!.trim() : "";
      out.push(`${FENCE}${/^[\w+-]{1,30}$/.test(language) && !language.includes("=") ? language : ""}`);
      const rest = code[3] ?? "";
      const end = rest.indexOf(`{${code[1]}}`);
      if (end >= 0) {
        if (end > 0) out.push(unfence(rest.slice(0, end)));
        out.push(FENCE);
      } else {
        if (rest) out.push(unfence(rest));
        block = code[1] as "code" | "noformat";
      }
      continue;
    }
    if (/^\s*\{quote\}\s*$/.test(line)) {
      block = block === "quote" ? null : "quote";
      // A line right after a quote or a table would join it.
      out.push("");
      continue;
    }
    const quote = block === "quote" ? "> " : "";
    const panel = line.replace(/\{(panel|info|note|warning|tip)(?::[^}]*)?\}/g, "");
    if (panel !== line && !panel.trim()) continue;
    if (/^\|/.test(out.at(-1) ?? "") && !/^\s*\|/.test(panel)) out.push("");
    const heading = /^h([1-6])\.\s+(.*)$/.exec(panel);
    const bq = /^bq\.\s+(.*)$/.exec(panel);
    const list = /^([*#]+|-)\s+(.*)$/.exec(panel);
    // A heading, a rule or a table starts a block of its own (a rule right under text would make it a heading).
    const apart = () => out.at(-1) && !/^(> )?$/.test(out.at(-1)!) && out.push(quote.trim());
    if (heading) {
      apart();
      out.push(`${quote}${"#".repeat(Number(heading[1]))} ${wikiInline(heading[2]!)}`);
    } else if (bq) out.push(`> ${wikiInline(bq[1]!)}`);
    else if (/^-{4,}$/.test(panel.trim())) {
      apart();
      out.push(`${quote}---`);
    } else if (list) {
      // Four spaces a level: inside a bullet's or a number's content, never a code block.
      out.push(`${quote}${"    ".repeat(list[1]!.length - 1)}${list[1]!.endsWith("#") ? "1." : "-"} ${wikiInline(list[2]!)}`);
    } else if (/^\s*\|\|/.test(panel)) {
      apart();
      const head = cells(panel.trim(), /\|\|/);
      out.push(`| ${head.join(" | ")} |`, `|${head.map(() => " --- ").join("|")}|`);
    } else if (/^\s*\|/.test(panel)) out.push(`| ${cells(panel.trim(), /\|/).join(" | ")} |`);
    else out.push(`${quote}${wikiInline(panel)}`);
  }
  if (block === "code" || block === "noformat") out.push(FENCE);
  const md = out.join("\n").replace(/\n{3,}/g, "\n\n").trim();
  return md ? md.slice(0, BODY_MAX_CHARS) : null;
}
