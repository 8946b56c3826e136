import { Link } from "react-router";
import type { Route } from "./+types/dash._index";
import { requireMember } from "../auth.server.ts";
import { publicBaseUrl } from "../../server/http/origin.ts";
import { fleetSnapshot } from "../../server/dash/fleet.ts";
import { listProjects } from "../../server/orgs/projects.ts";
import { Card, SecretBox } from "../components/ui.tsx";
import { cliInstallCommand } from "../../constants/cli-install.ts";
import { LiveIndicator, Stat, linkClass } from "../components/dash/bits.tsx";
import { AttentionList, ClaimsTable, MovesList } from "../components/dash/fleet.tsx";
import { PacePicture } from "../components/dash/pace.tsx";
import { FleetChartsGrid, RangeToggle } from "../components/dash/charts.tsx";
import { FalseDoneTable } from "../components/dash/false-done.tsx";
import { chartRange } from "../../constants/chart-ranges.ts";
import { useLiveRevalidation, useServerNow } from "../components/dash/live.ts";

export function meta({ loaderData }: Route.MetaArgs) {
  return [{ title: `Fleet · ${loaderData?.org.name ?? "Dash"} · Retasc` }];
}

/** The fleet view: who holds what right now, leases ticking, and work moving between agents. */
export async function loader({ request, context }: Route.LoaderArgs) {
  const { ctx, org } = await requireMember(request, context);
  const range = chartRange(new URL(request.url).searchParams.get("range"));
  const [fleet, { projects }] = await Promise.all([fleetSnapshot(ctx, range), listProjects(ctx, {})]);
  return { org, fleet, projectCount: projects.length, origin: publicBaseUrl(request, context.services.config) };
}

export default function Fleet({ loaderData }: Route.ComponentProps) {
  const { org, fleet, projectCount, origin } = loaderData;
  const live = useLiveRevalidation();
  const now = useServerNow(fleet.now);
  const fresh = fleet.claims.length === 0 && fleet.moves.length === 0;
  return (
    <div className="flex flex-col gap-8">
      <div className="flex flex-wrap items-baseline justify-between gap-3">
        <div>
          <h1 className="text-2xl font-semibold">Fleet</h1>
          <p className="text-sm text-stone-600">{org.name}</p>
        </div>
        <LiveIndicator state={live} />
      </div>

      {fresh ? (
        <Card title="Next: connect an agent">
          {projectCount === 0 ? (
            <p className="mb-3 text-sm text-stone-700">
              First <Link className={linkClass} to="/dash/settings/projects">create a project</Link>: issues and agent keys belong to one.
            </p>
          ) : null}
          <p className="mb-3 text-sm text-stone-700">
            Install the CLI once from this server (<code className="break-all">{cliInstallCommand(origin)}</code>), then in the
            folder your agent works in:
          </p>
          <SecretBox label="Commands" value={`retasc login --url ${origin}\nretasc bind`} />
          <p className="mt-3 text-sm text-stone-700">
            Then start the agent there and ask it to call <code>next_issue</code>; its claim shows on this page. Work to hand out:{" "}
            <Link className={linkClass} to="/dash/issues/new">create an issue</Link>.
          </p>
          <p className="mt-3 mb-2 text-sm text-stone-700">
            An MCP client that signs in with OAuth (or takes a key from the <Link className={linkClass} to="/dash/settings/keys">Keys</Link> page)
            connects to this URL; an agent on a machine with no browser takes a setup code from the same page.
          </p>
          <SecretBox label="MCP server URL" value={`${origin}/mcp`} />
        </Card>
      ) : null}

      <section aria-labelledby="counts-heading">
        <h2 id="counts-heading" className="sr-only">
          Queue counts
        </h2>
        <div className="grid grid-cols-2 gap-3 sm:grid-cols-3 lg:grid-cols-5">
          <Stat label="Ready" value={fleet.counts.ready} to="/dash/queue" />
          <Stat label="Held now" value={fleet.counts.held} tone="text-emerald-800" to="/dash/queue?tab=active" />
          <Stat label="Blocked" value={fleet.counts.blocked} tone="text-orange-800" />
          <Stat label="In review" value={fleet.counts.review} tone="text-violet-800" to="/dash/queue?status=review" />
          <Stat label="Breaching" value={fleet.counts.breaching} tone={fleet.counts.breaching > 0 ? "text-red-800" : "text-stone-900"} />
        </div>
      </section>

      <section aria-labelledby="pace-heading" className="flex flex-col gap-3">
        <div className="flex flex-wrap items-baseline justify-between gap-3">
          <h2 id="pace-heading" className="text-lg font-semibold">
            Pace
          </h2>
          <RangeToggle range={fleet.charts.range} />
        </div>
        <PacePicture charts={fleet.charts} forecast={fleet.forecast} />
        <FleetChartsGrid charts={fleet.charts} />
      </section>

      <section aria-labelledby="attention-heading" className="flex flex-col gap-3">
        <h2 id="attention-heading" className="text-lg font-semibold">
          Waiting on a person
        </h2>
        <AttentionList attention={fleet.attention} claims={fleet.claims} now={now} />
      </section>

      <section aria-labelledby="false-done-heading" className="flex flex-col gap-3">
        <h2 id="false-done-heading" className="text-lg font-semibold">
          Done you can trust
        </h2>
        <FalseDoneTable rows={fleet.falseDone} />
      </section>

      <section aria-labelledby="claims-heading" className="flex flex-col gap-3">
        <h2 id="claims-heading" className="text-lg font-semibold">
          Live claims
        </h2>
        <ClaimsTable claims={fleet.claims} now={now} />
      </section>

      <section aria-labelledby="moves-heading" className="flex flex-col gap-3">
        <h2 id="moves-heading" className="text-lg font-semibold">
          Claims, handoffs and reclaims
        </h2>
        <MovesList moves={fleet.moves} now={now} />
      </section>

    </div>
  );
}
