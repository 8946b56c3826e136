import readline from "node:readline";
import { Writable } from "node:stream";
import { invalidInput } from "../errors.ts";

/**
 * One secret line from standard input: secrets are never flags (flags land in shell history
 * and process lists). Piped, stdin must hold exactly one line; on a terminal the person is
 * asked, and what they type is not echoed.
 */
const pipeIt = {
  password: "Pipe it in: `npm run admin -- set-password --email … < password.txt`.",
  token: "Pipe it in on one line.",
  "master key": "Pipe it in: `npm run admin -- rotate-master-key < new-master.key`.",
};

export async function readSecretLine(prompt: string, what: keyof typeof pipeIt = "password"): Promise<string> {
  const line = process.stdin.isTTY ? await askHidden(prompt) : await readOneLine(what);
  if (!line) throw invalidInput(`no ${what} on standard input`, pipeIt[what]);
  return line;
}

async function readOneLine(what: string): Promise<string> {
  let text = "";
  for await (const chunk of process.stdin) text += chunk;
  const lines = text.replace(/\r?\n$/, "").split(/\r?\n/);
  if (lines.length > 1) throw invalidInput("standard input holds more than one line", `Pass the ${what} alone, on one line.`);
  return lines[0]!;
}

async function askHidden(prompt: string): Promise<string> {
  // readline drives the terminal (raw mode, line editing); its echo goes nowhere. The prompt
  // comes after raw mode is on, so nothing typed in answer is echoed by the terminal either.
  const muted = new Writable({ write: (_chunk, _encoding, callback) => callback() });
  const rl = readline.createInterface({ input: process.stdin, output: muted, terminal: true });
  process.stderr.write(prompt);
  try {
    return await new Promise<string>((resolve, reject) => {
      rl.on("SIGINT", () => reject(invalidInput("cancelled", "Run the command again.")));
      rl.question("", resolve);
    });
  } finally {
    rl.close();
    process.stderr.write("\n");
  }
}
