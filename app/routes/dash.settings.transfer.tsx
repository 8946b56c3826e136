import type { Route } from "./+types/dash.settings.transfer";
import { requireMember } from "../auth.server.ts";
import { Card, Notice } from "../components/ui.tsx";
import "../components/dash/dash.css";

export function meta() {
  return [{ title: "Import & export · Retasc" }];
}

export async function loader({ request, context }: Route.LoaderArgs) {
  const { membership, org } = await requireMember(request, context);
  return { canExport: membership.role !== "member", orgName: org.name };
}

const downloads = [
  { href: "/dash/settings/transfer/export?format=json", label: "Everything (JSON)", note: "the whole org; imports back with npm run admin -- import" },
  { href: "/dash/settings/transfer/export?format=csv&table=issues", label: "Issues (CSV)", note: "one row per issue, for a spreadsheet" },
  { href: "/dash/settings/transfer/export?format=csv&table=comments", label: "Comments (CSV)", note: "one row per comment" },
];

export default function Transfer({ loaderData }: Route.ComponentProps) {
  const { canExport, orgName } = loaderData;
  return (
    <div className="flex flex-col gap-6">
      <h1 className="text-2xl font-semibold">Import &amp; export</h1>
      <Card title="Export">
        {canExport ? (
          <div className="flex flex-col gap-3">
            <p className="text-sm text-muted">
              All of {orgName}, decrypted: projects, issues with every field, relations, comments, labels, attachments, checkpoints,
              the activity log, members and agents. Never a key or a secret.
            </p>
            <ul className="flex flex-col gap-2">
              {downloads.map((d) => (
                <li key={d.href}>
                  <a className="font-medium underline" href={d.href} download>
                    {d.label}
                  </a>{" "}
                  <span className="text-sm text-muted">{d.note}</span>
                </li>
              ))}
            </ul>
          </div>
        ) : (
          <Notice>Owners and admins export the org.</Notice>
        )}
      </Card>
      <Card title="Import">
        <p className="text-sm">
          <a className="font-medium underline" href="/dash/settings/import">
            Import from Linear
          </a>{" "}
          <span className="text-muted">a team's issues with their history, identifiers and people; a re-import updates in place</span>
        </p>
      </Card>
    </div>
  );
}
