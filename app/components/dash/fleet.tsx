import type { ReactNode } from "react";
import { Link } from "react-router";
import type { FleetClaim, FleetMove, FleetSnapshot } from "../../../server/dash/fleet.ts";
import { IssueLink, Pill, StatusBadge, linkClass } from "./bits.tsx";
import { ago, countdown, duration, renewedByText } from "./format.ts";
import { EmptyState } from "../ui.tsx";
import "./dash.css";

/** The fleet view's live lists: what waits on a person, claims with ticking leases, and recent moves of work. */

const cell = "px-2 py-2 align-top";

function LeaseLeft({ claim, now }: { claim: FleetClaim; now: number }) {
  const expires = Date.parse(claim.expiresAt);
  const left = expires - now;
  const span = Math.max(1, expires - Date.parse(claim.heartbeatAt));
  const fraction = Math.min(1, Math.max(0, left / span));
  if (left <= 0) {
    return (
      <span className="inline-block w-40 text-sm font-medium text-red-800" data-testid="lease-expired">
        expired, reclaim due
      </span>
    );
  }
  return (
    <span className="inline-flex w-40 items-center gap-2">
      <span className="inline-block w-[7ch] text-right font-mono text-sm tabular-nums" data-testid="lease-left" aria-label={`lease ends in ${countdown(left)}`}>
        {countdown(left)}
      </span>
      <span aria-hidden className="inline-block h-1.5 w-16 overflow-hidden rounded bg-stone-200">
        <span className={`block h-full ${fraction < 0.2 ? "bg-red-500" : fraction < 0.5 ? "bg-amber-500" : "bg-emerald-500"}`} style={{ width: `${fraction * 100}%` }} />
      </span>
    </span>
  );
}

export function ClaimsTable({ claims, now }: { claims: FleetClaim[]; now: number }) {
  if (claims.length === 0) {
    return (
      <EmptyState title="No agent holds any issue right now.">
        An agent's claim shows here the moment it calls <code>next_issue</code>, with its lease ticking down.
      </EmptyState>
    );
  }
  return (
    <table className="stack-md w-full border-collapse text-left text-sm">
      <caption className="sr-only">Live claims, with lease time left</caption>
      <thead className="border-b border-stone-300 text-stone-600">
        <tr>
          <th scope="col" className="px-2 py-2 font-medium">Issue</th>
          <th scope="col" className="px-2 py-2 font-medium">Runtime</th>
          <th scope="col" className="px-2 py-2 font-medium">Human · key</th>
          <th scope="col" className="px-2 py-2 font-medium">Lease left</th>
          <th scope="col" className="px-2 py-2 font-medium">Last renewal</th>
          <th scope="col" className="px-2 py-2 font-medium">Latest checkpoint</th>
        </tr>
      </thead>
      <tbody className="max-md:space-y-3">
        {claims.map((c) => (
          <tr
            key={`${c.identifier}#${c.fence}`}
            data-testid={`claim-${c.identifier}`}
            className={`border-b border-stone-200 max-md:rounded-lg max-md:border max-md:bg-white max-md:p-3 ${c.expired ? "bg-red-50/60" : ""}`}
          >
            <td className={cell} data-label="Issue">
              <span className="flex min-w-0 flex-col gap-0.5">
                <span className="flex items-center gap-2">
                  <IssueLink identifier={c.identifier} row />
                  <StatusBadge status={c.status} />
                </span>
                <span className="max-w-[22rem] truncate text-stone-700 max-md:max-w-full" title={c.title}>
                  {c.title}
                </span>
              </span>
            </td>
            <td className={cell} data-label="Runtime">
              <span className="flex flex-col gap-0.5">
                <span className="font-mono" data-testid="claim-runtime">{c.runtime}</span>
                {c.handedOffFrom ? <Pill tone="resumed" title="Took over from another runtime">from {c.handedOffFrom}</Pill> : null}
              </span>
            </td>
            <td className={cell} data-label="Human · key">
              <span className="flex flex-col gap-0.5">
                <span>{c.human}</span>
                <span className="font-mono text-xs text-stone-500">{c.keyPrefix ? `${c.keyPrefix}…` : "no key"}</span>
                <span className="font-mono text-xs text-stone-500" data-testid="claim-session" title="The MCP session holding the lease: agents sharing a key each have their own">
                  {c.session ? `session ${c.session}` : "no session"}
                </span>
              </span>
            </td>
            <td className={cell} data-label="Lease left">
              <LeaseLeft claim={c} now={now} />
            </td>
            <td className={cell} data-label="Last renewal">
              <span className="flex flex-col gap-0.5">
                <span className="inline-block w-[9ch] tabular-nums text-stone-700">{ago(now - Date.parse(c.heartbeatAt))}</span>
                <span className="text-xs text-stone-500" data-testid="claim-renewed-by">{renewedByText(c.renewedBy)}</span>
                {c.stalled && c.lastProgressAt ? (
                  <span data-testid="claim-stalled">
                    <Pill tone="doing" title="Kept alive, but no checkpoint, comment or write for the project's stall window">
                      stalled: no progress for {duration(now - Date.parse(c.lastProgressAt))}
                    </Pill>
                  </span>
                ) : null}
              </span>
            </td>
            <td className={cell} data-label="Checkpoint">
              {c.checkpoint ? (
                <span className="flex min-w-0 max-w-[20rem] flex-col gap-0.5 max-md:max-w-full">
                  <span className="truncate" title={c.checkpoint.next ?? c.checkpoint.done ?? c.checkpoint.note ?? ""}>
                    {c.checkpoint.next ? `next: ${c.checkpoint.next}` : c.checkpoint.done ? `done: ${c.checkpoint.done}` : (c.checkpoint.note ?? "")}
                  </span>
                  <span className="text-xs text-stone-500 tabular-nums">
                    {c.checkpoint.runtime} · {ago(now - Date.parse(c.checkpoint.at))}
                  </span>
                </span>
              ) : (
                <span className="text-stone-500">none yet</span>
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

const moveWords: Record<FleetMove["kind"], { label: string; tone: "claimed" | "doing" | "resumed" | "neutral" | "danger" }> = {
  claimed: { label: "claimed", tone: "claimed" },
  handoff: { label: "handoff", tone: "resumed" },
  reclaimed: { label: "reclaimed", tone: "danger" },
  force_released: { label: "taken back", tone: "danger" },
  released: { label: "released", tone: "neutral" },
  stall_released: { label: "released, stalled", tone: "danger" },
  finished: { label: "finished", tone: "neutral" },
  review: { label: "to review", tone: "resumed" },
};

export function MovesList({ moves, now }: { moves: FleetMove[]; now: number }) {
  if (moves.length === 0) return <EmptyState title="Nothing has been claimed yet.">Claims, handoffs between runtimes and reclaims of lapsed leases are listed here.</EmptyState>;
  return (
    <ol className="divide-y divide-stone-200 rounded-lg border border-stone-200 bg-white" aria-label="Recent claims, handoffs and reclaims">
      {moves.map((m) => {
        const words = moveWords[m.kind];
        return (
          <li key={m.id} className="flex flex-wrap items-center gap-x-3 gap-y-1 px-3 py-2 text-sm" data-testid="move" data-kind={m.kind} data-identifier={m.identifier}>
            <span className="inline-block w-[8ch] text-stone-500 tabular-nums">{ago(now - Date.parse(m.at))}</span>
            <span className="inline-block w-24">
              <Pill tone={words.tone}>{words.label}</Pill>
            </span>
            <IssueLink identifier={m.identifier} row />
            <span className="text-stone-700">
              {m.kind === "handoff" ? (
                <>
                  <span className="font-mono">{m.fromRuntime}</span> → <span className="font-mono">{m.runtime}</span>
                </>
              ) : m.kind === "reclaimed" ? (
                <>
                  lease of <span className="font-mono">{m.fromRuntime}</span> expired
                </>
              ) : m.kind === "stall_released" ? (
                <>
                  from <span className="font-mono">{m.fromRuntime ?? "the holder"}</span>: no progress for the project's stall window
                </>
              ) : m.kind === "force_released" ? (
                <>
                  from <span className="font-mono">{m.fromRuntime}</span> by {m.who ?? "an admin"}
                </>
              ) : (
                <>
                  by <span className="font-mono">{m.runtime}</span>
                  {m.who ? <span className="text-stone-500"> ({m.who})</span> : null}
                </>
              )}
            </span>
          </li>
        );
      })}
    </ol>
  );
}

/**
 * What waits on a person (decision 062): finishes CI left pending past their project's window
 * (stale), quarantined issues with their reason and the way to release them, and stalled claims.
 * Each mark is a word, never a colour alone.
 */
export function AttentionList({ attention, claims, now }: { attention: FleetSnapshot["attention"]; claims: FleetClaim[]; now: number }) {
  const stalled = claims.filter((c) => c.stalled && c.lastProgressAt);
  if (attention.stale.length + attention.quarantined.length + stalled.length === 0) {
    return <EmptyState title="Nothing waits on a person.">Finishes CI has left pending too long, quarantined issues and stalled claims are listed here.</EmptyState>;
  }
  return (
    <ul className="divide-y divide-stone-200 rounded-lg border border-stone-200 bg-white" aria-label="Issues that wait on a person">
      {attention.stale.map((s) => (
        <AttentionRow key={`stale-${s.identifier}`} kind="stale" tone="danger" why="Finished, but CI has not passed or failed it within the project's window" identifier={s.identifier} title={s.title}>
          CI verification pending for {duration(now - Date.parse(s.finishedAt))}, past the {s.windowMinutes}-minute window
          {s.evidence.commit ? <> (commit <span className="font-mono">{s.evidence.commit.slice(0, 12)}</span>)</> : null}: what waits on it stays blocked.{" "}
          <Link className={linkClass} to={`/dash/issues/${encodeURIComponent(s.identifier)}`}>Pass or fail it by hand</Link>
        </AttentionRow>
      ))}
      {attention.quarantined.map((q) => (
        <AttentionRow key={`quarantined-${q.identifier}`} kind="quarantined" tone="doing" why="Agents kept abandoning it: never dispatched until a person releases it" identifier={q.identifier} title={q.title}>
          {q.reason}, {ago(now - Date.parse(q.since))}.{" "}
          <Link className={linkClass} to={q.release.page}>Read the agents' notes and release it</Link>, or run <code className="break-all">{q.release.command}</code>
        </AttentionRow>
      ))}
      {stalled.map((c) => (
        <AttentionRow key={`stalled-${c.identifier}`} kind="stalled" tone="doing" why="Kept alive, but no checkpoint, comment or write for the project's stall window" identifier={c.identifier} title={c.title}>
          held by <span className="font-mono">{c.runtime}</span>, no progress for {duration(now - Date.parse(c.lastProgressAt!))}: ask its human, or take it back on its page
        </AttentionRow>
      ))}
    </ul>
  );
}

/** One row of what waits on a person: the mark as a word (with why on hover), the issue, its title, and what to do. */
function AttentionRow({ kind, tone, why, identifier, title, children }: { kind: "stale" | "quarantined" | "stalled"; tone: "danger" | "doing"; why: string; identifier: string; title: string; children: ReactNode }) {
  return (
    <li className="flex flex-wrap items-center gap-x-3 gap-y-1 px-3 py-2 text-sm" data-testid="attention" data-kind={kind} data-identifier={identifier}>
      <span className="inline-block w-28">
        <Pill tone={tone} title={why}>{kind}</Pill>
      </span>
      <IssueLink identifier={identifier} row />
      <span className="max-w-[22rem] truncate text-stone-700" title={title}>{title}</span>
      <span className="text-stone-700">{children}</span>
    </li>
  );
}
