/**
 * A failure the CLI reports as `✗ CODE: message` plus a hint, exiting 1. Codes are the
 * server's domain codes where the server refused, or the CLI's own for local problems.
 */
export class CliError extends Error {
  constructor(
    readonly code: string,
    message: string,
    public hint?: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = "CliError";
  }
}
