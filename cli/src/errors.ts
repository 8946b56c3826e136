/**
 * A failure the CLI reports as `✗ CODE: message` plus a hint, exiting 1. Codes are the
 * server's domain codes where the server refused, or the CLI's own for local problems.
 */
export class CliError extends Error {
  /**
   * @param {string} code
   * @param {string} message
   * @param {string} [hint]
   * @param {Record<string, unknown>} [details]
   */
  constructor(code, message, hint, details) {
    super(message);
    this.name = "CliError";
    this.code = code;
    this.hint = hint;
    this.details = details;
  }
}

/** @param {string} message @param {string} [hint] */
export const usageError = (message, hint) => new CliError("INVALID_INPUT", message, hint);
