import { Form, redirect } from "react-router";
import type { Route } from "./+types/device";
import { authOf, optionalUser } from "../auth.server.ts";
import { Button, ErrorNote, Field, Notice } from "../components/ui.tsx";
import { readForm } from "../forms.server.ts";

export function meta() {
  return [{ title: "Approve a device · Retasc" }];
}

/**
 * RFC 8628 verification page. `retasc login` prints this URL and a code; the signed-in
 * person enters (or confirms) the code, then approves or denies the CLI's sign-in.
 */
function describe(error: unknown): { message: string; hint?: string } {
  const body = (error as { body?: { error?: string; error_description?: string } })?.body;
  if (body?.error === "expired_token") return { message: "This code has expired.", hint: "Run `retasc login` again for a new one." };
  if (body?.error_description) return { message: body.error_description, hint: "Check the code shown in your terminal." };
  return { message: "That code was not recognised.", hint: "Check the code shown in your terminal." };
}

function normalize(code: string): string {
  return code.replace(/[^a-zA-Z0-9]/g, "").toUpperCase();
}

export async function loader({ request, context }: Route.LoaderArgs) {
  const url = new URL(request.url);
  const user = await optionalUser(request, context);
  if (!user) {
    const provider = url.searchParams.get("provider");
    const next = encodeURIComponent(url.pathname + url.search);
    throw redirect(`/auth/sign-in?next=${next}${provider ? `&provider=${encodeURIComponent(provider)}` : ""}`);
  }
  const entered = url.searchParams.get("user_code");
  if (!entered) return { user, userCode: null, status: null, error: null };
  const userCode = normalize(entered);
  try {
    // Looking the code up as this person claims it for them; only they can then approve it.
    const result = await authOf(context).api.deviceVerify({ query: { user_code: userCode }, headers: request.headers });
    return { user, userCode, status: result.status as string, error: null };
  } catch (error) {
    return { user, userCode, status: null, error: describe(error) };
  }
}

export async function action({ request, context }: Route.ActionArgs) {
  if (!(await optionalUser(request, context))) throw redirect("/auth/sign-in?next=/device");
  const form = await readForm(request);
  const userCode = normalize(String(form.get("user_code") ?? ""));
  const decision = form.get("decision") === "approve" ? "approved" : "denied";
  const auth = authOf(context);
  try {
    if (decision === "approved") await auth.api.deviceApprove({ body: { userCode }, headers: request.headers });
    else await auth.api.deviceDeny({ body: { userCode }, headers: request.headers });
    return { decision, error: null };
  } catch (error) {
    return { decision: null, error: describe(error) };
  }
}

export default function Device({ loaderData, actionData }: Route.ComponentProps) {
  const { user, userCode, status } = loaderData;
  const error = actionData?.error ?? loaderData.error;
  return (
    <main className="mx-auto flex max-w-md flex-col gap-6 px-6 py-16">
      <h1 className="text-2xl font-semibold">Sign in a device</h1>
      <p className="text-stone-700">
        Signed in as <strong>{user.email}</strong>.
      </p>
      <ErrorNote error={error} />
      {actionData?.decision === "approved" ? (
        <Notice>Approved. The CLI is signed in as {user.email}; you can go back to your terminal.</Notice>
      ) : actionData?.decision === "denied" ? (
        <Notice>Denied. The CLI was not signed in.</Notice>
      ) : userCode && status === "pending" ? (
        <Form method="post" className="flex flex-col gap-4">
          <p>
            A <code>retasc</code> command line is asking to act as you. Approve it only if the code in your terminal is{" "}
            <strong className="font-mono text-lg tracking-widest" data-testid="user-code">
              {userCode}
            </strong>
            .
          </p>
          <input type="hidden" name="user_code" value={userCode} />
          <div className="flex gap-3">
            <Button name="decision" value="approve">
              Approve
            </Button>
            <Button name="decision" value="deny" tone="danger">
              Deny
            </Button>
          </div>
        </Form>
      ) : userCode && status ? (
        <Notice>This code was already {status}.</Notice>
      ) : (
        <Form method="get" className="flex flex-col gap-4">
          <Field
            label="Code shown by retasc login"
            name="user_code"
            autoComplete="one-time-code"
            required
            defaultValue={userCode ?? ""}
            placeholder="ABCD-EFGH"
          />
          <Button>Continue</Button>
        </Form>
      )}
    </main>
  );
}
