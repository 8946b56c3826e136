// Prints what tools/list costs in tokens, in total and per tool (`npx tsx scripts/mcp-tokens.ts`), with billing
// on (each metered tool's price in its description: the larger answer).
import { listedTools } from "../server/mcp/registry.ts";
import { measureToolsList, type TokenCount } from "../server/testing/tokens.ts";

const m = measureToolsList(listedTools(true));
const fmt = (c: TokenCount) => `${String(c.claude).padStart(6)} ${String(c.o200k).padStart(6)}`;
const rows = [
  `tools/list: ${m.characters} characters; tokens (claude o200k): total ${fmt(m.total)}, read by the model ${fmt(m.read)}`,
  `${"tool".padEnd(22)} ${"read".padStart(13)} ${"outputSchema".padStart(13)} ${"annotations".padStart(13)}`,
  ...m.tools.map((t) => `${t.name.padEnd(22)} ${fmt(t.read)} ${fmt(t.outputSchema)} ${fmt(t.annotations)}`),
];
process.stdout.write(`${rows.join("\n")}\n`);
