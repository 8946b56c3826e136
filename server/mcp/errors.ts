import { z } from "zod";
import { describeZodError, DomainError, errorCodes, inputErrorOf } from "../errors.ts";
import { KeyUnavailableError } from "../crypto/index.ts";

/** `structuredContent` of every failed tool call. */
export const toolErrorSchema = z.object({
  error: z.object({
    code: z.enum(errorCodes),
    message: z.string(),
    hint: z.string().describe("what to do next"),
    tellHuman: z.string().optional().describe("relay this sentence to your human verbatim"),
    details: z.record(z.string(), z.unknown()).optional(),
  }),
});
export type ToolError = z.infer<typeof toolErrorSchema>["error"];

export interface ToolResult {
  [key: string]: unknown;
  content: { type: "text"; text: string }[];
  structuredContent: Record<string, unknown>;
  isError?: boolean;
}

/** A success: the value as JSON text and as `structuredContent`; a footer (./footer.ts) is a text block of its own after it. */
export function successResult(value: Record<string, unknown>, footer: string | null = null): ToolResult {
  const content: ToolResult["content"] = [{ type: "text", text: JSON.stringify(value) }];
  if (footer) content.push({ type: "text", text: footer });
  return { content, structuredContent: value };
}

export function errorResult(error: ToolError): ToolResult {
  const structuredContent = { error };
  return { content: [{ type: "text", text: JSON.stringify(structuredContent) }], structuredContent, isError: true };
}

export function invalidArguments(toolName: string, problem: string): ToolError {
  return {
    code: "INVALID_INPUT",
    message: `invalid arguments for ${toolName}: ${problem}`,
    hint: `Fix the arguments and call again; tools/list has the input schema of ${toolName}.`,
  };
}

/**
 * Translates anything a tool throws into the error an agent sees. Domain errors keep
 * their code, hint and details; anything else is an internal fault, reported without
 * its message or stack (those go to the log, under the request id).
 */
export function toToolError(error: unknown, toolName: string, requestId: string): { error: ToolError; internal: boolean } {
  error = inputErrorOf(error) ?? error;
  if (error instanceof DomainError) {
    return {
      internal: false,
      error: {
        code: error.code,
        message: error.message,
        hint: error.hint,
        ...(error.tellHuman ? { tellHuman: error.tellHuman } : {}),
        ...(error.details ? { details: error.details } : {}),
      },
    };
  }
  if (error instanceof z.ZodError) return { internal: false, error: invalidArguments(toolName, describeZodError(error)) };
  if (error instanceof KeyUnavailableError) {
    return {
      internal: false,
      error: { code: "NOT_FOUND", message: "this org's data is no longer readable", hint: "The org was deleted." },
    };
  }
  return {
    internal: true,
    error: {
      code: "UNAVAILABLE",
      message: `${toolName} failed on the server`,
      hint: `Retry in a moment. If it keeps failing, tell the operator request id ${requestId}.`,
    },
  };
}
