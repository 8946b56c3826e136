import { z } from "zod";
import { slaStates } from "../../../db/schema/index.ts";
import { issueStatuses } from "../../../constants/statuses.ts";
import { queueStatus } from "../../queue/index.ts";
import { getProject, getProjectInput, listProjects, listProjectsInput } from "../../orgs/projects.ts";
import { billingSummary, billingSummaryInput } from "../../billing/index.ts";
import { usageSummary, usageSummaryInput } from "../../usage/index.ts";
import { analyticsOverview, analyticsOverviewInput } from "../../analytics/overview.ts";
import { analyticsIssues, analyticsIssuesInput } from "../../analytics/issues.ts";
import { meterTiers } from "../../usage/rate-card.ts";
import { defineTool, readOnly } from "../tool.ts";

const projectFields = {
  id: z.string(),
  prefix: z.string(),
  name: z.string(),
  issueCounter: z.number().int().describe("issues ever numbered in the project"),
  createdAt: z.string(),
};
const countsByStatus = z.object({
  todo: z.number().int(),
  doing: z.number().int(),
  blocked: z.number().int(),
  review: z.number().int(),
  done: z.number().int(),
  canceled: z.number().int(),
});
export const rateCardOutput = z.object({
  unit: z.literal("micro-credit"),
  microCreditsPerUsd: z.number().int(),
  tiers: z.array(z.object({ tier: z.enum(meterTiers), microCredits: z.number().int() })),
  free: z.string(),
});

const forecastOutput = z.object({
  window: z.string().describe("the span the pace is measured over, e.g. 24h"),
  finished: z.number().int(),
  perHour: z.number().nullable().describe("finishes per hour; null: no pace yet (see reason)"),
  medianClaimToDoneMs: z.number().int().nullable(),
  ready: z.number().int(),
  open: z.number().int(),
  readyHours: z.number().nullable(),
  readyEta: z.string().nullable(),
  openHours: z.number().nullable(),
  openEta: z.string().nullable().describe("when every open work issue would be done"),
  criticalChain: z.array(z.string()).describe("the longest chain of open blockers, first blocker first; it bounds openEta"),
  containers: z.array(z.object({ identifier: z.string(), open: z.number().int(), hours: z.number().nullable(), eta: z.string().nullable() })),
  reason: z.string().nullable(),
});

/**
 * The false-done rate (server/analytics/false-done.ts), over the last 30 days. Typed loosely in
 * tools/list (its budget, decision 012); the rows' fields are in the description, which
 * docs/mcp-tools.md carries.
 */
const falseDoneOutput = z
  .array(z.record(z.string(), z.unknown()))
  .describe(
    "the false-done rate of the last 30 days' finishes (CI failed them, or reopened within 7 days): a row {by: all}, " +
      "then one per runtime, person and changeType (by: runtime | person | changeType, key: its value; email), each with " +
      "finishes, falseDone, rate (falseDone / finishes, 0 to 1, null with none), medianToVerifiedMs and " +
      "p90ToVerifiedMs (finish to CI passed)",
  );

const countsOf = (keys: readonly string[]) =>
  z.record(z.string(), z.number().int()).describe(`non-zero counts keyed by ${keys.join(", ")}`);

export const queueTools = [
  defineTool({
    name: "queue_status",
    title: "Queue status",
    group: "observability",
    description:
      "Call for the fleet at a glance (your key's project, else the org): counts by status and SLA state, " +
      "blockers, live claims, the drain forecast, false-done rate.",
    input: z.object({}),
    output: z.object({
      counts: countsOf(issueStatuses),
      ready: z.number().int(),
      deadlinePressure: countsOf(slaStates),
      blockedOn: z.array(
        z.object({
          identifier: z.string(),
          blockers: z.array(z.object({ identifier: z.string(), status: z.string() })),
        }),
      ),
      liveClaims: z.array(
        z.object({
          identifier: z.string(),
          status: z.enum(issueStatuses),
          runtime: z.string(),
          userId: z.string(),
          email: z.string().nullable(),
          fence: z.number().int(),
          claimedAt: z.string(),
          heartbeatAt: z.string(),
          expiresAt: z.string(),
        }),
      ),
      forecast: forecastOutput,
      falseDone: falseDoneOutput,
    }),
    annotations: readOnly,
    handler: (ctx) => queueStatus(ctx),
  }),
];

export const projectTools = [
  defineTool({
    name: "get_project",
    title: "Get a project",
    group: "observability",
    description:
      "Call to size up a project before filing or pulling work: its issues by status (queue_status: the " +
      "live picture).",
    input: getProjectInput,
    output: z.object({ ...projectFields, byStatus: countsByStatus, open: z.number().int() }),
    annotations: readOnly,
    handler: (ctx, input) => getProject(ctx, input),
  }),
  defineTool({
    name: "list_projects",
    title: "List projects",
    group: "observability",
    description:
      "Call to find the prefix to pass as project when filing outside your key's project: the org's projects.",
    input: listProjectsInput,
    output: z.object({ projects: z.array(z.object(projectFields)) }),
    annotations: readOnly,
    handler: (ctx, input) => listProjects(ctx, input),
  }),
];

export const usageTools = [
  defineTool({
    name: "usage_summary",
    title: "Usage summary",
    group: "observability",
    description:
      "Call when your human asks what you spent or did: your meter this month by tool, tier and changeType " +
      "(writes by kind with billing off), and the rate card.",
    input: usageSummaryInput,
    output: z.object({
      period: z.object({ from: z.string(), to: z.string() }),
      metered: z.boolean(),
      spentMicroCredits: z.number().int(),
      byTool: z.array(z.object({ tool: z.string(), tier: z.string(), calls: z.number().int(), microCredits: z.number().int() })),
      writesThisMonth: z.number().int(),
      byKind: z.array(z.object({ kind: z.string(), count: z.number().int() })),
      byChangeType: z.array(z.object({ changeType: z.string(), writes: z.number().int(), microCredits: z.number().int() })),
      rateCard: rateCardOutput,
      note: z.string(),
    }),
    annotations: readOnly,
    handler: (ctx, input) => usageSummary(ctx, input),
  }),
  defineTool({
    name: "billing_summary",
    title: "Billing summary",
    group: "observability",
    description:
      "Call when your human asks about money: billing on or off, the balance, spend against the cap and " +
      "purchases (owners and admins), your own spend, the rate card.",
    input: billingSummaryInput,
    output: z.object({
      enabled: z.boolean(),
      balance: z
        .object({ givenMicroCredits: z.number().int(), boughtMicroCredits: z.number().int(), totalMicroCredits: z.number().int() })
        .nullable(),
      spendCap: z
        .object({
          monthlyMicroCredits: z.number().int().nullable(),
          spentThisMonthMicroCredits: z.number().int(),
          monthStartsAt: z.string(),
          timeZone: z.string(),
        })
        .nullable(),
      purchases: z.array(
        z.object({
          purchaseId: z.string(),
          packUsd: z.number().int(),
          microCredits: z.number().int(),
          status: z.string(),
          reversedMicroCredits: z.number().int(),
          receiptUrl: z.string().nullable(),
          userId: z.string().nullable(),
          createdAt: z.string(),
          paidAt: z.string().nullable(),
        }),
      ),
      yourSpendThisMonthMicroCredits: z.number().int(),
      signupCreditMicroCredits: z.number().int(),
      rateCard: rateCardOutput,
      note: z.string(),
    }),
    annotations: readOnly,
    handler: (ctx, input) => billingSummary(ctx, input),
  }),
];

const int = z.number().int();
const ms = int.nullable();

/**
 * analytics_overview and analytics_issues (server/analytics, decision 071): the Dash's Analytics
 * page in two reads. Their outputs are typed briefly in tools/list (its budget): the rows' and the
 * cost's fields are listed in docs/mcp-tools.md, and `definitions` in every answer says each
 * figure's unit and meaning.
 */
export const analyticsTools = [
  defineTool({
    name: "analytics_overview",
    title: "Analytics overview",
    group: "observability",
    description:
      "Call when your human asks how work went lately: created, finished, canceled, cycle, lead and review time, " +
      "false-done rate, cost (also per person), by changeType and runtime.",
    input: analyticsOverviewInput,
    output: z.object({
      from: z.string(),
      to: z.string(),
      project: z.string().nullable(),
      totals: z.record(z.string(), int).describe("created, finished, canceled, reclaims"),
      perDay: z.array(int).describe("finishes on each day of the period, oldest first"),
      rows: z
        .array(z.record(z.string(), z.unknown()))
        .describe("{by: all | changeType | runtime, key, created, finished, canceled, cycleP50Ms, cycleP90Ms, leadP50Ms, leadP90Ms, reviewed, reviewP50Ms, reviewP90Ms}"),
      falseDone: z.record(z.string(), z.number().nullable()).describe("finishes, falseDone, rate (0 to 1)"),
      cost: z.record(z.string(), z.unknown()).nullable().describe("{microCredits, perFinishedMicroCredits, rows: [{by: changeType | runtime | person, key, microCredits}]}; null: billing off or not an owner or admin"),
      definitions: z.record(z.string(), z.string()),
    }),
    annotations: readOnly,
    handler: (ctx, input) => analyticsOverview(ctx, input),
  }),
  defineTool({
    name: "analytics_issues",
    title: "Analytics issues",
    group: "observability",
    description: "Call to list the issues behind an analytics_overview figure, paged.",
    input: analyticsIssuesInput,
    output: z.object({
      issues: z.array(
        z.object({
          identifier: z.string(),
          title: z.string(),
          status: z.string(),
          changeType: z.string().nullable(),
          runtime: z.string().nullable(),
          at: z.string(),
          cycleMs: ms,
          leadMs: ms,
          reviewMs: ms,
        }),
      ),
      nextCursor: z.string().optional(),
    }),
    annotations: readOnly,
    handler: (ctx, input) => analyticsIssues(ctx, input),
  }),
];
