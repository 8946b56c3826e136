import { and, asc, eq, isNotNull, isNull } from "drizzle-orm";
import { z } from "zod";
import { connectors } from "../../db/schema/index.ts";
import type { Ctx } from "../context.ts";
import { OutboundRefused } from "../outbound/address.ts";
import { openRequestAtSource, TokenRefused } from "./providers.ts";
import { shortReason } from "../outbound/failure.ts";

export const openRequestInput = z.object({
  branch: z.string().trim().min(1, "branch is required").max(255, "a branch name is at most 255 characters"),
});

export interface OpenRequestAnswer {
  branch: string;
  /** The request's page (its number ends it, which is what CI results are matched on), or null. */
  pr: string | null;
  number: number | null;
  /** The connector's repository that was asked, or null when there was none to ask. */
  repo: string | null;
  provider: "github" | "gitlab" | null;
  /** One line for the person: what was found, or why nothing was. */
  note: string;
}

/**
 * `retasc done`'s pull/merge request (decision 063): the open request for `branch` in the
 * repository of the key's project's GitHub or GitLab connector, asked with the connector's
 * write-back token, so the CLI never holds a forge token. Never a refusal: a project with no
 * connector (or none with a token), a token the forge refuses, an address the outbound guard
 * refuses or a forge that does not answer all read `pr: null` with a note saying why, and the
 * finish goes on without it.
 */
export async function openRequestFor(ctx: Ctx, raw: unknown): Promise<OpenRequestAnswer> {
  const { branch } = openRequestInput.parse(raw);
  const none = (note: string, at?: { repo: string; provider: "github" | "gitlab" }) => ({ branch, pr: null, number: null, repo: at?.repo ?? null, provider: at?.provider ?? null, note });
  const projectId = ctx.principal.projectId;
  if (!projectId) return none("no pull/merge request looked up: the key has no project, so no connector to ask");
  const rows = await ctx.db
    .select({ provider: connectors.provider, repo: connectors.repo, baseUrl: connectors.baseUrl, tokenEnc: connectors.tokenEnc })
    .from(connectors)
    .where(and(eq(connectors.orgId, ctx.principal.orgId), eq(connectors.projectId, projectId), isNull(connectors.revokedAt), isNotNull(connectors.tokenEnc)))
    .orderBy(asc(connectors.createdAt), asc(connectors.id));
  if (rows.length === 0) return none("no pull/merge request looked up: the project has no GitHub or GitLab connector with a token");
  const cipher = await ctx.keyring.forOrg(ctx.db, ctx.principal.orgId);
  const problems: string[] = [];
  for (const row of rows) {
    const at = { repo: row.repo, provider: row.provider };
    try {
      const found = await openRequestAtSource(ctx.config, { ...row, token: cipher.decrypt(row.tokenEnc)! }, branch);
      if (found) return { branch, pr: found.url, number: found.number, ...at, note: `found ${row.provider === "github" ? "pull" : "merge"} request ${found.url}` };
    } catch (error) {
      const why =
        error instanceof TokenRefused
          ? `the connector's token was refused (${error.status})`
          : error instanceof OutboundRefused
            ? error.message
            : shortReason((error as Error).message);
      problems.push(`${row.repo}: ${why}`);
    }
  }
  const repos = rows.map((r) => r.repo).join(", ");
  if (problems.length === rows.length) return none(`no pull/merge request found: could not ask ${problems.join("; ")}`, rows[0]);
  return none(`no open pull/merge request found for ${branch} in ${repos}`, rows[0]);
}
