import { Form, Link, redirect } from "react-router";
import type { Route } from "./+types/auth.sign-up";
import { authOf, optionalUser, redirectWithCookies, safeNext } from "../auth.server.ts";
import { Button, ErrorNote, Field } from "../components/ui.tsx";
import { readForm } from "../forms.server.ts";

export function meta() {
  return [{ title: "Create an account · Retasc" }];
}

export async function loader({ request, context }: Route.LoaderArgs) {
  const next = safeNext(new URL(request.url).searchParams.get("next"));
  if (await optionalUser(request, context)) throw redirect(next);
  if (!context.services.config.emailPassword) throw redirect(`/auth/sign-in?next=${encodeURIComponent(next)}`);
  return { next };
}

export async function action({ request, context }: Route.ActionArgs) {
  if (!context.services.config.emailPassword) return { error: { message: "Email sign-up is turned off on this server." } };
  const form = await readForm(request);
  const next = safeNext(String(form.get("next") ?? ""));
  const name = String(form.get("name") ?? "").trim();
  const email = String(form.get("email") ?? "").trim().toLowerCase();
  const password = String(form.get("password") ?? "");
  const values = { name, email };
  if (password.length < 8) return { error: { message: "A password needs at least 8 characters." }, values };
  try {
    const response = await authOf(context).api.signUpEmail({
      body: { name: name || email.split("@")[0]!, email, password },
      headers: request.headers,
      asResponse: true,
    });
    if (response.ok) return redirectWithCookies(next, response);
    const body = (await response.json().catch(() => ({}))) as { code?: string; message?: string };
    if (body.code?.includes("USER_ALREADY_EXISTS")) {
      return { error: { message: "An account with this email already exists.", hint: "Sign in instead." }, values };
    }
    return { error: { message: body.message ?? "Could not create the account." }, values };
  } catch (error) {
    return { error: { message: (error as Error).message || "Could not create the account." }, values };
  }
}

export default function SignUp({ loaderData, actionData }: Route.ComponentProps) {
  const { next } = loaderData;
  return (
    <main className="mx-auto flex max-w-sm flex-col gap-6 px-6 py-16">
      <h1 className="text-2xl font-semibold">Create your Retasc account</h1>
      <ErrorNote error={actionData?.error} />
      <Form method="post" className="flex flex-col gap-4">
        <input type="hidden" name="next" value={next} />
        <Field label="Name" name="name" autoComplete="name" defaultValue={actionData?.values?.name} />
        <Field label="Email" name="email" type="email" autoComplete="email" required defaultValue={actionData?.values?.email} />
        <Field label="Password" name="password" type="password" autoComplete="new-password" required minLength={8} hint="At least 8 characters." />
        <Button>Create account</Button>
      </Form>
      <p className="text-sm text-stone-600">
        Already have one?{" "}
        <Link className="underline" to={`/auth/sign-in?next=${encodeURIComponent(next)}`}>
          Sign in
        </Link>
      </p>
    </main>
  );
}
