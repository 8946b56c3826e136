import { and, eq } from "drizzle-orm";
import { z } from "zod";
import { orgs, projects } from "../../db/schema/index.ts";
import { systemPrincipal, type Services } from "../context.ts";
import { withPrincipal } from "../with-principal.ts";
import { notFound } from "../errors.ts";
import { createConnector } from "../intake/create.ts";

export const connectInput = z.object({
  provider: z.enum(["github", "gitlab"], "--provider is github or gitlab"),
  org: z.string({ error: "--org is required" }).trim().min(1, "--org is required"),
  project: z.string({ error: "--project is required (the project's id)" }).trim().min(1, "--project is required (the project's id)"),
  repo: z.string({ error: "--repo is required" }).trim().min(1, "--repo is required"),
  "base-url": z.string().trim().min(1).optional(),
  "pull-requests": z.boolean().optional(),
  reviewer: z.string().trim().min(1).optional(),
  /** Read from standard input by main.ts when --token-stdin is given: never a flag. */
  token: z.string().optional(),
});

/** `connect`: the Dash's Connect form for scripted setups; prints the webhook URL and the secret, once. */
export async function connect(services: Services, raw: z.input<typeof connectInput>) {
  const input = connectInput.parse(raw);
  const [org] = await services.db.select({ id: orgs.id }).from(orgs).where(eq(orgs.id, input.org));
  if (!org) throw notFound(`org ${input.org}`, "Pass the orgId printed by bootstrap (or shown in the Dash).");
  const [project] = await services.db
    .select({ prefix: projects.prefix })
    .from(projects)
    .where(and(eq(projects.orgId, input.org), eq(projects.id, input.project)));
  if (!project) throw notFound(`project ${input.project}`, "Pass the projectId printed by bootstrap; it must be in --org.");
  const created = await createConnector(withPrincipal(services, systemPrincipal(input.org)), {
    provider: input.provider,
    repo: input.repo,
    project: project.prefix,
    ...(input["base-url"] ? { baseUrl: input["base-url"] } : {}),
    ...(input.token ? { token: input.token } : {}),
    ...(input["pull-requests"] ? { pullRequests: true, reviewer: input.reviewer } : {}),
  });
  return { connectorId: created.connectorId, webhookUrl: created.webhookUrl, secret: created.secret };
}
