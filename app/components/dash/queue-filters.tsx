import { Form, Link, useLocation } from "react-router";
import type { QueuePage } from "../../../server/dash/queue.ts";
import { focusRing, linkClass } from "./bits.tsx";
import { issueStatuses } from "../../../constants/statuses.ts";
import { PRIORITIES } from "./format.ts";
import { queueHref } from "./queue.tsx";
import "./dash.css";

const control = `rounded border border-stone-300 bg-white px-2 py-1.5 text-sm ${focusRing}`;

/** The queue page's filter form: a GET, so the filters live in the URL. */
export function QueueFilters({ page }: { page: QueuePage }) {
  const { input } = page;
  // `/` pressed on another page comes here to search.
  const focusSearch = (useLocation().state as { focusSearch?: boolean } | null)?.focusSearch === true;
  return (
    <Form method="get" className="flex flex-wrap items-end gap-x-6 gap-y-3 rounded-lg border border-stone-200 bg-white p-4" aria-label="Queue filters">
      {input.tab !== "all" ? <input type="hidden" name="tab" value={input.tab} /> : null}
      {input.triage ? <input type="hidden" name="triage" value={input.triage} /> : null}
      <div className="flex w-full flex-col gap-1 sm:w-72">
        <label htmlFor="queue-search" className="text-sm font-medium">
          Search <kbd className="ml-1 rounded border border-line-strong px-1 font-mono text-xs text-muted">/</kbd>
        </label>
        <input
          id="queue-search"
          type="search"
          name="q"
          defaultValue={input.q ?? ""}
          placeholder="title words or an identifier"
          data-search
          autoFocus={focusSearch}
          className={control}
        />
      </div>
      <fieldset className="flex flex-col gap-1">
        <legend className="text-sm font-medium">Status</legend>
        <div className="flex flex-wrap gap-x-3 gap-y-1">
          {issueStatuses.map((s) => (
            <label key={s} className="inline-flex items-center gap-1 text-sm">
              <input type="checkbox" name="status" value={s} defaultChecked={input.status.includes(s)} className={focusRing} />
              {s}
            </label>
          ))}
        </div>
        <p className="text-xs text-stone-500">None ticked: every open status.</p>
      </fieldset>
      <fieldset className="flex flex-col gap-1">
        <legend className="text-sm font-medium">Priority</legend>
        <div className="flex flex-wrap gap-x-3 gap-y-1">
          {PRIORITIES.map((p) => (
            <label key={p.value} className="inline-flex items-center gap-1 text-sm">
              <input type="checkbox" name="priority" value={p.value} defaultChecked={input.priority.includes(p.value)} className={focusRing} />
              {p.label}
            </label>
          ))}
        </div>
      </fieldset>
      <div className="flex flex-col gap-1">
        <label htmlFor="queue-runtime" className="text-sm font-medium">
          Runtime
        </label>
        <select id="queue-runtime" name="runtime" defaultValue={input.runtime ?? ""} className={control}>
          <option value="">any</option>
          {page.runtimes.map((r) => (
            <option key={r} value={r}>
              {r}
            </option>
          ))}
        </select>
      </div>
      <div className="flex flex-col gap-1">
        <label htmlFor="queue-lane" className="text-sm font-medium">
          Lane
        </label>
        <select id="queue-lane" name="lane" defaultValue={input.lane ?? ""} className={control}>
          <option value="">anyone</option>
          <option value="none">unassigned</option>
          {page.lanes.map((email) => (
            <option key={email} value={email}>
              {email}
            </option>
          ))}
        </select>
      </div>
      <fieldset className="flex flex-wrap items-end gap-2">
        <legend className="sr-only">Date range</legend>
        <div className="flex flex-col gap-1">
          <label htmlFor="queue-date" className="text-sm font-medium">
            Date
          </label>
          <select id="queue-date" name="date" defaultValue={input.date} className={control}>
            <option value="created">created</option>
            <option value="updated">updated</option>
            <option value="due">due</option>
          </select>
        </div>
        <div className="flex flex-col gap-1">
          <label htmlFor="queue-from" className="text-sm font-medium">
            From
          </label>
          <input id="queue-from" type="date" name="from" defaultValue={input.from ?? ""} className={control} />
        </div>
        <div className="flex flex-col gap-1">
          <label htmlFor="queue-to" className="text-sm font-medium">
            To
          </label>
          <input id="queue-to" type="date" name="to" defaultValue={input.to ?? ""} className={control} />
        </div>
      </fieldset>
      <div className="flex items-center gap-3">
        <button type="submit" className={`rounded bg-stone-900 px-3 py-1.5 text-sm font-medium text-white hover:bg-stone-700 ${focusRing}`}>
          Apply filters
        </button>
        <Link to={queueHref(input, { status: [], priority: [], runtime: undefined, from: undefined, to: undefined, date: "created", q: undefined, lane: undefined, triage: undefined })} className={linkClass}>
          Clear
        </Link>
      </div>
    </Form>
  );
}
