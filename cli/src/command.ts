/**
 * What a command of the table is (its summary, usage, options and handler), the builder that
 * checks a handler against its options, and the options several commands share.
 */
export interface Option {
  type: "string" | "boolean";
  short?: string;
  description: string;
  value?: string;
}

/** The flags parseArgs hands a command with these options: a string or a boolean each, by its type. */
export type FlagsOf<O extends Record<string, Option>> = { [K in keyof O]?: O[K]["type"] extends "string" ? string : boolean };

export interface Command {
  summary: string;
  usage: string;
  options: Record<string, Option>;
  positionals?: string;
  details?: string;
  hidden?: boolean;
  run: (flags: Record<string, string | boolean | undefined>, positionals: string[]) => Promise<unknown>;
}

type Handler<F> = (flags: F, positionals: string[]) => Promise<unknown>;

/** Flags a handler reads that its command does not declare: none, or the build fails naming them. */
type Undeclared<O, F> = [Exclude<keyof F, keyof O>] extends [never] ? unknown : { undeclaredFlags: Exclude<keyof F, keyof O> };

/**
 * A command whose handler is checked against its options: every flag the handler reads
 * must be an option, of the right type.
 */
export function command<const O extends Record<string, Option>, F>(
  spec: Omit<Command, "options" | "run"> & { options: O; run: Handler<FlagsOf<O>> & Handler<F> } & Undeclared<O, F>,
): Command {
  // parseArgs gives each option a value of its declared type, which is what FlagsOf says.
  return { ...spec, run: (flags, positionals) => spec.run(flags as FlagsOf<O>, positionals) };
}

export const url = { type: "string", value: "<url>", description: "the deployment (default: RETASC_DEPLOYMENT_URL, the last one signed in to, or http://localhost:3000)" } as const satisfies Option;
export const json = { type: "boolean", description: "print the raw payload as JSON on stdout" } as const satisfies Option;
export const yes = { type: "boolean", short: "y", description: "replace an existing binding of this folder without asking" } as const satisfies Option;
export const runtime = { type: "string", value: "<label>", description: "what runs with the key: claude-code (default), codex, cursor, ci…" } as const satisfies Option;
export const orgId = { type: "string", value: "<id>", description: "the org (default: this folder's org, or your only org)" } as const satisfies Option;
export const transport = { type: "string", value: "<proxy|http>", description: "how Claude Code connects: proxy (default; `retasc mcp proxy` heartbeats your agent's claims) or http (`retasc mcp headers`)" } as const satisfies Option;
export const issueId = { type: "string", value: "<issue>", description: "the issue, like PFX-42 or 42 (default: the issue branch you are on, or your one claim)" } as const satisfies Option;
export const workFlags = {
  "all-lanes": { type: "boolean", description: "pull from every lane, not just yours and unassigned issues" },
  base: { type: "string", value: "<ref>", description: "base of a new branch (default: origin/main, else HEAD)" },
  dir: { type: "string", value: "<path>", description: "where the worktree goes (default: ../<repo>-<issue>)" },
  "no-fetch": { type: "boolean", description: "skip fetching origin first" },
  "no-worktree": { type: "boolean", description: "claim only; no git" },
  "print-path": { type: "boolean", description: "print only the worktree path (cd \"$(retasc next --print-path)\")" },
  shell: { type: "boolean", description: "open a shell inside the worktree" },
  wait: { type: "boolean", description: "nothing claimable: poll again after the server's retryAfter until something is" },
  json,
  url,
} as const satisfies Record<string, Option>;
