import type { ReactNode } from "react";
import { Link } from "react-router";
import { countdown, levelName } from "./format.ts";

/** Small pieces the Dash pages share. */

export const focusRing = "rounded-sm focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-sky-700";
export const linkClass = `font-medium text-sky-800 underline decoration-sky-300 underline-offset-2 hover:decoration-sky-800 ${focusRing}`;

const pillTones = {
  claimed: "border-emerald-300 bg-emerald-50 text-emerald-900",
  doing: "border-amber-300 bg-amber-50 text-amber-900",
  resumed: "border-violet-300 bg-violet-50 text-violet-900",
  neutral: "border-stone-300 bg-stone-50 text-stone-800",
  danger: "border-red-300 bg-red-50 text-red-900",
} as const;

export function Pill({ tone, children, title }: { tone: keyof typeof pillTones; children: ReactNode; title?: string }) {
  return (
    <span title={title} className={`inline-flex items-center rounded-full border px-2 py-px text-xs font-medium whitespace-nowrap ${pillTones[tone]}`}>
      {children}
    </span>
  );
}

/**
 * What the status alone does not say, once: that nobody holds a doing issue (and what its next
 * claim does), and that a live claim resumed unfinished work. Who holds a claim is shown by
 * the page beside it (the holder and lease), so "claimed" is not repeated here.
 */
export function WorkPills({ pills }: { pills: { claimed: boolean; unheld: string | null; resumed: boolean } }) {
  if (!pills.unheld && !pills.resumed) return null;
  return (
    <span className="inline-flex flex-wrap gap-1">
      {/* The sentence starts with the status, which the badge beside it already shows. */}
      {pills.unheld ? <Pill tone="doing">{pills.unheld.replace(/^\w+, /, "")}</Pill> : null}
      {pills.resumed ? <Pill tone="resumed" title="This claim carries on work a previous holder left unfinished">resumed</Pill> : null}
    </span>
  );
}

/** A live claim in a list: the holder's runtime and the lease time left, ticking. */
export function HolderPill({ runtime, leftMs }: { runtime: string; leftMs: number }) {
  return (
    <Pill tone="claimed" title="Claimed: the holder's runtime and the lease time left">
      <span className="font-mono">{runtime}</span>
      <span className="ml-1 inline-block w-[6ch] tabular-nums">{countdown(leftMs)}</span>
    </Pill>
  );
}

const statusTones: Record<string, string> = {
  todo: "bg-stone-100 text-stone-800",
  doing: "bg-sky-100 text-sky-900",
  blocked: "bg-orange-100 text-orange-900",
  review: "bg-violet-100 text-violet-900",
  done: "bg-emerald-100 text-emerald-900",
  canceled: "bg-stone-200 text-stone-600 line-through",
};

export function StatusBadge({ status }: { status: string }) {
  return <span className={`inline-block rounded px-1.5 py-px text-xs font-medium ${statusTones[status] ?? ""}`}>{status}</span>;
}

const levelTones = ["text-stone-500", "text-stone-700", "text-sky-800", "text-amber-800", "text-red-800", "text-red-900 font-bold"];

export function LevelName({ level }: { level: number }) {
  return <span className={levelTones[level] ?? ""}>{levelName(level)}</span>;
}

const slaTones: Record<string, string> = {
  ok: "text-stone-700",
  warning: "text-amber-800",
  breaching: "text-red-800 font-medium",
  breached: "text-red-900 font-bold",
};

export function SlaText({ state, children }: { state: string; children: ReactNode }) {
  return <span className={slaTones[state] ?? "text-stone-500"}>{children}</span>;
}

/** `row`: the main link of a list's row, the stop of the `j`/`k` keys (shortcuts.tsx). */
export function IssueLink({ identifier, className = "", row = false }: { identifier: string; className?: string; row?: boolean }) {
  return (
    <Link to={`/dash/issues/${identifier}`} className={`${linkClass} font-mono tabular-nums ${className}`} prefetch="intent" data-row-link={row ? "" : undefined}>
      {identifier}
    </Link>
  );
}

export function LiveIndicator({ state }: { state: "connecting" | "live" | "offline" }) {
  const label = { live: "Live", connecting: "Connecting…", offline: "Offline: reload to reconnect" }[state];
  const dot = { live: "bg-emerald-500", connecting: "bg-amber-400", offline: "bg-red-500" }[state];
  return (
    <span role="status" aria-live="polite" data-live={state} className="inline-flex w-44 items-center justify-end gap-2 text-sm text-stone-700">
      <span aria-hidden className={`inline-block size-2.5 rounded-full ${dot}`} />
      {label}
    </span>
  );
}

export function Stat({ label, value, tone = "text-stone-900", to }: { label: string; value: number; tone?: string; to?: string }) {
  const body = (
    <>
      <span className={`block text-2xl font-semibold tabular-nums ${tone}`}>{value}</span>
      <span className="block text-sm text-stone-600">{label}</span>
    </>
  );
  return to ? (
    <Link to={to} className={`block rounded-lg border border-stone-200 bg-white p-3 shadow-sm hover:border-stone-400 ${focusRing}`}>
      {body}
    </Link>
  ) : (
    <div className="rounded-lg border border-stone-200 bg-white p-3 shadow-sm">{body}</div>
  );
}
