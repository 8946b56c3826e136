import { data } from "react-router";
import type { Route } from "./+types/dash.queue";
import { requireMember } from "../auth.server.ts";
import { toErrorBody } from "../errors.server.ts";
import { queueInputFromSearch, queuePage, queuePageInput } from "../../server/dash/queue.ts";
import { LiveIndicator, linkClass } from "../components/dash/bits.tsx";
import { Pager, QueueTabs, TriageNote } from "../components/dash/queue.tsx";
import { QueueFilters } from "../components/dash/queue-filters.tsx";
import { QueueTable } from "../components/dash/queue-table.tsx";
import { useLiveRevalidation, useServerNow } from "../components/dash/live.ts";
import { Link } from "react-router";

export function meta() {
  return [{ title: "Queue · Retasc" }];
}

/** The queue in dispatch order; filters and page come from the URL, so they survive a reload and can be shared. */
export async function loader({ request, context }: Route.LoaderArgs) {
  const { ctx } = await requireMember(request, context);
  try {
    return await queuePage(ctx, queuePageInput.parse(queueInputFromSearch(new URL(request.url).searchParams)));
  } catch (error) {
    const { status, body } = toErrorBody(error, context.log);
    throw data(body, { status });
  }
}

export default function Queue({ loaderData }: Route.ComponentProps) {
  const live = useLiveRevalidation({ minIntervalMs: 1000 });
  const now = useServerNow(loaderData.now);
  return (
    <div className="flex flex-col gap-5">
      <div className="flex flex-wrap items-baseline justify-between gap-3">
        <div>
          <h1 className="text-2xl font-semibold">Queue</h1>
          <p className="text-sm text-stone-600">In the order agents are handed work. Effective level includes urgency inherited from what an issue gates.</p>
        </div>
        <div className="flex items-center gap-4">
          <Link to="/dash/issues/new" className={linkClass}>
            New issue
          </Link>
          <LiveIndicator state={live} />
        </div>
      </div>
      <QueueTabs page={loaderData} />
      <QueueFilters key={JSON.stringify(loaderData.input)} page={loaderData} />
      <TriageNote page={loaderData} />
      <QueueTable page={loaderData} now={now} />
      <Pager page={loaderData} />
    </div>
  );
}

export function ErrorBoundary({ error }: Route.ErrorBoundaryProps) {
  const body = (error as { data?: { message?: string; hint?: string } })?.data;
  return (
    <div role="alert" className="flex flex-col gap-2">
      <h1 className="text-2xl font-semibold">Queue</h1>
      <p className="text-red-900">{body?.message ?? "The queue could not be loaded."}</p>
      {body?.hint ? <p className="text-stone-700">{body.hint}</p> : null}
      <Link to="/dash/queue" className={linkClass}>
        Clear the filters
      </Link>
    </div>
  );
}
