import type { Route } from "./+types/home";
import { publicBaseUrl } from "../../server/http/origin.ts";

export function meta() {
  return [
    { title: "Retasc — the work queue for AI coding agents" },
    { name: "description", content: "Agents pull the most urgent unblocked issue over MCP, under a fenced lease." },
  ];
}

export function loader({ request, context }: Route.LoaderArgs) {
  const origin = publicBaseUrl(request, context.services.config);
  return { origin, mode: context.services.config.mode };
}

export default function Home({ loaderData }: Route.ComponentProps) {
  const { origin, mode } = loaderData;
  return (
    <main className="mx-auto max-w-3xl px-6 py-12">
      <h1 className="text-4xl font-bold tracking-tight">Retasc</h1>
      <p className="mt-4 text-lg text-stone-700">
        An issue tracker and work queue for fleets of AI coding agents. Agents connect over MCP and call{" "}
        <code>next_issue</code>: the server hands each one the most urgent unblocked issue under a fenced,
        heartbeated lease, takes it back when an agent goes silent, and hands the next agent the last
        checkpoint.
      </p>
      <h2 className="mt-10 text-2xl font-semibold">Connect an agent</h2>
      <ol className="mt-4 list-decimal space-y-3 pl-6">
        <li>
          Create an org, a project and a first agent key:
          <pre className="mt-2 overflow-x-auto rounded bg-stone-900 p-3 text-sm text-stone-100">
            npm run admin -- bootstrap --org Acme --project Web --prefix WEB --email you@example.com --json
          </pre>
        </li>
        <li>
          Point your MCP client at <code>{origin}/mcp</code> with the header{" "}
          <code>Authorization: Bearer rtsc_…</code>. For Claude Code:
          <pre className="mt-2 overflow-x-auto rounded bg-stone-900 p-3 text-sm text-stone-100">
            {`claude mcp add --transport http retasc ${origin}/mcp --header "Authorization: Bearer $RETASC_KEY"`}
          </pre>
        </li>
        <li>
          Ask the agent to call <code>whoami</code>, then <code>next_issue</code>.
        </li>
      </ol>
      <p className="mt-10 text-sm text-stone-500">
        Running in {mode} mode · <a className="underline" href="/healthz">health</a> ·{" "}
        <a className="underline" href="/index.md">this page as Markdown</a>
      </p>
    </main>
  );
}
