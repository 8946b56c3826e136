import { Form } from "react-router";
import type { Route } from "./+types/dash.analytics";
import { requireMember } from "../auth.server.ts";
import { attempt } from "../errors.server.ts";
import { analyticsOverview } from "../../server/analytics/overview.ts";
import { analyticsIssues } from "../../server/analytics/issues.ts";
import { listProjects } from "../../server/orgs/projects.ts";
import { Button, ErrorNote, Select } from "../components/ui.tsx";
import { Stat } from "../components/dash/bits.tsx";
import { CostPerPerson, CostTable, FinishedPerDay, FlowTable, Definitions, SlowestTable, TimeInReview } from "../components/dash/analytics.tsx";

export function meta() {
  return [{ title: "Analytics · Retasc" }];
}

const DAY_CHOICES = [1, 7, 30, 90];

/** The numbers analytics_overview and analytics_issues answer, over a range the person picks (decision 071). */
export async function loader({ request, context }: Route.LoaderArgs) {
  const { ctx } = await requireMember(request, context);
  const params = new URL(request.url).searchParams;
  const input = { days: Number(params.get("days") ?? 7), project: params.get("project") || undefined };
  const read = async (period: { days?: number; project?: string }) => {
    const [overview, slowest, reviews] = await Promise.all([
      analyticsOverview(ctx, period),
      analyticsIssues(ctx, { ...period, figure: "slowest", limit: 10 }),
      analyticsIssues(ctx, { ...period, figure: "review", limit: 10 }),
    ]);
    return { overview, slowest, reviews };
  };
  // A range or project from the URL the server refuses is said on the page, over the default range.
  const [asked, { projects }] = await Promise.all([
    attempt(context.log, () => read(input)),
    listProjects(ctx, {}),
  ]);
  const shown = asked.ok ? asked.value : await read({});
  return { ...shown, error: asked.error ?? null, projects: projects.map((p) => p.prefix) };
}

export default function Analytics({ loaderData }: Route.ComponentProps) {
  const { overview, slowest, reviews, error, projects } = loaderData;
  const rate = overview.falseDone.rate;
  return (
    <div className="flex flex-col gap-8">
      <div>
        <h1 className="text-2xl font-semibold">Analytics</h1>
        <p className="text-sm text-stone-600">
          The last {overview.days === 1 ? "day" : `${overview.days} days`} of {overview.project ? `project ${overview.project}` : "every project you see"}, work issues only.
        </p>
      </div>
      <Form method="get" className="flex flex-wrap items-end gap-3" aria-label="Choose the range">
        <Select label="Range" name="days" defaultValue={String(overview.days)} options={DAY_CHOICES.map((d) => ({ value: String(d), label: d === 1 ? "last day" : `last ${d} days` }))} />
        <Select label="Project" name="project" defaultValue={overview.project ?? ""} options={[{ value: "", label: "all I see" }, ...projects.map((p) => ({ value: p, label: p }))]} />
        <Button tone="secondary">Show</Button>
      </Form>
      <ErrorNote error={error} />

      <section aria-labelledby="totals-heading">
        <h2 id="totals-heading" className="sr-only">Totals</h2>
        <div className="grid grid-cols-2 gap-3 sm:grid-cols-3 lg:grid-cols-5" data-testid="analytics-totals">
          <Stat label="Created" value={overview.totals.created} />
          <Stat label="Finished" value={overview.totals.finished} tone="text-emerald-800" />
          <Stat label="Canceled" value={overview.totals.canceled} />
          <Stat label="Reclaims" value={overview.totals.reclaims} tone="text-orange-800" />
          <div className="rounded-lg border border-stone-200 bg-white p-3 shadow-sm">
            <span className="block text-2xl font-semibold tabular-nums" data-testid="false-done-rate">{rate === null ? "–" : `${(rate * 100).toFixed(1)}%`}</span>
            <span className="block text-sm text-stone-600">False-done rate</span>
          </div>
        </div>
      </section>

      <FinishedPerDay from={overview.from} perDay={overview.perDay} />
      <FlowTable rows={overview.rows} />
      <TimeInReview issues={reviews.issues} all={overview.rows.find((r) => r.by === "all")} />
      {overview.cost ? <CostTable cost={overview.cost} /> : null}
      {overview.cost ? <CostPerPerson rows={overview.cost.rows} /> : null}
      <SlowestTable issues={slowest.issues} />
      <Definitions definitions={overview.definitions} />
    </div>
  );
}
