import { Form, redirect, useNavigation } from "react-router";
import type { Route } from "./+types/oauth.consent";
import { authOf, requireRecentUser } from "../auth.server.ts";
import { attempt } from "../errors.server.ts";
import { readForm } from "../forms.server.ts";
import { Button, ErrorNote } from "../components/ui.tsx";
import { clientForConsent, consentChoices, prepareApproval, withdrawApproval } from "../../server/auth/oauth-grants.ts";
import { withApproval } from "../../server/auth/oauth.ts";

export function meta() {
  return [{ title: "Connect an agent · Retasc" }];
}

/**
 * MCP sign-in's consent page (server/auth/oauth.ts). The authorization server sends the browser
 * here with a signed copy of the client's request; a signed-out person signs in first and comes
 * back. The person picks the org (and optionally one project) the client's agent works in, and
 * approves or denies; either way the browser returns to the client's redirect URI.
 */
const invalidRequest = { message: "This sign-in request is not valid or has expired.", hint: "Start the sign-in again from your MCP client." };

export async function loader({ request, context }: Route.LoaderArgs) {
  const url = new URL(request.url);
  // Signed out, the person signs in and comes back; approving mints a credential that acts as
  // them, so a sign-in from long ago is asked again too (decision 037).
  const user = await requireRecentUser(request, context);
  const client = url.searchParams.has("sig") ? await clientForConsent(context.services, url.searchParams.get("client_id") ?? "") : null;
  if (!client) return { user, client: null, returnsTo: null, oauthQuery: "", orgs: [], error: invalidRequest };
  return {
    user,
    client: { name: client.name, uri: client.uri },
    returnsTo: hostOf(url.searchParams.get("redirect_uri")),
    oauthQuery: url.search.slice(1),
    orgs: await consentChoices(context.services, user.id),
    error: null,
  };
}

function hostOf(uri: string | null): string | null {
  try {
    return uri ? new URL(uri).host || uri : null;
  } catch {
    return null;
  }
}

export async function action({ request, context }: Route.ActionArgs) {
  const user = await requireRecentUser(request, context);
  const form = await readForm(request);
  // The page's query as it arrived: the signed request; the provider checks its signature and expiry.
  const oauthQuery = String(form.get("oauth_query") ?? "");
  const clientId = new URLSearchParams(oauthQuery).get("client_id") ?? "";
  const auth = authOf(context);
  // The provider reads the request (not only its headers) when it finishes the authorization.
  const consent = (accept: boolean) =>
    auth.api.oauth2Consent({
      body: { accept, oauth_query: oauthQuery },
      headers: new Headers(request.headers),
      request: new Request(new URL("/api/auth/oauth2/consent", request.url), { method: "POST", headers: request.headers }),
      asResponse: false,
    }) as Promise<{ url?: string }>;
  if (form.get("decision") !== "approve") {
    const denied = await attempt(context.log, () => consent(false));
    return denied.ok && denied.value.url ? redirect(denied.value.url) : { error: invalidRequest };
  }
  const [orgId = "", projectId = ""] = String(form.get("where") ?? "").split("|");
  const prepared = await attempt(context.log, () =>
    prepareApproval(context.services, user.id, { clientId, orgId, projectId }),
  );
  if (!prepared.ok) return { error: prepared.error };
  const approved = await attempt(context.log, () => withApproval(prepared.value.mint, () => consent(true)));
  const keyId = approved.ok ? approved.value.keyId : null;
  const to = approved.ok ? approved.value.result.url : undefined;
  // A code reaches the client only through its redirect; anything else leaves no live grant.
  if (to && keyId && new URL(to).searchParams.has("code")) return redirect(to);
  if (keyId) await withdrawApproval(context.services, { keyId, orgId: prepared.value.orgId });
  return { error: approved.ok ? invalidRequest : approved.error };
}

export default function Consent({ loaderData, actionData }: Route.ComponentProps) {
  const { user, client, returnsTo, oauthQuery, orgs } = loaderData;
  const error = actionData?.error ?? loaderData.error;
  const busy = useNavigation().state === "submitting";
  return (
    <main className="mx-auto flex max-w-md flex-col gap-6 px-6 py-16">
      <h1 className="text-2xl font-semibold">Connect an agent</h1>
      <p className="text-stone-700">
        Signed in as <strong>{user.email}</strong>.
      </p>
      <ErrorNote error={error} />
      {client && orgs.length === 0 ? (
        <ErrorNote error={{ message: "You are not an active member of any org.", hint: "Create an org in the Dash, or ask an owner for an invite, then sign in again from your MCP client." }} />
      ) : null}
      {client && orgs.length > 0 ? (
        <Form method="post" className="flex flex-col gap-4">
          <input type="hidden" name="oauth_query" value={oauthQuery} />
          <p>
            <strong data-testid="client-name">{client.name}</strong> asks to work as your agent: take issues from the queue, update,
            comment on and finish them, with your role in the org you pick.
            {returnsTo ? (
              <>
                {" "}
                Afterwards your browser goes back to <code className="break-all">{returnsTo}</code>.
              </>
            ) : null}
          </p>
          <div className="flex flex-col gap-1">
            <label htmlFor="consent-where" className="text-sm font-medium text-stone-800">
              Where it works
            </label>
            <select
              id="consent-where"
              name="where"
              className="rounded border border-stone-300 bg-white px-3 py-2 focus:outline-none focus:ring-2 focus:ring-stone-400"
            >
              {orgs.map((org) => (
                <optgroup key={org.orgId} label={org.name}>
                  <option value={`${org.orgId}|`}>{org.name}: every project</option>
                  {org.projects.map((p) => (
                    <option key={p.projectId} value={`${org.orgId}|${p.projectId}`}>
                      {org.name}: {p.prefix} ({p.name})
                    </option>
                  ))}
                </optgroup>
              ))}
            </select>
            <p className="text-xs text-stone-600">
              It acts as an agent key of yours there: revoke it any time on the Dash&apos;s Keys page.
            </p>
          </div>
          <div className="flex gap-3">
            <Button name="decision" value="approve">
              {busy ? "Connecting…" : "Approve"}
            </Button>
            <Button name="decision" value="deny" tone="danger">
              Deny
            </Button>
          </div>
        </Form>
      ) : null}
    </main>
  );
}
