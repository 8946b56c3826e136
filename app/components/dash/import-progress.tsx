import { useLiveRevalidation } from "./live.ts";
import { stamp } from "./format.ts";
import { Card, ErrorNote } from "../ui.tsx";
import { attachmentsLine } from "./import-dry-run.tsx";

interface ImportStatus {
  runId: string;
  teamKey: string;
  phase: "fetching" | "applying" | "linking" | "done" | "failed";
  done: number;
  total: number;
  counts: Record<string, number> | null;
  linkReasons?: Record<string, number>;
  error: string | null;
  finishedAt: string | null;
  /** About how long this step has left (server/transfer/pipeline/status.ts). */
  etaSeconds?: number | null;
}

/** "about 40 s" / "about 3 min": an estimate says no more than it knows. */
export const roughly = (seconds: number) => (seconds < 90 ? `about ${seconds} s` : `about ${Math.round(seconds / 60)} min`);

const phaseLabel = (from: string) => ({ fetching: `Fetching from ${from}`, applying: "Applying to Retasc", linking: "Linking relations", done: "Done", failed: "Failed" }) as const;

/** Why a run failed, in words: the run keeps only a code. */
const failure = (from: string): Record<string, { message: string; hint: string }> => ({
  UNAUTHORIZED: { message: `${from} refused the credential.`, hint: "Paste a valid key or token (the form says where to make one), and start again." },
  RATE_LIMITED: { message: `${from}'s rate limit held through every retry.`, hint: "Start the import again later; it reconciles in place." },
  APPLY_FAILED: { message: "Applying the fetched issues failed, and retrying did not help.", hint: "Start the import again; it reconciles in place. If it fails again, the server log says why." },
  FETCH_INTERRUPTED: { message: "The import stopped when the server restarted, and the credential went with it.", hint: "Paste it again and start again; it reconciles in place." },
});

/**
 * A run's progress: a real <progress> with "N of M", live over the event stream while it runs,
 * and current on every reload without JS. `from` names the run's source (Linear, Jira, a CSV file).
 */
export function ImportProgress({ status, from }: { status: ImportStatus; from: string }) {
  const running = status.phase !== "done" && status.phase !== "failed";
  const phase = phaseLabel(from);
  return (
    <Card title={`Importing ${status.teamKey}`}>
      {running ? <Live /> : null}
      <div className="flex flex-col gap-2" data-testid="import-progress">
        <p className="text-sm font-medium">{phase[status.phase]}</p>
        <progress className="w-full" max={Math.max(status.total, 1)} value={status.phase === "done" ? Math.max(status.total, 1) : status.done} aria-label={`${phase[status.phase]}: ${status.done} of ${status.total}`} />
        <p className="text-sm" data-testid="import-count">
          {status.done} of {status.total}
        </p>
        {running && status.etaSeconds ? (
          <p className="text-sm text-muted" data-testid="import-eta">
            {`${roughly(status.etaSeconds)} left in this step`}
          </p>
        ) : null}
        {running ? (
          <p className="text-sm text-muted">
            This page follows along; without JavaScript,{" "}
            <a className="underline" href={`?run=${encodeURIComponent(status.runId)}`}>
              reload it
            </a>
            .
          </p>
        ) : null}
        {status.phase === "done" ? (
          <p className="text-sm">
            Finished {stamp(status.finishedAt)}
            {status.counts ? `: ${status.counts.created ?? 0} created, ${status.counts.updated ?? 0} updated, ${status.counts.unchanged ?? 0} unchanged; ${attachmentsLine(status.counts, status.linkReasons)}` : ""}.{" "}
            <a className="font-medium underline" href="/dash/queue">
              See the {status.teamKey} issues
            </a>
          </p>
        ) : null}
        {status.phase === "failed" ? <ErrorNote error={failure(from)[status.error ?? ""] ?? { message: `The import failed (${status.error ?? "unknown"}).`, hint: "Start it again; it reconciles in place." }} /> : null}
      </div>
    </Card>
  );
}

/** Mounted only while the run goes on, so a finished page holds no stream open. */
function Live() {
  useLiveRevalidation({ minIntervalMs: 500 });
  return null;
}
