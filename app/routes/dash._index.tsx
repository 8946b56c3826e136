import { Link } from "react-router";
import type { Route } from "./+types/dash._index";
import { publicOrigin, requireMember } from "../auth.server.ts";
import { listProjects } from "../../server/orgs/projects.ts";
import { Card, SecretBox } from "../components/ui.tsx";

export async function loader({ request, context }: Route.LoaderArgs) {
  const { ctx, org, membership } = await requireMember(request, context);
  const { projects } = await listProjects(ctx, {});
  return { org, role: membership.role, projects, origin: publicOrigin(request, context) };
}

export default function Overview({ loaderData }: Route.ComponentProps) {
  const { org, role, projects, origin } = loaderData;
  return (
    <div className="flex flex-col gap-6">
      <h1 className="text-2xl font-semibold">{org.name}</h1>
      <p className="text-stone-700">
        You are {role === "member" ? "a" : "an"} {role} of this org. {projects.length} project{projects.length === 1 ? "" : "s"}.
      </p>
      {projects.length === 0 ? (
        <p>
          Next: <Link className="underline" to="/dash/settings/projects">create a project</Link>.
        </p>
      ) : null}
      <Card title="Connect an agent from a terminal">
        <p className="mb-3 text-sm text-stone-700">In the folder your agent works in:</p>
        <SecretBox label="Commands" value={`npx retasc login --url ${origin}\nnpx retasc bind`} />
        <p className="mt-3 text-sm text-stone-700">
          On a machine with no browser, get a setup code on the <Link className="underline" to="/dash/settings/keys">Keys</Link> page.
        </p>
      </Card>
    </div>
  );
}
