import { Form, Link, useLocation } from "react-router";
import type { QueuePage } from "../../../server/dash/queue.ts";
import { HolderPill, IssueLink, LevelName, SlaText, StatusBadge, WorkPills, focusRing, linkClass } from "./bits.tsx";
import { issueStatuses } from "../../../constants/statuses.ts";
import { PRIORITIES, countdown, priorityName, stamp, timeLeft } from "./format.ts";
import { WhyText } from "./why.tsx";
import { AwaitingTriageBadge } from "./triage.tsx";
import { EmptyState } from "../ui.tsx";
import "./dash.css";

/** The queue page's filter form (GET: the filters live in the URL) and its table. */

type Input = QueuePage["input"];

/** The current filters as a query string, with some changed (page resets unless given). */
export function queueHref(input: Input, change: Partial<Input>): string {
  const next = { ...input, page: 1, ...change };
  const params = new URLSearchParams();
  if (next.tab !== "all") params.set("tab", next.tab);
  for (const s of next.status) params.append("status", s);
  if (next.runtime) params.set("runtime", next.runtime);
  for (const p of next.priority) params.append("priority", String(p));
  if (next.from || next.to) params.set("date", next.date);
  if (next.from) params.set("from", next.from);
  if (next.to) params.set("to", next.to);
  if (next.q) params.set("q", next.q);
  if (next.lane) params.set("lane", next.lane);
  if (next.triage) params.set("triage", next.triage);
  if (next.page > 1) params.set("page", String(next.page));
  const query = params.toString();
  return query ? `/dash/queue?${query}` : "/dash/queue";
}

const control = `rounded border border-stone-300 bg-white px-2 py-1.5 text-sm ${focusRing}`;

export function QueueTabs({ page }: { page: QueuePage }) {
  const tabs = [
    { tab: "all" as const, label: "All", count: page.counts.all, hint: "every issue matching the filters" },
    { tab: "backlog" as const, label: "Backlog", count: page.counts.backlog, hint: "never touched: the fresh pull pool" },
    { tab: "active" as const, label: "Active", count: page.counts.active, hint: "claimed, checkpointed or reclaimed at least once" },
  ];
  return (
    <nav aria-label="Queue tabs" className="flex gap-1 border-b border-stone-300">
      {tabs.map((t) => {
        const current = page.input.tab === t.tab;
        return (
          <Link
            key={t.tab}
            to={queueHref(page.input, { tab: t.tab })}
            aria-current={current ? "page" : undefined}
            title={t.hint}
            className={`-mb-px border-b-2 px-3 py-2 text-sm ${focusRing} ${current ? "border-stone-900 font-semibold" : "border-transparent text-stone-600 hover:text-stone-900"}`}
          >
            {t.label} <span className="tabular-nums text-stone-500">{t.count}</span>
          </Link>
        );
      })}
    </nav>
  );
}

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

const cell = "px-2 py-2 align-top";

export function QueueTable({ page, now }: { page: QueuePage; now: number }) {
  if (page.issues.length === 0) {
    return page.counts.all === 0 && !page.input.q && !page.input.triage && page.input.status.length === 0 ? (
      <EmptyState title="The queue is empty.">
        <Link to="/dash/issues/new" className={linkClass}>Create an issue</Link> (press <kbd>c</kbd>), or let an agent file one with{" "}
        <code>save_issue</code>.
      </EmptyState>
    ) : (
      <EmptyState title="No issue matches these filters.">
        <Link to={queueHref(page.input, { status: [], priority: [], runtime: undefined, from: undefined, to: undefined, date: "created", q: undefined, lane: undefined, triage: undefined })} className={linkClass}>
          See every issue
        </Link>{" "}
        in the queue.
      </EmptyState>
    );
  }
  return (
    <table className="stack-lg w-full border-collapse text-left text-sm">
      <caption className="sr-only">Issues in dispatch order</caption>
      <thead className="border-b border-stone-300 text-stone-600">
        <tr>
          <th scope="col" className="w-12 px-2 py-2 text-right font-medium">#</th>
          <th scope="col" className="px-2 py-2 font-medium">Issue</th>
          <th scope="col" className="px-2 py-2 font-medium">State</th>
          <th scope="col" className="px-2 py-2 font-medium">Lane</th>
          <th scope="col" className="px-2 py-2 font-medium">Priority</th>
          <th scope="col" className="px-2 py-2 font-medium">Effective</th>
          <th scope="col" className="px-2 py-2 font-medium">Why</th>
          <th scope="col" className="px-2 py-2 font-medium">Deadline</th>
        </tr>
      </thead>
      <tbody className="max-lg:space-y-3">
        {page.issues.map((r) => (
          <tr key={r.identifier} data-testid={`queue-row-${r.identifier}`} className="border-b border-stone-200 max-lg:rounded-lg max-lg:border max-lg:bg-white max-lg:p-3">
            <td className={`${cell} tabular-nums text-stone-500 lg:w-12 lg:text-right`} data-label="Position">
              {r.position}
            </td>
            <td className={cell} data-label="Issue">
              <span className="flex min-w-0 flex-col gap-0.5">
                <span className="flex items-center gap-2">
                  <IssueLink identifier={r.identifier} row />
                  {!r.work ? <span className="text-xs text-stone-500">container</span> : null}
                </span>
                <span className="max-w-[24rem] text-stone-800">{r.title}</span>
              </span>
            </td>
            <td className={cell} data-label="State">
              <span className="flex flex-wrap items-center gap-1">
                <StatusBadge status={r.status} />
                {r.awaitingTriage ? <AwaitingTriageBadge identifier={r.identifier} /> : null}
                {r.holderRuntime && r.leaseExpiresAt ? <HolderPill runtime={r.holderRuntime} leftMs={Date.parse(r.leaseExpiresAt) - now} /> : null}
                <WorkPills pills={r.pills} />
                {r.openBlockers > 0 ? <span className="text-xs text-orange-800">waits on {r.openBlockers}</span> : null}
              </span>
            </td>
            <td className={`${cell} lg:max-w-[12rem] [overflow-wrap:anywhere]`} data-label="Lane">
              {r.lane ?? <span className="text-muted">unassigned</span>}
            </td>
            <td className={cell} data-label="Priority">
              <LevelName level={r.why.priorityLevel} />
            </td>
            <td className={cell} data-label="Effective">
              <LevelName level={r.why.effectiveLevel} />
            </td>
            <td className={`${cell} max-w-[18rem]`} data-label="Why">
              <WhyText why={r.why} />
            </td>
            <td className={cell} data-label="Deadline">
              {r.dueAt ? (
                <span className="flex flex-col">
                  <SlaText state={r.slaState}>
                    {r.slaState} · {r.timeRemainingMs !== null ? timeLeft(r.timeRemainingMs) : ""}
                  </SlaText>
                  <span className="text-xs text-stone-500">{stamp(r.dueAt)}</span>
                </span>
              ) : (
                <span className="text-stone-500">none</span>
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function Pager({ page }: { page: QueuePage }) {
  if (page.pageCount <= 1) return null;
  const prev = page.page > 1 ? queueHref(page.input, { page: page.page - 1 }) : null;
  const next = page.page < page.pageCount ? queueHref(page.input, { page: page.page + 1 }) : null;
  return (
    <nav aria-label="Pages" className="flex items-center justify-between gap-3 text-sm">
      {prev ? (
        <Link to={prev} className={linkClass} rel="prev">
          ← Previous
        </Link>
      ) : (
        <span />
      )}
      <span className="tabular-nums text-stone-600">
        Page {page.page} of {page.pageCount} · {page.total} issues
      </span>
      {next ? (
        <Link to={next} className={linkClass} rel="next">
          Next →
        </Link>
      ) : (
        <span />
      )}
    </nav>
  );
}

/** How many of the matching issues await triage, with the way to list them (or back to all). */
export function TriageNote({ page }: { page: QueuePage }) {
  if (page.input.triage) {
    return (
      <p className="text-sm text-stone-700" data-testid="triage-note">
        Showing the issues awaiting triage: open one to accept or cancel it.{" "}
        <Link to={queueHref(page.input, { triage: undefined })} className={linkClass}>
          Show every issue
        </Link>
      </p>
    );
  }
  if (page.awaitingTriage === 0) return null;
  const n = page.awaitingTriage;
  const them = n === 1 ? "it" : "them";
  return (
    <p className="rounded-lg border border-amber-300 bg-amber-50 px-3 py-2 text-sm text-stone-900" data-testid="triage-note">
      {`${n === 1 ? "1 issue awaits" : `${n} issues await`} triage: filed by someone outside the team, no agent is handed ${them}, or reads ${them}, until a person accepts ${them}. `}
      <Link to={queueHref(page.input, { triage: "pending" })} className={linkClass}>
        {`Review ${them}`}
      </Link>
    </p>
  );
}
