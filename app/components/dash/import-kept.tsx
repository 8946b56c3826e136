import { Form } from "react-router";
import { stamp } from "./format.ts";
import { Button, Card } from "../ui.tsx";

export interface KeptCredentialRow {
  source: string;
  sourceId: string;
  keptBy: string | null;
  keptAt: string;
  usedAt: string | null;
}

/** The credentials kept to import again (decision 094): each imports its team or project again into the same project, or is forgotten. */
export function ImportKept({ kept, from }: { kept: KeptCredentialRow[]; from: Record<string, string> }) {
  if (kept.length === 0) return null;
  return (
    <Card title="Kept credentials">
      <p className="mb-3 text-sm text-muted">Import again into the same project with the kept credential and mapping; it reconciles, as any re-import does.</p>
      <ul className="flex flex-col gap-2 text-sm">
        {kept.map((k) => (
          <li key={`${k.source}:${k.sourceId}`} className="flex flex-wrap items-center gap-x-3 gap-y-1" data-kept={`${k.source}:${k.sourceId}`}>
            <span className="font-medium">{`${from[k.source] ?? k.source} · ${k.sourceId}`}</span>
            <span className="text-muted">{`kept ${stamp(k.keptAt)}${k.keptBy ? ` by ${k.keptBy}` : ""}${k.usedAt ? `, last used ${stamp(k.usedAt)}` : ""}`}</span>
            <Form method="post" className="flex gap-2">
              <input type="hidden" name="source" value={k.source} />
              <input type="hidden" name="sourceId" value={k.sourceId} />
              <Button name="intent" value="again" tone="secondary" aria-label={`Import again: ${k.sourceId}`}>
                Import again
              </Button>
              <Button name="intent" value="forget" tone="secondary" aria-label={`Forget: ${k.sourceId}`}>
                Forget
              </Button>
            </Form>
          </li>
        ))}
      </ul>
    </Card>
  );
}
