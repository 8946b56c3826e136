import { Form, Link } from "react-router";
import type { Route } from "./+types/dash.settings.keys";
import { requireMember } from "../auth.server.ts";
import { publicBaseUrl } from "../../server/http/origin.ts";
import { attempt } from "../errors.server.ts";
import { listKeys, mintKey, revokeKey, rotateKey } from "../../server/orgs/keys.ts";
import { listProjects } from "../../server/orgs/projects.ts";
import { createSetupCode } from "../../server/orgs/setup-codes.ts";
import { Button, Card, EmptyState, ErrorNote, Field, Notice, SecretBox, Select } from "../components/ui.tsx";
import { stamp } from "../components/dash/format.ts";
import "../components/dash/dash.css";

const head = "px-2 py-2 font-medium text-muted";
const cell = "px-2 py-2 align-top";
import { readForm } from "../forms.server.ts";
import { cliInstallCommand } from "../../constants/cli-install.ts";

export function meta() {
  return [{ title: "Keys · Retasc" }];
}

export async function loader({ request, context }: Route.LoaderArgs) {
  const { ctx, membership } = await requireMember(request, context);
  const cursor = new URL(request.url).searchParams.get("cursor") ?? undefined;
  const [{ keys, nextCursor }, { projects }] = await Promise.all([listKeys(ctx, { includeRevoked: true, cursor }), listProjects(ctx, {})]);
  return { keys, nextCursor: nextCursor ?? null, paged: cursor !== undefined, projects, me: membership, origin: publicBaseUrl(request, context.services.config) };
}

/** The prompt a person pastes to an agent on a machine with no browser. */
function agentPrompt(origin: string, code: string): string {
  return [
    "Set Retasc up in the folder you're working in, so you can pull work from my queue.",
    "",
    "First tell me its full path, and wait for me to say go. Then run exactly this (the first line installs the CLI from my server, if it is not installed yet):",
    cliInstallCommand(origin),
    `retasc bind --setup ${code} --url ${origin}`,
    "",
    "When it's done, restart yourself so the Retasc tools load, then check my queue and tell me what you find.",
  ].join("\n");
}

export async function action({ request, context }: Route.ActionArgs) {
  const { ctx } = await requireMember(request, context);
  const form = await readForm(request);
  const intent = String(form.get("intent") ?? "");
  const keyId = String(form.get("keyId") ?? "");
  const projectId = String(form.get("projectId") ?? "") || undefined;
  const runtime = String(form.get("runtime") ?? "") || undefined;
  const result = await attempt(context.log, async () => {
    switch (intent) {
      case "mint": {
        const name = String(form.get("name") ?? "").trim() || undefined;
        const minted = await mintKey(ctx, { projectId, runtime, name, hosted: form.get("hosted") === "on" });
        return { secret: { label: "New key", key: minted.key } };
      }
      case "rotate": {
        const rotated = await rotateKey(ctx, { keyId });
        return { secret: { label: "Replacement key", key: rotated.key } };
      }
      case "revoke":
        await revokeKey(ctx, { keyId });
        return { done: "Key revoked." };
      case "setup": {
        const setup = await createSetupCode(ctx, { projectId: projectId ?? "", runtime });
        return { setup: { ...setup, prompt: agentPrompt(publicBaseUrl(request, context.services.config), setup.code) } };
      }
      default:
        return {};
    }
  });
  return result.ok ? { ...result.value, error: null } : { error: result.error };
}

export default function Keys({ loaderData, actionData }: Route.ComponentProps) {
  const { keys, nextCursor, paged, projects, me, origin } = loaderData;
  const seesAll = me.role !== "member";
  const projectOptions = projects.map((p) => ({ value: p.id, label: `${p.prefix} · ${p.name}` }));
  const secret = actionData && "secret" in actionData ? actionData.secret : null;
  const setup = actionData && "setup" in actionData ? actionData.setup : null;
  return (
    <div className="flex flex-col gap-8">
      <h1 className="text-2xl font-semibold">Agent keys</h1>
      <p className="text-sm text-stone-700">
        {seesAll ? "Every key in the org." : "Your keys."} A key acts for one person in one org and project; it is shown once, when
        it is minted or rotated.
      </p>
      <ErrorNote error={actionData?.error} />
      {actionData && "done" in actionData && actionData.done ? <Notice>{actionData.done}</Notice> : null}
      {secret ? (
        <div className="flex flex-col gap-2" data-testid="new-key">
          <Notice>Copy it now: this is the only time it is shown.</Notice>
          <SecretBox label={secret.label} value={secret.key} />
        </div>
      ) : null}
      {keys.length === 0 ? (
        <EmptyState title="No agent keys yet.">
          Mint one below for an MCP client, get a setup code for an agent on a machine with no browser, or run <code>retasc bind</code> in the
          agent's folder (it mints its own; install the CLI from this server with <code className="break-all">{cliInstallCommand(origin)}</code>).
        </EmptyState>
      ) : (
      <table className="stack-md w-full border-collapse text-left text-sm">
        <caption className="sr-only">Agent keys</caption>
        <thead>
          <tr className="border-b border-line-strong">
            <th scope="col" className={head}>Key</th>
            <th scope="col" className={head}>Name</th>
            <th scope="col" className={head}>Runtime</th>
            <th scope="col" className={head}>Person</th>
            <th scope="col" className={head}>Project</th>
            <th scope="col" className={head}>Last used</th>
            <th scope="col" className={head}>State</th>
            <th scope="col"><span className="sr-only">Actions</span></th>
          </tr>
        </thead>
        <tbody>
          {keys.map((k) => (
            <tr key={k.keyId} className="border-b border-line max-md:py-2" data-key={k.prefix}>
              <td className={`${cell} font-mono`} data-label="Key">
                {k.oauthClient ? <span title={`Approved for ${k.oauthClient} (OAuth sign-in)`}>OAuth</span> : `${k.prefix}…`}
              </td>
              <td className={cell} data-label="Name">{k.name ?? "—"}</td>
              <td className={`${cell} font-mono`} data-label="Runtime">
                {k.runtime}
                {k.hosted ? <span title="Hosted: no watchdog proxy; its claim replies say what renews them"> (hosted)</span> : null}
              </td>
              <td className={cell} data-label="Person">{k.userEmail}</td>
              <td className={cell} data-label="Project">{k.projectPrefix ?? "any"}</td>
              <td className={`${cell} tabular-nums`} data-label="Last used">{k.lastUsedAt ? stamp(k.lastUsedAt) : "never"}</td>
              <td className={cell} data-label="State">{k.status}</td>
              <td className="px-2 py-1.5 text-right align-top">
                {k.status === "active" ? (
                  <Form method="post" className="inline-flex gap-2">
                    <input type="hidden" name="keyId" value={k.keyId} />
                    {/* An OAuth grant has no secret to replace: its client signs in again. */}
                    {k.oauthClient ? null : (
                      <Button name="intent" value="rotate" tone="secondary" aria-label={`Rotate ${k.prefix}`}>
                        Rotate
                      </Button>
                    )}
                    <Button name="intent" value="revoke" tone="danger" aria-label={`Revoke ${k.prefix}`}>
                      Revoke
                    </Button>
                  </Form>
                ) : null}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      )}
      {paged || nextCursor ? (
        <nav aria-label="Key pages" className="flex gap-4 text-sm">
          {paged ? <Link className="underline" to="?">First page</Link> : null}
          {nextCursor ? <Link className="underline" to={`?${new URLSearchParams({ cursor: nextCursor })}`}>Next page</Link> : null}
        </nav>
      ) : null}
      {projects.length === 0 ? (
        <EmptyState title="No project yet.">
          Keys are minted for a project: <Link to="/dash/settings/projects" className="font-medium text-accent underline">create one</Link> first.
        </EmptyState>
      ) : (
        <div className="grid gap-6 md:grid-cols-2">
          <Card title="Mint a key">
            <Form method="post" className="flex flex-col gap-4">
              <Select label="Project" name="projectId" options={projectOptions} />
              <Field label="Runtime" name="runtime" defaultValue="claude-code" hint="What runs with it: claude-code, codex, cursor, ci…" />
              <Field label="Name (optional)" name="name" hint="What you call it in this list" />
              <label className="flex items-center gap-2 text-sm">
                <input type="checkbox" name="hosted" /> Hosted agent or CI: no watchdog will run for it, its own calls renew its claims
              </label>
              <div>
                <Button name="intent" value="mint">
                  Mint key
                </Button>
              </div>
            </Form>
          </Card>
          <Card title="Connect an agent with no browser">
            {setup ? (
              <div className="mb-4 flex flex-col gap-2" data-testid="setup-code">
                <Notice>Paste this to your agent. The code works once, within ten minutes.</Notice>
                <SecretBox label="Agent prompt" value={setup.prompt} />
              </div>
            ) : null}
            <Form method="post" className="flex flex-col gap-4">
              <Select label="Project" name="projectId" options={projectOptions} />
              <Field label="Runtime" name="runtime" defaultValue="claude-code" />
              <div>
                <Button name="intent" value="setup">
                  Get a setup code
                </Button>
              </div>
            </Form>
          </Card>
        </div>
      )}
    </div>
  );
}
