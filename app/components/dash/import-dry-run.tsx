import { Card } from "../ui.tsx";
import { ImportMapping } from "./import-mapping.tsx";

export interface DryRunReport {
  source: string;
  counts: Record<string, number>;
  known: Record<string, number>;
  statuses: { from: string; to: string; issues: number }[];
  priorities: { from: string; to: number; issues: number }[];
  linkReasons: Record<string, number>;
  ghosts: { name: string; email: string | null }[];
  leftBehind: string[];
}

const reasonWords: Record<string, string> = { link: "links at the source", tooLarge: "over the 10 MiB attachment limit", failed: "could not be downloaded" };

/** Attachments as files or links, and why the links stay links: the run's report and the dry run say it alike. */
export function attachmentsLine(counts: Record<string, number>, linkReasons: Record<string, number> = {}): string {
  const why = Object.entries(linkReasons).filter(([, n]) => n > 0).map(([reason, n]) => `${n} ${reasonWords[reason] ?? reason}`);
  return `${counts.filesCopied ?? 0} attachment files copied, ${counts.linksKept ?? 0} kept as links${why.length > 0 ? ` (${why.join(", ")})` : ""}`;
}

/** What a run would do, read from the source but not written: counts, the mapping (the owner changes it here), placeholders, what stays behind. */
export function ImportDryRun({ report }: { report: DryRunReport }) {
  const c = report.counts;
  return (
    <Card title="Dry run: nothing was written">
      <div className="flex flex-col gap-3 text-sm" data-testid="import-dry-run">
        <p>
          {c.issues} issues ({c.containers} with children), {c.comments} comments, {c.attachments} attachments, {c.relations} relations, {c.labels} labels.
          {c.attachments > 0 ? ` ${attachmentsLine(c, report.linkReasons)}.` : ""}
          {report.known.issues > 0 ? ` ${report.known.issues} of the issues are here from an earlier import: they are updated in place.` : ""}
        </p>
        <ImportMapping statuses={report.statuses} priorities={report.priorities} />
        {report.ghosts.length > 0 ? (
          <p>
            Placeholders for {report.ghosts.length} {report.ghosts.length === 1 ? "person" : "people"}, each claimable by whoever has the email the source gave:{" "}
            {report.ghosts.map((g) => g.name).join(", ")}.
          </p>
        ) : null}
        {report.leftBehind.length > 0 ? (
          <ul className="list-disc pl-5">
            {report.leftBehind.map((line) => (
              <li key={line}>Left behind: {line}</li>
            ))}
          </ul>
        ) : null}
      </div>
    </Card>
  );
}
