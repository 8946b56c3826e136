import { getTokenizer } from "@anthropic-ai/tokenizer";
import { countTokens as o200kTokens } from "gpt-tokenizer/encoding/o200k_base";
import type { Tool } from "@modelcontextprotocol/sdk/types.js";

/**
 * Token counts of the tools/list answer, for its budget test and `npx tsx scripts/mcp-tokens.ts`.
 * Two tokenizers: `@anthropic-ai/tokenizer` (the vocabulary of Claude's earlier models; newer ones
 * count differently) and OpenAI's o200k_base, so neither vendor's figure alone sets the budget.
 */
export interface TokenCount {
  claude: number;
  o200k: number;
}

// Built once: the package's own countTokens builds (and frees) a tokenizer per call, seconds each on a busy machine.
let claude: ReturnType<typeof getTokenizer> | undefined;

/** Counts as the package's countTokens does (NFKC first, special tokens allowed). */
export function countTokens(text: string): TokenCount {
  claude ??= getTokenizer();
  return { claude: claude.encode(text.normalize("NFKC"), "all").length, o200k: o200kTokens(text) };
}

/** Where the tokens of one tool go: what a model reads (name, title, description, input schema) and the rest. */
export interface ToolTokens {
  name: string;
  read: TokenCount;
  outputSchema: TokenCount;
  annotations: TokenCount;
  total: TokenCount;
}

export interface ToolsListTokens {
  /** The whole JSON-RPC result, `{"tools":[...]}`, serialized as the server sends it. */
  total: TokenCount;
  /** Names, titles, descriptions and input schemas: the part a model is shown. */
  read: TokenCount;
  characters: number;
  tools: ToolTokens[];
}

const json = (value: unknown) => JSON.stringify(value);
const sum = (counts: TokenCount[]): TokenCount => ({
  claude: counts.reduce((n, c) => n + c.claude, 0),
  o200k: counts.reduce((n, c) => n + c.o200k, 0),
});

export function measureToolsList(tools: Tool[]): ToolsListTokens {
  const perTool = tools.map((tool): ToolTokens => {
    const { outputSchema, annotations, ...read } = tool;
    return {
      name: tool.name,
      read: countTokens(json(read)),
      outputSchema: countTokens(json(outputSchema ?? {})),
      annotations: countTokens(json(annotations ?? {})),
      total: countTokens(json(tool)),
    };
  });
  const text = json({ tools });
  return { total: countTokens(text), read: sum(perTool.map((t) => t.read)), characters: text.length, tools: perTool };
}
