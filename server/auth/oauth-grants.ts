import { and, asc, eq } from "drizzle-orm";
import { z } from "zod";
import { members, oauthClient, oauthGrants, orgs, projects } from "../../db/schema/index.ts";
import type { Services } from "../context.ts";
import { notFound } from "../errors.ts";
import { humanCtx, recordOrgActivity } from "../orgs/access.ts";
import { mintAgentKey } from "../orgs/index.ts";
import { revokeKeyTree } from "../orgs/keys.ts";

/**
 * What the consent page shows and does. Approving an OAuth client mints an agent key for the
 * approving person in the org (and project) they chose, with the client's name as its runtime,
 * exactly as `retasc key mint` would for themselves; the tokens the client then gets act as that
 * key (server/auth/oauth.ts). The key is listed and revoked on the Keys page like any other.
 */
export const approveClientInput = z.object({
  clientId: z.string().trim().min(1).max(200),
  orgId: z.string().trim().min(1, "pick an org").max(100),
  projectId: z.string().trim().max(100).optional(),
});

export interface ClientView {
  clientId: string;
  name: string;
  uri: string | null;
  redirectUris: string[];
}

/** The registered client a consent request names, or null (unknown or disabled). */
export async function clientForConsent(services: Pick<Services, "db">, clientId: string): Promise<ClientView | null> {
  const [row] = await services.db
    .select({ clientId: oauthClient.clientId, name: oauthClient.name, uri: oauthClient.uri, redirectUris: oauthClient.redirectUris, disabled: oauthClient.disabled })
    .from(oauthClient)
    .where(eq(oauthClient.clientId, clientId.slice(0, 200)));
  if (!row || row.disabled) return null;
  return { clientId: row.clientId, name: row.name?.trim() || "An unnamed MCP client", uri: row.uri, redirectUris: row.redirectUris };
}

/** The orgs a person may approve a client in (active memberships), each with its projects. */
export async function consentChoices(services: Pick<Services, "db">, userId: string) {
  const rows = await services.db
    .select({ orgId: orgs.id, orgName: orgs.name, projectId: projects.id, prefix: projects.prefix, projectName: projects.name })
    .from(members)
    .innerJoin(orgs, eq(orgs.id, members.orgId))
    .leftJoin(projects, eq(projects.orgId, orgs.id))
    .where(and(eq(members.userId, userId), eq(members.status, "active")))
    .orderBy(asc(orgs.name), asc(orgs.id), asc(projects.prefix));
  const byOrg = new Map<string, { orgId: string; name: string; projects: { projectId: string; prefix: string; name: string }[] }>();
  for (const row of rows) {
    let org = byOrg.get(row.orgId);
    if (!org) byOrg.set(row.orgId, (org = { orgId: row.orgId, name: row.orgName, projects: [] }));
    if (row.projectId) org.projects.push({ projectId: row.projectId, prefix: row.prefix!, name: row.projectName! });
  }
  return [...byOrg.values()];
}

/**
 * The runtime label of a client's key: its self-declared name in the characters a runtime label
 * allows (letters, digits, . _ : -), e.g. "Claude Code" → "Claude-Code".
 */
export function runtimeLabelOf(clientName: string | null | undefined): string {
  const label = (clientName ?? "")
    .normalize("NFKD")
    .replace(/[^A-Za-z0-9._:-]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 64);
  return label || "mcp-client";
}

/**
 * Checks what the consent page was given, before anything is recorded: the client is registered,
 * the person an active member of the chosen org, the project (if any) of that org. Returns the
 * grant's key minter, which withApproval (server/auth/oauth.ts) calls once the provider has
 * verified the signed request: the agent key for `userId` in that org, runtime = client name.
 */
export async function prepareApproval(services: Services, userId: string, raw: z.input<typeof approveClientInput>) {
  const input = approveClientInput.parse(raw);
  const client = await clientForConsent(services, input.clientId);
  if (!client) throw notFound("OAuth client", "Start the sign-in again from your MCP client.");
  const { ctx } = await humanCtx(services, { orgId: input.orgId, userId, runtime: "dash" });
  const projectId = input.projectId || null;
  if (projectId) {
    const [project] = await services.db
      .select({ id: projects.id })
      .from(projects)
      .where(and(eq(projects.id, projectId), eq(projects.orgId, input.orgId)));
    if (!project) throw notFound("project", "Pick a project of the org you chose.");
  }
  const runtime = runtimeLabelOf(client.name);
  return {
    orgId: input.orgId,
    mint: () =>
      ctx.db.transaction(async (tx) => {
        const { keyId } = await mintAgentKey(tx, { orgId: input.orgId, userId, runtime, projectId });
        await tx.insert(oauthGrants).values({ keyId, clientId: client.clientId, clientName: client.name.slice(0, 200) });
        await recordOrgActivity(ctx, tx, "key.minted", { keyId, runtime, userId, oauthClientId: client.clientId });
        return keyId;
      }),
  };
}

/** Undoes an approval whose authorization did not go through (an expired request, say). */
export async function withdrawApproval(services: Services, grant: { keyId: string; orgId: string }): Promise<void> {
  await services.db.transaction((tx) => revokeKeyTree(tx, grant.orgId, grant.keyId, services.clock.now()));
}
