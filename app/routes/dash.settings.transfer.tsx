import { Form, redirect } from "react-router";
import type { Route } from "./+types/dash.settings.transfer";
import { currentOrgCookie, requireMember } from "../auth.server.ts";
import { Button, Card, ErrorNote, Field, Notice } from "../components/ui.tsx";
import { attempt, toErrorBody } from "../errors.server.ts";
import { readForm } from "../forms.server.ts";
import { saveUploadForm } from "../upload.server.ts";
import { importUpload, UPLOAD_MAX_BYTES } from "../../server/transfer/import.ts";
import { mayExport, orgSettings, setAdminsMayExport } from "../../server/orgs/settings.ts";
import "../components/dash/dash.css";

export function meta() {
  return [{ title: "Import & export · Retasc" }];
}

export async function loader({ request, context }: Route.LoaderArgs) {
  const { ctx, membership, org } = await requireMember(request, context);
  // Owners export the org, admins where an owner lets them (decision 043); both import an export (decision 037).
  const settings = await orgSettings(ctx);
  const { adminsMayExport } = settings;
  const manages = membership.role !== "member";
  return {
    canExport: mayExport(membership.role, settings),
    isOwner: membership.role === "owner",
    adminsMayExport,
    canImport: manages,
    orgName: org.name,
    uploadMaxMiB: UPLOAD_MAX_BYTES / (1024 * 1024),
  };
}

/**
 * Brings an uploaded JSON export back as a new org the person owns (the admin import's core),
 * then lands them in it. importUpload checks the role and the import caps before the body is
 * read; the form is streamed to a private file (upload.server.ts). A refusal or a bad file is
 * said on the page, never a 500.
 */
export async function action({ request, context }: Route.ActionArgs) {
  const { ctx } = await requireMember(request, context);
  // The owner's switch is a plain form; the import is the only multipart one.
  if (!(request.headers.get("content-type") ?? "").startsWith("multipart/form-data")) {
    const form = await readForm(request);
    const result = await attempt(context.log, () => setAdminsMayExport(ctx, { allowed: form.get("adminsMayExport") === "on" }));
    return result.ok ? { done: result.value.adminsMayExport ? "Admins may export the org." : "Only owners export the org.", error: null, orgName: "" } : { error: result.error, orgName: "" };
  }
  let orgName = "";
  try {
    const { orgId } = await importUpload(ctx, async (dir) => {
      const saved = await saveUploadForm(request, dir, { fileField: "file", maxBytes: UPLOAD_MAX_BYTES });
      orgName = saved.orgName;
      return saved;
    });
    return redirect("/dash", { headers: { "set-cookie": await currentOrgCookie.serialize(orgId) } });
  } catch (error) {
    return { error: toErrorBody(error, context.log).body, orgName };
  }
}

const downloads = [
  { href: "/dash/settings/transfer/export?format=json", label: "Everything (JSON)", note: "the whole org; imports back with npm run admin -- import" },
  { href: "/dash/settings/transfer/export?format=csv&table=issues", label: "Issues (CSV)", note: "one row per issue, for a spreadsheet" },
  { href: "/dash/settings/transfer/export?format=csv&table=comments", label: "Comments (CSV)", note: "one row per comment" },
];

export default function Transfer({ loaderData, actionData }: Route.ComponentProps) {
  const { canExport, isOwner, adminsMayExport, canImport, orgName, uploadMaxMiB } = loaderData;
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
          <Notice>{adminsMayExport ? "Owners and admins export the org." : "Owners export the org."}</Notice>
        )}
        {isOwner ? (
          <Form method="post" className="mt-4 flex flex-wrap items-center gap-3" aria-label="Who exports">
            <label className="flex items-center gap-2 text-sm">
              <input type="checkbox" name="adminsMayExport" defaultChecked={adminsMayExport} />
              Admins may export the org too
            </label>
            <Button tone="secondary">Save</Button>
          </Form>
        ) : null}
        {actionData && "done" in actionData && actionData.done ? <Notice>{actionData.done}</Notice> : null}
      </Card>
      <Card title="Import">
        <p className="text-sm">
          <a className="font-medium underline" href="/dash/settings/import">
            Import from Linear
          </a>{" "}
          <span className="text-muted">a team's issues with their history, identifiers and people; a re-import updates in place</span>
        </p>
      </Card>
      <Card title="Import a Retasc export into a new org">
        <div className="flex flex-col gap-3">
          <p className="text-sm text-muted">
            A JSON export (Everything, above) comes back whole as a new org you own, beside this one: its projects, issues,
            history and members as exported. Files up to {uploadMaxMiB} MiB; a larger export is imported on
            the server with <code>npm run admin -- import</code>.
          </p>
          <ErrorNote error={actionData?.error} />
          {canImport ? (
            <Form method="post" encType="multipart/form-data" className="flex flex-col gap-4">
              <Field label="New org name" name="orgName" required placeholder="Acme (restored)" defaultValue={actionData?.orgName} />
              <Field label="Export file" name="file" type="file" required />
              <Button>Import into a new org</Button>
            </Form>
          ) : (
            <Notice>Owners and admins import exports.</Notice>
          )}
        </div>
      </Card>
    </div>
  );
}
