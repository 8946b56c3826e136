import { parseArgs } from "node:util";
import { CliError } from "./errors.ts";
import { red, setJsonMode } from "./output.ts";
import type { Command } from "./command.ts";
import { findCommand, usageError } from "./command-line.ts";
import { help, overview } from "./help.ts";
import { setupCommands } from "./commands/table-setup.ts";
import { orgCommands } from "./commands/table-org.ts";
import { mcpCommands } from "./commands/table-mcp.ts";
import { workCommands } from "./commands/table-work.ts";
import { serviceCommands } from "./commands/table-org-services.ts";
import { cliVersion } from "./version.ts";

/** Every command, in the order `retasc --help` lists them. */
export const commands: Record<string, Command> = { ...setupCommands, ...orgCommands, ...mcpCommands, ...workCommands, ...serviceCommands };

/** Exit codes: 1 a command that failed, 2 a command line that was not understood. */
const USAGE = 2;

function report(error: unknown, exitCode = 1): number {
  const mark = red(process.stderr, "✗");
  if (error instanceof CliError) {
    process.stderr.write(`${mark} ${error.code}: ${error.message}\n`);
    if (error.hint) process.stderr.write(`  ${error.hint}\n`);
    return exitCode;
  }
  const e = error as Error | undefined;
  process.stderr.write(`${mark} INTERNAL: ${e?.message ?? String(error)}\n  This is a bug in retasc; please report it with \`retasc config\` output.\n`);
  if (process.env.RETASC_DEBUG) process.stderr.write(`${e?.stack}\n`);
  return 1;
}

/** Runs one command line; returns the exit code. */
export async function main(argv: string[]): Promise<number> {
  if (argv.length === 0 || argv[0] === "--help" || argv[0] === "-h" || argv[0] === "help") {
    process.stdout.write(`${overview(commands)}\n`);
    return 0;
  }
  if (argv[0] === "--version" || argv[0] === "-v") {
    process.stdout.write(`${cliVersion()}\n`);
    return 0;
  }
  const found = findCommand(commands, argv);
  if (!found) {
    const group = Object.entries(commands).filter(([name, c]) => name.startsWith(`${argv[0]} `) && !c.hidden);
    if (group.length && (argv.length === 1 || argv[1] === "--help" || argv[1] === "-h")) {
      process.stdout.write(`${group.map(([name, c]) => `retasc ${name.padEnd(16)} ${c.summary}`).join("\n")}\n`);
      return argv.length === 1 ? USAGE : 0;
    }
    return report(new CliError("INVALID_INPUT", `unknown command: ${argv.slice(0, 2).join(" ")}`, "Run `retasc --help` for the list."), USAGE);
  }
  const { command } = found;
  let parsed;
  try {
    parsed = parseArgs({
      args: found.rest,
      options: { ...Object.fromEntries(Object.entries(command.options).map(([n, o]) => [n, { type: o.type, ...(o.short ? { short: o.short } : {}) }])), help: { type: "boolean", short: "h" } },
      allowPositionals: Boolean(command.positionals),
      strict: true,
    });
  } catch (error) {
    return report(usageError(error, found.name, command), USAGE);
  }
  if (parsed.values.help) {
    process.stdout.write(`${help(found.name, command)}\n`);
    return 0;
  }
  setJsonMode((parsed.values as Record<string, unknown>).json === true);
  try {
    await command.run(parsed.values, parsed.positionals);
    return 0;
  } catch (error) {
    return report(error);
  }
}
