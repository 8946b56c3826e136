import { Link } from "react-router";
import type { Route } from "./+types/home";
import { optionalUser } from "../auth.server.ts";
import { publicBaseUrl } from "../../server/http/origin.ts";
import { signInMethods } from "../../server/auth/index.ts";
import { SecretBox } from "../components/ui.tsx";
import { cliInstallCommand } from "../../constants/cli-install.ts";

export function meta() {
  return [
    { title: "Retasc — the work queue for AI coding agents" },
    { name: "description", content: "Agents pull the most urgent unblocked issue over MCP, under a fenced lease." },
  ];
}

export async function loader({ request, context }: Route.LoaderArgs) {
  const { config } = context.services;
  const methods = signInMethods(config);
  return {
    origin: publicBaseUrl(request, config),
    mode: config.mode,
    signedIn: (await optionalUser(request, context)) !== null,
    canSignUp: methods.emailPassword || methods.social.length > 0,
  };
}

const primary =
  "inline-flex items-center rounded bg-stone-900 px-4 py-2 text-sm font-medium text-white hover:bg-stone-700 focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-focus";
const secondary =
  "inline-flex items-center rounded border border-line-strong bg-surface px-4 py-2 text-sm font-medium text-ink hover:bg-stone-100 focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-focus";
const link = "font-medium text-accent underline underline-offset-2";

/**
 * The front door. A newcomer's path, in the order the start banner (main.ts) gives it: an
 * account, then an org and a project (the Dash asks for them), then an agent wired with the
 * CLI or a key from the Keys page.
 */
export default function Home({ loaderData }: Route.ComponentProps) {
  const { origin, mode, signedIn, canSignUp } = loaderData;
  return (
    <main className="mx-auto flex max-w-3xl flex-col gap-10 px-6 py-12">
      <header className="flex flex-col gap-4">
        <h1 className="text-4xl font-bold tracking-tight">Retasc</h1>
        <p className="text-lg text-stone-700">
          An issue tracker and work queue for fleets of AI coding agents. Agents connect over MCP and call{" "}
          <code>next_issue</code>: the server hands each one the most urgent unblocked issue under a fenced, heartbeated lease,
          takes it back when an agent goes silent, and hands the next agent the last checkpoint.
        </p>
        <nav aria-label="Account" className="flex flex-wrap gap-3">
          {signedIn ? (
            <Link to="/dash" className={primary}>
              Open the Dash
            </Link>
          ) : (
            <>
              {canSignUp ? (
                <Link to="/auth/sign-up" className={primary}>
                  Create your account
                </Link>
              ) : null}
              <Link to="/auth/sign-in" className={canSignUp ? secondary : primary}>
                Sign in
              </Link>
            </>
          )}
        </nav>
      </header>

      <section aria-labelledby="start-heading" className="flex flex-col gap-4">
        <h2 id="start-heading" className="text-2xl font-semibold">
          Get an agent pulling work
        </h2>
        <ol className="flex list-decimal flex-col gap-5 pl-6">
          <li>
            {signedIn ? (
              <>You are signed in.</>
            ) : (
              <>
                <Link to="/auth/sign-up" className={link}>
                  Create your account
                </Link>{" "}
                (or <Link to="/auth/sign-in" className={link}>sign in</Link>).
              </>
            )}{" "}
            The Dash then asks for an org and a first project, and shows your empty fleet with the next step.
          </li>
          <li>
            <p className="mb-2">Install the CLI once, from this server (Node.js 20 or later):</p>
            <SecretBox label="Install the CLI" hideLabel value={cliInstallCommand(origin)} />
          </li>
          <li>
            <div className="flex flex-col gap-2">
            <span>In the folder your agent works in, sign in (approve the code in your browser) and bind it to your project:</span>
            <SecretBox label="Sign in and bind" hideLabel value={`retasc login --url ${origin}\nretasc bind`} />
            <span className="text-sm text-muted">
              <code>bind</code> writes the folder's <code>.mcp.json</code>; start your agent there and ask it to call{" "}
              <code>next_issue</code>.
            </span>
            </div>
          </li>
        </ol>
        <p className="text-sm text-muted">
          No CLI? Mint a key on the Dash's Keys page and point any MCP client at <code className="break-all">{origin}/mcp</code>{" "}
          with the header <code>Authorization: Bearer rtsc_…</code>. For Claude Code:
        </p>
        <SecretBox
          label="Claude Code"
          hideLabel
          value={`claude mcp add --transport http retasc ${origin}/mcp --header "Authorization: Bearer $RETASC_KEY"`}
        />
      </section>

      <footer className="text-sm text-muted">
        <nav aria-label="About Retasc" className="mb-2">
          <a className="underline" href="/product">How it works</a> · <a className="underline" href="/guides">Guides</a> ·{" "}
          <a className="underline" href="/wire">Wire an agent</a> · <a className="underline" href="/pricing">Pricing</a> ·{" "}
          <a className="underline" href="/docs">Docs</a>
        </nav>
        Running in {mode} mode · <a className="underline" href="/healthz">health</a> ·{" "}
        <a className="underline" href="/index.md">this page as Markdown</a>
      </footer>
    </main>
  );
}
