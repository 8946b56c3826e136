import { Form, Link, redirect, useNavigation } from "react-router";
import type { Route } from "./+types/auth.sign-in";
import { authOf, optionalUser, redirectWithCookies, safeNext } from "../auth.server.ts";
import { signedInRecently, signInMethods, type SocialProvider } from "../../server/auth/index.ts";
import { Button, ErrorNote, Field } from "../components/ui.tsx";
import { readForm } from "../forms.server.ts";

export function meta() {
  return [{ title: "Sign in · Retasc" }];
}

/** better-auth's OAuth error codes, in words a person can act on. */
const oauthErrors: Record<string, string> = {
  account_not_linked:
    "That account is not linked to a Retasc sign-in, and Retasc never links accounts on a matching email. Sign in the way you signed up.",
  access_denied: "The sign-in was cancelled at the provider.",
};

export async function loader({ request, context }: Route.LoaderArgs) {
  const url = new URL(request.url);
  const next = safeNext(url.searchParams.get("next"));
  const user = await optionalUser(request, context);
  // `again`: a page that approves a sign-in (/device, /oauth/consent) asks for a recent one (decision 037).
  const again = url.searchParams.get("again") === "1";
  if (user && !(again && !signedInRecently(user, context.services.config, context.services.clock.now()))) throw redirect(next);
  const error = url.searchParams.get("error");
  return {
    next,
    again: user ? { email: user.email, window: windowOf(context.services.config.SIGN_IN_RECENT_SECONDS) } : null,
    methods: signInMethods(context.services.config),
    provider: url.searchParams.get("provider"),
    error: error ? { message: oauthErrors[error] ?? `Sign-in failed (${error}).` } : null,
  };
}

/** "15 minutes", or "30 seconds" for a window under a minute. */
const windowOf = (seconds: number) => (seconds >= 60 ? `${Math.round(seconds / 60)} minutes` : `${seconds} seconds`);

export async function action({ request, context }: Route.ActionArgs) {
  const form = await readForm(request);
  const next = safeNext(String(form.get("next") ?? ""));
  const intent = String(form.get("intent") ?? "email");
  const auth = authOf(context);
  const methods = signInMethods(context.services.config);
  if (intent === "github" || intent === "google") {
    if (!methods.social.includes(intent)) return { error: { message: `${intent} sign-in is not configured here.` } };
    const response = await auth.api.signInSocial({
      body: { provider: intent as SocialProvider, callbackURL: next, errorCallbackURL: "/auth/sign-in" },
      headers: request.headers,
      asResponse: true,
    });
    if (!response.ok) return { error: { message: "Could not start the sign-in; try again." } };
    const { url } = (await response.json()) as { url: string };
    return redirectWithCookies(url, response);
  }
  const email = String(form.get("email") ?? "").trim();
  const password = String(form.get("password") ?? "");
  if (!methods.emailPassword) return { error: { message: "Email and password sign-in is turned off on this server." }, email };
  try {
    const response = await auth.api.signInEmail({ body: { email, password }, headers: request.headers, asResponse: true });
    if (response.ok) return redirectWithCookies(next, response);
  } catch {
    // better-auth throws for malformed input; the answer is the same.
  }
  return { error: { message: "Wrong email or password.", hint: "Check both, or create an account." }, email };
}

export default function SignIn({ loaderData, actionData }: Route.ComponentProps) {
  const { methods, next, provider, again } = loaderData;
  const busy = useNavigation().state === "submitting";
  const error = actionData?.error ?? loaderData.error;
  const order = [...methods.social].sort((a) => (a === provider ? -1 : 1));
  return (
    <main className="mx-auto flex max-w-sm flex-col gap-6 px-6 py-16">
      <h1 className="text-2xl font-semibold">{again ? "Sign in again" : "Sign in to Retasc"}</h1>
      {again ? (
        <p className="text-stone-700" data-testid="sign-in-again">
          You are signed in as <strong>{again.email}</strong>, but not within the last {again.window}. Approving a sign-in for a
          device or an agent needs a recent one: sign in again to go on.
        </p>
      ) : null}
      <ErrorNote error={error} />
      {order.length > 0 ? (
        <Form method="post" className="flex flex-col gap-2">
          <input type="hidden" name="next" value={next} />
          {order.map((p) => (
            <Button key={p} name="intent" value={p} tone={p === provider ? "primary" : "secondary"}>
              Continue with {p === "github" ? "GitHub" : "Google"}
            </Button>
          ))}
        </Form>
      ) : null}
      {methods.emailPassword ? (
        <Form method="post" className="flex flex-col gap-4">
          <input type="hidden" name="next" value={next} />
          <input type="hidden" name="intent" value="email" />
          <Field label="Email" name="email" type="email" autoComplete="email" required defaultValue={actionData?.email} />
          <Field label="Password" name="password" type="password" autoComplete="current-password" required />
          <Button>{busy ? "Signing in…" : "Sign in"}</Button>
          <p className="text-sm text-stone-600">
            No account yet?{" "}
            <Link className="underline" to={`/auth/sign-up?next=${encodeURIComponent(next)}`}>
              Create one
            </Link>
          </p>
        </Form>
      ) : null}
      {!methods.emailPassword && order.length === 0 ? (
        <p role="alert">
          No way to sign in is configured. The operator sets GITHUB_CLIENT_ID/SECRET, GOOGLE_CLIENT_ID/SECRET, or
          RETASC_EMAIL_PASSWORD=on.
        </p>
      ) : null}
    </main>
  );
}
