import { CliError } from "../errors.ts";
import { note, ok, out, printJson, say, table } from "../output.ts";
import { readStdinSecret } from "../prompt.ts";
import { asSession, requireSession } from "../session.ts";
import { orgIdOf, type OrgFlags } from "./manage.ts";

/**
 * `retasc connector add|list|revoke`: intake connectors through /api/cli/connectors
 * (app/routes/api.cli.connectors.ts) as the signed-in person. The write-back token comes on
 * standard input (--token-stdin), never as a flag.
 */

/** POST action add (server/intake/create.ts). */
interface AddedConnector {
  connectorId: string;
  webhookUrl: string;
  secret: string;
  project: string;
  tokenOnFile: boolean;
  pullRequests: boolean;
  steps: string[];
}

/** GET (server/intake/connectors.ts), the fields read here. */
interface ConnectorList {
  connectors: {
    id: string;
    provider: string;
    repo: string;
    project: string;
    tokenOnFile: boolean;
    status: "active" | "revoked";
    connection: "pending" | "connected";
    lastDeliveryAt: string | null;
    lastError: string | null;
  }[];
}

export async function connectorAdd(
  flags: OrgFlags & { project?: string; "base-url"?: string; "token-stdin"?: boolean; "pull-requests"?: boolean; reviewer?: string },
  positionals: string[],
) {
  const [provider, repo] = positionals;
  if ((provider !== "github" && provider !== "gitlab") || !repo || !flags.project) {
    throw new CliError("INVALID_INPUT", "connector add needs a provider, a repository and --project", "retasc connector add github owner/name --project RTSC");
  }
  if (flags["pull-requests"] && !flags.reviewer) {
    throw new CliError("INVALID_INPUT", "--pull-requests needs --reviewer", "retasc connector add github owner/name --project RTSC --pull-requests --reviewer ada@example.com");
  }
  let token: string | undefined;
  if (flags["token-stdin"]) {
    token = (await readStdinSecret()) ?? undefined;
    if (!token) throw new CliError("INVALID_INPUT", "--token-stdin but no token on standard input", "Pipe it in: retasc connector add … --token-stdin < token.txt");
  }
  const session = requireSession(flags);
  const orgId = await orgIdOf(flags, session);
  const added = await asSession<AddedConnector>(session, "/connectors", {
    body: { orgId, action: "add", provider, repo, project: flags.project, ...(flags["base-url"] ? { baseUrl: flags["base-url"] } : {}), ...(token ? { token } : {}),
      ...(flags["pull-requests"] ? { pullRequests: true, reviewer: flags.reviewer } : {}) },
  });
  if (flags.json) return printJson(added);
  ok(`Connected ${repo} to ${added.project} (${added.connectorId}); it is Pending until the first delivery.`);
  if (added.pullRequests) say(`Outsiders' pull requests go to ${flags.reviewer} for review.`);
  say(`Webhook URL: ${added.webhookUrl}`);
  note("The secret is shown once; store it in the webhook now:");
  out(added.secret);
  added.steps.forEach((step, i) => say(`${i + 1}. ${step}`));
}

export async function connectorList(flags: OrgFlags) {
  const session = requireSession(flags);
  const orgId = await orgIdOf(flags, session);
  const { connectors } = await asSession<ConnectorList>(session, "/connectors", { query: { orgId } });
  if (flags.json) return printJson({ connectors });
  if (connectors.length === 0) return say("No connectors.");
  out(table(
    ["PROVIDER", "REPOSITORY", "PROJECT", "STATUS", "LAST DELIVERY", "TOKEN", "LAST ERROR", "ID"],
    connectors.map((c) => [
      c.provider,
      c.repo,
      c.project,
      c.status === "revoked" ? "revoked" : c.connection,
      c.lastDeliveryAt?.slice(0, 16) ?? "never",
      c.tokenOnFile ? "yes" : "no",
      c.lastError ?? "",
      c.id,
    ]),
  ));
}

export async function connectorRevoke(flags: OrgFlags, positionals: string[]) {
  const [connectorId] = positionals;
  if (!connectorId) throw new CliError("INVALID_INPUT", "connector revoke needs the connector's id", "retasc connector revoke <id> (retasc connector list shows them)");
  const session = requireSession(flags);
  const orgId = await orgIdOf(flags, session);
  const result = await asSession<{ changed: boolean }>(session, "/connectors", { body: { orgId, action: "revoke", connectorId } });
  if (flags.json) return printJson(result);
  ok(result.changed ? "Connector revoked: its webhooks are refused from now on." : "That connector was already revoked.");
}
