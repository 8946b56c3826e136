import { and, eq } from "drizzle-orm";
import { z } from "zod";
import { connectorProviders, connectors, projects } from "../../db/schema/index.ts";
import type { Ctx } from "../context.ts";
import { randomToken } from "../crypto/index.ts";
import { notFound } from "../errors.ts";
import { newId } from "../orgs/index.ts";
import { actorOf, recordOrgActivity, requireRole } from "../orgs/access.ts";
import { chargeNow } from "../usage/meter.ts";
import type { Config } from "../config/index.ts";
import { resolveAssignee } from "../issues/inputs.ts";
import { requireOutboundUrl } from "../outbound/address.ts";
import { gitlabHostOf, webhookUrlOf } from "./urls.ts";

const githubRepo = /^[A-Za-z0-9-]{1,39}\/[A-Za-z0-9._-]{1,100}$/;
const gitlabPath = /^[A-Za-z0-9_.-]+(\/[A-Za-z0-9_.-]+){1,20}$/;

export const createConnectorInput = z
  .object({
    provider: z.enum(connectorProviders),
    repo: z.string().trim().min(3).max(255).describe("owner/name on GitHub, the project path (group/…/name) on GitLab"),
    project: z.string().trim().min(1).max(10).describe("the target project's prefix"),
    baseUrl: z
      .url({ protocol: /^https?$/, error: "a base URL is http:// or https://" })
      .max(500)
      .transform((v) => v.replace(/\/+$/, ""))
      .optional()
      .describe("a self-hosted GitLab's base URL"),
    token: z.string().trim().min(1).max(500).optional().describe("write-back token; kept encrypted, never shown again"),
    intakeLabel: z.string().trim().min(1).max(64).optional(),
    triageAll: z.boolean().optional().describe("let every author's issues through without triage"),
    pullRequests: z.boolean().optional().describe("outsiders' pull/merge requests become review items on the reviewer's lane"),
    reviewer: z.string().trim().min(1).max(320).optional().describe("the member (email or user id) whose lane review items go to; needed with pullRequests"),
  })
  .superRefine((v, issue) => {
    const pattern = v.provider === "github" ? githubRepo : gitlabPath;
    if (!pattern.test(v.repo)) issue.addIssue({ code: "custom", path: ["repo"], message: v.provider === "github" ? "a GitHub repository is owner/name" : "a GitLab project is its path, group/name" });
    if (v.pullRequests && !v.reviewer) issue.addIssue({ code: "custom", path: ["reviewer"], message: "the pull request stream needs a reviewer: a member's email" });
    if (v.baseUrl && v.provider !== "gitlab") issue.addIssue({ code: "custom", path: ["baseUrl"], message: "a base URL is for a self-hosted GitLab" });
  });

/**
 * Connects a repository to a project. Owner or admin. The webhook secret is generated here and
 * returned this once (kept encrypted: GitHub's HMAC needs the secret itself); the connector is
 * Pending until its first verified delivery. The pull request stream's reviewer must be an
 * active member. A self-hosted GitLab's base URL must be https to a public address (or allowed
 * by the operator): the server calls it with the token (server/outbound/address.ts).
 */
export async function createConnector(ctx: Ctx, raw: z.input<typeof createConnectorInput>) {
  const input = createConnectorInput.parse(raw);
  // Who may connect is decided before the name is resolved: a member learns nothing of the network.
  if (input.baseUrl) {
    requireRole(await actorOf(ctx), ["owner", "admin"], "connecting a repository");
    await requireOutboundUrl(ctx.config, input.baseUrl, "baseUrl");
  }
  const { orgId, userId } = ctx.principal;
  const cipher = await ctx.keyring.forOrg(ctx.db, orgId);
  return ctx.db.transaction(async (tx) => {
    requireRole(await actorOf(ctx, tx), ["owner", "admin"], "connecting a repository");
    const [project] = await tx
      .select({ id: projects.id, prefix: projects.prefix })
      .from(projects)
      .where(and(eq(projects.orgId, orgId), eq(projects.prefix, input.project.toUpperCase())));
    if (!project) throw notFound(`project ${input.project}`, "Pass a project prefix from list_projects.");
    const reviewerId = input.pullRequests && input.reviewer ? await resolveAssignee(tx, ctx, input.reviewer) : null;
    const id = newId();
    const secret = randomToken("rwh_", 32);
    const now = ctx.clock.now();
    await tx.insert(connectors).values({
      id,
      orgId,
      projectId: project.id,
      provider: input.provider,
      repo: input.repo,
      baseUrl: input.baseUrl ?? null,
      webhookSecretEnc: cipher.encrypt(secret),
      tokenEnc: cipher.encrypt(input.token ?? null),
      intakeLabel: input.intakeLabel ?? "support",
      triageAll: input.triageAll ?? false,
      pullRequests: reviewerId !== null,
      reviewerId,
      createdBy: userId,
      createdAt: now,
    });
    await recordOrgActivity(ctx, tx, "connector.created", { connectorId: id, provider: input.provider });
    await chargeNow(tx, ctx, { tool: "create_connector", tier: "plumbing", issueId: null }, now);
    const webhookUrl = webhookUrlOf(ctx.config, input.provider, id);
    return { connectorId: id, webhookUrl, secret, project: project.prefix, tokenOnFile: input.token !== undefined, pullRequests: reviewerId !== null, steps: providerSteps(ctx.config, input, webhookUrl) };
  });
}

/** What to do on the provider's side, in order: the Dash and the CLI show these beside the secret. */
function providerSteps(config: Pick<Config, "GITLAB_URL">, input: { provider: "github" | "gitlab"; repo: string; baseUrl?: string; pullRequests?: boolean }, webhookUrl: string): string[] {
  if (input.provider === "github") {
    return [
      `Open https://github.com/${input.repo}/settings/hooks/new`,
      `Payload URL: ${webhookUrl}; Content type: application/json; Secret: the secret shown here`,
      `Which events: "Let me select individual events", then Issues and Issue comments${input.pullRequests ? ", Pull requests, and Pull request review comments" : ""}`,
      "Add webhook: GitHub sends a ping, and the connector turns Connected",
    ];
  }
  return [
    `Open ${gitlabHostOf(config, input.baseUrl ?? null)}/${input.repo}/-/hooks`,
    `URL: ${webhookUrl}; Secret token: the secret shown here`,
    `Trigger: Issues events and Comments${input.pullRequests ? ", and Merge request events" : ""}`,
    "Add webhook, then Test > Issues events: the connector turns Connected",
  ];
}
