import { performance } from "node:perf_hooks";
import type { Principal, Services } from "../context.ts";
import { withPrincipal } from "../with-principal.ts";
import type { Logger } from "../log.ts";
import { describeZodError, unstorableText, unstorableTextIn } from "../errors.ts";
import { metrics } from "../metrics/index.ts";
import { noteToolCall } from "../metrics/requests.ts";
import { errorResult, invalidArguments, successResult, toToolError, type ToolResult } from "./errors.ts";
import { footerLine, hostedClaimLine } from "./footer.ts";
import type { ToolDefinition } from "./tool.ts";
import { lowBalanceWarning } from "../usage/low-balance.ts";
import { toolTiers } from "../usage/rate-card.ts";
import { renewSessionLeases } from "../queue/session-renewal.ts";
import { takeRiders } from "../verification/riders.ts";
import type { HeavyReads } from "../http/heavy-reads.ts";

/** Who is calling and where to log: fixed for one HTTP request. */
export interface CallScope {
  services: Services;
  principal: Principal;
  log: Logger;
  requestId: string;
  /** This process's slots for the largest replies (server/http/heavy-reads.ts); none in-process. */
  heavyReads?: HeavyReads;
  /** Starts an MCP session for `initialize`: the Mcp-Session-Id to send back (server/mcp/session-id.ts). */
  startSession?: () => string;
}

/**
 * The one wrapper every tool call goes through: validates the arguments against the
 * tool's schema (every own key of them, as sent: `__proto__` included), runs the handler on the
 * parsed value as the key's principal (so every write is attributed),
 * counts the outcome (/metrics: latency, refusal codes, claims) and notes it on the request's
 * log line (debug logs one line per call), and turns any failure into an `isError` result.
 * Billing is not here: the services charge in each write's own transaction (server/usage/meter.ts).
 */
export async function invokeTool(scope: CallScope, tool: ToolDefinition, args: Record<string, unknown>): Promise<ToolResult> {
  const started = performance.now();
  const { principal } = scope;
  const logFields = {
    requestId: scope.requestId,
    tool: tool.name,
    orgId: principal.orgId,
    userId: principal.userId,
    keyId: principal.keyId,
    runtime: principal.runtime,
  };
  const unknownArguments = Object.keys(args).filter((key) => !Object.hasOwn(tool.input.shape, key));
  if (unknownArguments.length > 0) {
    const accepted = Object.keys(tool.input.shape);
    observed(tool.name, started, "INVALID_INPUT");
    scope.log.debug({ ...logFields, outcome: "refused", code: "INVALID_INPUT" }, "mcp tool call");
    return errorResult(
      invalidArguments(
        tool.name,
        `unknown argument${unknownArguments.length > 1 ? "s" : ""} ${unknownArguments.join(", ")} ` +
          `(accepted: ${accepted.length ? accepted.join(", ") : "none"})`,
      ),
    );
  }
  // Every tool at once, before any query: no argument may carry text no column can store.
  const unstorable = unstorableTextIn(args);
  if (unstorable !== null) {
    observed(tool.name, started, "INVALID_INPUT");
    scope.log.debug({ ...logFields, outcome: "refused", code: "INVALID_INPUT" }, "mcp tool call");
    return errorResult(invalidArguments(tool.name, unstorableText(unstorable).message));
  }
  const parsed = tool.input.safeParse(args);
  if (!parsed.success) {
    observed(tool.name, started, "INVALID_INPUT");
    scope.log.debug({ ...logFields, outcome: "refused", code: "INVALID_INPUT" }, "mcp tool call");
    return errorResult(invalidArguments(tool.name, describeZodError(parsed.error)));
  }
  try {
    // The parsed value, never the raw arguments: those may carry what the schema dropped.
    const ctx = withPrincipal(scope.services, principal);
    // Any call of a session but check_claim (which only looks) renews the leases it holds, beside the call.
    const renewal = tool.name === "check_claim" ? null : renewSessionLeases(ctx).catch((err: unknown) => scope.log.warn({ ...logFields, err }, "session leases not renewed"));
    const output = (await tool.handler(ctx, parsed.data)) as Record<string, unknown>;
    await renewal;
    const durationMs = observed(tool.name, started, null);
    metrics.claimsIn(tool.name, output);
    scope.log.debug({ ...logFields, outcome: "ok", durationMs }, "mcp tool call");
    const billing = Object.hasOwn(toolTiers, tool.name) ? await lowBalanceWarning(ctx) : null;
    // A finish of this key's that CI failed: told once, on the next call that succeeds.
    const rider = principal.riderWaiting ? await takeRiders(ctx) : null;
    const footer = [tool.landsIn ? footerLine(principal, tool.landsIn(output)) : null, hostedClaimLine(principal, output)].filter((line) => line !== null).join("\n");
    return successResult({ ...output, ...(billing ? { billing } : {}), ...(rider ? { rider } : {}) }, footer || null);
  } catch (error) {
    const { error: toolError, internal } = toToolError(error, tool.name, scope.requestId);
    const durationMs = observed(tool.name, started, internal ? "INTERNAL" : toolError.code, internal);
    if (internal) scope.log.error({ ...logFields, outcome: "failed", durationMs, err: error }, "mcp tool call failed");
    else scope.log.debug({ ...logFields, outcome: "refused", code: toolError.code, durationMs }, "mcp tool call");
    return errorResult(toolError);
  }
}

/** Records a call's outcome in /metrics and on the request's log line; returns its duration in ms. */
function observed(tool: string, started: number, code: string | null, internal = false): number {
  const ms = performance.now() - started;
  metrics.toolCall(tool, ms, code, internal);
  noteToolCall(tool, code);
  return Math.round(ms * 100) / 100;
}
