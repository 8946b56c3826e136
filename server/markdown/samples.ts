import { MAX_SOURCE } from "./index.ts";

/**
 * Markdown for the renderer's benchmark (bench/markdown.ts) and regression tests: inputs
 * known to send Markdown parsers super-linear or into deep recursion, each as long as
 * `size` allows (the body limit by default), and an ordinary issue body to compare with.
 */
const fill = (unit: string, size: number) => unit.repeat(Math.floor(size / unit.length));

export function hostileMarkdown(size = MAX_SOURCE): Record<string, string> {
  const half = Math.floor((size - 1) / 2);
  let nestedList = "";
  for (let depth = 0; ; depth++) {
    const line = `${"  ".repeat(depth)}- item\n`;
    if (nestedList.length + line.length > size) break;
    nestedList += line;
  }
  return {
    // The two of the finding: marked took 82 s on the first and threw RangeError on the second.
    "emphasis *a_": fill("*a_", size),
    "blockquotes >": ">".repeat(Math.floor(size * 0.99)),
    "nested emphasis": `${"*".repeat(half)}a${"*".repeat(half)}`,
    "emphasis _*a": fill("_*a", size),
    "links [": `${"[".repeat(size - 4)}](x)`,
    "links [a](": fill("[a](", size),
    "images ![a": fill("![a", size),
    "lists - - -": fill("- ", size),
    "nested lists": nestedList,
    "blockquotes > > >": fill("> ", size),
    "table columns": `${"|a".repeat(2_000)}\n${"|-".repeat(2_000)}\n${fill("|b", size - 8_002)}`,
  };
}

/** About `size` characters of what people and agents write: prose, lists, code, a table, links. */
export function normalMarkdown(size = 10_000): string {
  const section = (n: number) =>
    [
      `## Step ${n}: migrate the **session** store`,
      "The current store keeps sessions in memory, so a restart signs everyone out. Move them to " +
        "PostgreSQL behind the `SessionStore` interface and keep the _hot path_ to one indexed read; " +
        "see [the design notes](https://example.com/notes) and issue WEB-42.",
      "- [x] write the migration\n- [ ] backfill live sessions\n  - in batches of 1,000\n  - with a ~~lock~~ cursor\n- [ ] drop the old table",
      "```ts\nexport async function load(id: string) {\n  return db.select().from(sessions).where(eq(sessions.id, id));\n}\n```",
      "| metric | before | after |\n|---|--:|--:|\n| p50 | 1.2 ms | 0.8 ms |\n| p99 | 9 ms | 3 ms |",
      "> Keep the old reads working until every instance runs the new code.",
    ].join("\n\n");
  let body = "";
  for (let n = 1; body.length < size; n++) body += `${section(n)}\n\n`;
  return body.slice(0, size);
}
