import readline from "node:readline/promises";
import { CliError } from "./errors.ts";

/** Prompts need a person at a terminal; scripted runs pass flags instead. */
export const interactive = (): boolean => Boolean(process.stdin.isTTY && process.stderr.isTTY);

/** Refuses a command only a person may answer when no one is at a terminal: `why` says why no flag answers it. */
export function requireTerminal(command: string, why: string): void {
  if (!interactive()) throw new CliError("INVALID_INPUT", `retasc ${command} needs a person at a terminal`, `Run it in an interactive terminal: ${why}`);
}

export async function ask(question: string): Promise<string> {
  const rl = readline.createInterface({ input: process.stdin, output: process.stderr });
  try {
    return (await rl.question(question)).trim();
  } finally {
    rl.close();
  }
}

export async function choose<T>(title: string, options: { label: string; value: T }[]): Promise<T> {
  process.stderr.write(`${title}\n`);
  options.forEach((o, i) => process.stderr.write(`  ${i + 1}) ${o.label}\n`));
  for (;;) {
    const answer = Number(await ask("Choose a number: "));
    if (Number.isInteger(answer) && answer >= 1 && answer <= options.length) return options[answer - 1]!.value;
    process.stderr.write(`Type a number from 1 to ${options.length}.\n`);
  }
}

export async function confirm(question: string): Promise<boolean> {
  return /^y(es)?$/i.test(await ask(`${question} [y/N] `));
}

/** Reads a secret piped on stdin (never a flag: flags land in shell history). */
export async function readStdinSecret(): Promise<string | null> {
  if (process.stdin.isTTY) return null;
  let text = "";
  for await (const chunk of process.stdin) text += chunk;
  return text.trim() || null;
}

export function needFlags(what: string, flags: string): CliError {
  return new CliError("INVALID_INPUT", `${what}, and there is no terminal to ask in`, `Pass ${flags}.`);
}
