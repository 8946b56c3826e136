import { Link } from "react-router";
import type { QueuePage } from "../../../server/dash/queue.ts";
import { focusRing, linkClass } from "./bits.tsx";
import "./dash.css";

/** The queue page's tabs, pager and triage note, and the URL of its filters; the filter form is in queue-filters.tsx, the table in queue-table.tsx. */

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
