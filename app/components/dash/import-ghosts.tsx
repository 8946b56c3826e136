import { Form } from "react-router";
import { stamp } from "./format.ts";
import { Button, Card } from "../ui.tsx";

interface Ghost {
  ghostId: string;
  name: string;
  email: string | null;
  claimedBy: string | null;
  claimedAt: string | null;
  claimable: boolean;
}

/** Placeholders for the people an import named; "That's me" where the source's email is the viewer's verified one. */
export function ImportGhosts({ ghosts }: { ghosts: Ghost[] }) {
  if (ghosts.length === 0) return null;
  return (
    <Card title="Imported people">
      <p className="mb-3 text-sm text-muted">
        Authors and assignees from Linear, held by placeholders. Claim yours once, and its history becomes yours; a claim is checked against the email Linear gave.
      </p>
      <ul className="flex flex-col gap-2 text-sm">
        {ghosts.map((g) => (
          <li key={g.ghostId} className="flex flex-wrap items-center gap-x-3 gap-y-1" data-ghost={g.ghostId}>
            <span className="font-medium">{g.name}</span>
            {g.email ? <span className="break-all text-muted">{g.email}</span> : null}
            {g.claimedBy ? (
              <span className="text-muted">claimed {stamp(g.claimedAt)}</span>
            ) : g.claimable ? (
              <Form method="post">
                <input type="hidden" name="ghostId" value={g.ghostId} />
                <Button name="intent" value="claim" tone="secondary" aria-label={`That's me: ${g.name}`}>
                  That's me
                </Button>
              </Form>
            ) : null}
          </li>
        ))}
      </ul>
    </Card>
  );
}
