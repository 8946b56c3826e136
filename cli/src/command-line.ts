import { CliError } from "./errors.ts";
import type { Command } from "./command.ts";

/** Own names only: `retasc constructor` is not Object's constructor. */
const commandNamed = (commands: Record<string, Command>, name: string): Command | undefined => (Object.hasOwn(commands, name) ? commands[name] : undefined);

/** The command a command line names: its first two words (`key mint`), else its first. */
export function findCommand(commands: Record<string, Command>, argv: string[]): { name: string; command: Command; rest: string[] } | null {
  const two = argv.slice(0, 2).join(" ");
  const command = commandNamed(commands, two);
  if (command) return { name: two, command, rest: argv.slice(2) };
  const one = argv[0] ?? "";
  const single = commandNamed(commands, one);
  if (single) return { name: one, command: single, rest: argv.slice(1) };
  return null;
}

/** parseArgs' refusal in a line of our own: which option or argument, not Node's wording. */
export function usageError(error: unknown, name: string, command: Command): CliError {
  const e = error as Error & { code?: string };
  const option = /'(-{1,2}[^' ]+)/.exec(e.message)?.[1];
  const help = `Run \`retasc ${name} --help\`.`;
  switch (e.code) {
    case "ERR_PARSE_ARGS_UNKNOWN_OPTION":
      return new CliError("INVALID_INPUT", `unknown option ${option ?? ""} for retasc ${name}`.replace("  ", " "), help);
    case "ERR_PARSE_ARGS_INVALID_OPTION_VALUE": {
      const declared = option ? command.options[option.replace(/^-+/, "")] : undefined;
      return new CliError("INVALID_INPUT", declared?.type === "boolean" ? `${option} takes no value` : `${option ?? "an option"} needs a value${declared?.value ? ` (${option} ${declared.value})` : ""}`, help);
    }
    case "ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL": {
      const extra = /'([^']*)'/.exec(e.message)?.[1];
      return new CliError("INVALID_INPUT", `retasc ${name} takes no argument${extra ? ` (got ${extra})` : ""}`, help);
    }
    default:
      return new CliError("INVALID_INPUT", `could not read the options of retasc ${name}`, help);
  }
}
