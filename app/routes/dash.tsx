import { Form, Link, NavLink, Outlet } from "react-router";
import type { Route } from "./+types/dash";
import { requireUser } from "../auth.server.ts";
import { listOrgsOf } from "../../server/orgs/account.ts";
import { currentOrgCookie } from "../auth.server.ts";
import { Shortcuts } from "../components/dash/shortcuts.tsx";

export function meta() {
  return [{ title: "Dash · Retasc" }];
}

/**
 * The signed-in shell of the Dash: header, org switcher, navigation, and an Outlet for
 * every page under /dash. Pages resolve their own org with requireMember().
 */
export async function loader({ request, context }: Route.LoaderArgs) {
  const user = await requireUser(request, context);
  const { orgs } = await listOrgsOf(context.services, user.id);
  const active = orgs.filter((o) => o.status === "active");
  const wanted = (await currentOrgCookie.parse(request.headers.get("cookie"))) as string | null;
  const current = active.find((o) => o.orgId === wanted) ?? active[0] ?? null;
  return { user, orgs: active, currentOrgId: current?.orgId ?? null };
}

const links = [
  { to: "/dash", label: "Fleet", end: true },
  { to: "/dash/queue", label: "Queue" },
  { to: "/dash/analytics", label: "Analytics" },
  { to: "/dash/issues/new", label: "New issue" },
  { to: "/dash/settings/projects", label: "Projects" },
  { to: "/dash/settings/members", label: "Members" },
  { to: "/dash/settings/keys", label: "Keys" },
  { to: "/dash/settings/billing", label: "Billing" },
  { to: "/dash/settings/connectors", label: "Connectors" },
  { to: "/dash/settings/notifications", label: "Notifications" },
  { to: "/dash/settings/transfer", label: "Import & export" },
  { to: "/dash/settings/delete-org", label: "Delete org" },
];

export default function DashLayout({ loaderData }: Route.ComponentProps) {
  const { user, orgs, currentOrgId } = loaderData;
  return (
    <div className="min-h-screen">
      <a href="#main" className="sr-only focus:not-sr-only focus:absolute focus:left-2 focus:top-2 focus:bg-white focus:p-2">
        Skip to content
      </a>
      <header className="border-b border-line bg-surface">
        <div className="mx-auto flex max-w-5xl flex-wrap items-center gap-x-4 gap-y-2 px-4 py-3 sm:px-6">
          <Link to="/dash" className="text-lg font-bold tracking-tight">
            Retasc
          </Link>
          {orgs.length > 0 ? (
            <Form method="post" action="/dash/switch-org" className="flex items-center gap-2" aria-label="Switch org">
              <label htmlFor="org-switcher" className="text-sm text-stone-600">
                Org
              </label>
              <select
                id="org-switcher"
                name="orgId"
                defaultValue={currentOrgId ?? undefined}
                className="rounded border border-stone-300 bg-white px-2 py-1 text-sm"
                onChange={(e) => e.currentTarget.form?.requestSubmit()}
              >
                {orgs.map((o) => (
                  <option key={o.orgId} value={o.orgId}>
                    {o.name} ({o.role})
                  </option>
                ))}
              </select>
              <noscript>
                <button type="submit" className="rounded border px-2 py-1 text-sm">
                  Switch
                </button>
              </noscript>
            </Form>
          ) : null}
          <Link to="/dash/orgs/new" className="text-sm underline">
            New org
          </Link>
          <div className="ml-auto flex min-w-0 items-center gap-3 text-sm">
            <Shortcuts />
            <span className="min-w-0 truncate text-muted" title={user.email}>
              {user.email}
            </span>
            <Form method="post" action="/auth/sign-out">
              <button type="submit" className="underline">
                Sign out
              </button>
            </Form>
          </div>
        </div>
        {orgs.length > 0 ? (
          // Wraps instead of scrolling, so every page stays in sight on a phone.
          <nav aria-label="Dash" className="mx-auto flex max-w-5xl flex-wrap gap-x-1 px-4 sm:px-6">
            {links.map((l) => (
              <NavLink
                key={l.to}
                to={l.to}
                end={l.end}
                className={({ isActive }) =>
                  `border-b-2 px-2.5 py-2 text-sm whitespace-nowrap focus-visible:outline-2 focus-visible:outline-offset-[-2px] focus-visible:outline-focus ${isActive ? "border-stone-900 font-medium text-ink" : "border-transparent text-muted hover:text-ink"}`
                }
              >
                {l.label}
              </NavLink>
            ))}
          </nav>
        ) : null}
      </header>
      <main id="main" className="mx-auto max-w-5xl px-4 py-6 sm:px-6 sm:py-8">
        <Outlet />
      </main>
    </div>
  );
}
