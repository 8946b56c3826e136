import { z } from "zod";
import { getProject, getProjectInput, listProjects, listProjectsInput } from "../../orgs/projects.ts";
import { billingSummary, billingSummaryInput, usageSummary, usageSummaryInput } from "../../usage/index.ts";
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
const rateCardOutput = z.object({
  unit: z.literal("micro-credit"),
  microCreditsPerUsd: z.number().int(),
  tiers: z.array(z.object({ tier: z.enum(meterTiers), microCredits: z.number().int() })),
  free: z.string(),
});

export const projectTools = [
  defineTool({
    name: "get_project",
    title: "Get a project",
    group: "observability",
    description:
      "One project by prefix (default: your key's project) with its issues counted by status. Call it to size up a " +
      "project before filing or pulling work; queue_status has the live dispatch picture.",
    input: getProjectInput,
    output: z.object({ ...projectFields, byStatus: countsByStatus, open: z.number().int() }),
    annotations: readOnly,
    access: "read",
    meter: null,
    handler: (ctx, input) => getProject(ctx, input),
  }),
  defineTool({
    name: "list_projects",
    title: "List projects",
    group: "observability",
    description:
      "Every project of your org: prefix, name and issue counter. Call it to find the prefix to pass as `project` " +
      "when filing into a project other than your key's.",
    input: listProjectsInput,
    output: z.object({ projects: z.array(z.object(projectFields)) }),
    annotations: readOnly,
    access: "read",
    meter: null,
    handler: (ctx, input) => listProjects(ctx, input),
  }),
];

export const usageTools = [
  defineTool({
    name: "usage_summary",
    title: "Usage summary",
    group: "observability",
    description:
      "What your org did this calendar month and in total, counted from the activity log by kind of write, beside " +
      "the rate card. Call it when your human asks what the fleet has been doing or what it would cost.",
    input: usageSummaryInput,
    output: z.object({
      period: z.object({ from: z.string(), to: z.string() }),
      writesThisMonth: z.number().int(),
      byKind: z.array(z.object({ kind: z.string(), count: z.number().int() })),
      writesAllTime: z.number().int(),
      metered: z.boolean(),
      rateCard: rateCardOutput,
      note: z.string(),
    }),
    annotations: readOnly,
    access: "read",
    meter: null,
    handler: (ctx, input) => usageSummary(ctx, input),
  }),
  defineTool({
    name: "billing_summary",
    title: "Billing summary",
    group: "observability",
    description:
      "The org's billing picture: whether billing is enabled, balance, signup credit, spend cap and the rate card. " +
      "Call it when a write was refused for billing or your human asks about money.",
    input: billingSummaryInput,
    output: z.object({
      enabled: z.boolean(),
      balanceMicroCredits: z.number().int().nullable(),
      signupCreditMicroCredits: z.number().int(),
      spendCapMicroCredits: z.number().int().nullable(),
      rateCard: rateCardOutput,
      note: z.string(),
    }),
    annotations: readOnly,
    access: "read",
    meter: null,
    handler: (ctx, input) => billingSummary(ctx, input),
  }),
];
