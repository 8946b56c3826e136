import { Form, redirect } from "react-router";
import type { Route } from "./+types/device";
import { optionalUser, requireRecentUser } from "../auth.server.ts";
import { decideDeviceCode, lookUpDeviceCode, normalizeUserCode } from "../../server/auth/device.ts";
import { Button, ErrorNote, Field, Notice } from "../components/ui.tsx";
import { readForm } from "../forms.server.ts";

export function meta() {
  return [{ title: "Approve a device · Retasc" }];
}

/**
 * RFC 8628 verification page. `retasc login` prints this URL and a code; the signed-in person
 * enters (or confirms) the code, then approves or denies the CLI's sign-in. Looking a code up
 * claims nothing; approving binds it to the person who approves, and needs a sign-in within
 * SIGN_IN_RECENT_SECONDS (15 minutes), or the person signs in again first (decision 037).
 * Look-ups and decisions are limited per address and per session (server/http/limits.ts).
 */
function describe(error: unknown): { message: string; hint?: string } {
  const code = (error as { code?: string })?.code;
  if (code === "NOT_FOUND") return { message: "That code was not recognised.", hint: "Check the code shown in your terminal." };
  const { message, hint } = error as { message: string; hint?: string };
  return { message: `${message.charAt(0).toUpperCase()}${message.slice(1)}.`, hint };
}

export async function loader({ request, context }: Route.LoaderArgs) {
  const url = new URL(request.url);
  const user = await optionalUser(request, context);
  if (!user) {
    // Said the same whatever the code: a visitor who is not signed in learns nothing of it.
    const provider = url.searchParams.get("provider");
    const next = encodeURIComponent(url.pathname + url.search);
    throw redirect(`/auth/sign-in?next=${next}${provider ? `&provider=${encodeURIComponent(provider)}` : ""}`);
  }
  const entered = url.searchParams.get("user_code");
  if (!entered) return { user: { email: user.email }, userCode: null, status: null, error: null };
  // About to approve: a sign-in from long ago is asked again before the code is even shown.
  await requireRecentUser(request, context);
  const userCode = normalizeUserCode(entered);
  try {
    return { user: { email: user.email }, userCode, status: await lookUpDeviceCode(context.services.db, userCode, context.services.clock.now()), error: null };
  } catch (error) {
    return { user: { email: user.email }, userCode, status: null, error: describe(error) };
  }
}

export async function action({ request, context }: Route.ActionArgs) {
  if (!(await optionalUser(request, context))) throw redirect("/auth/sign-in?next=/device");
  const form = await readForm(request);
  const userCode = normalizeUserCode(String(form.get("user_code") ?? ""));
  const decision = form.get("decision") === "approve" ? "approved" : "denied";
  // Come back to this code after signing in again.
  const back = new Request(new URL(`/device?user_code=${userCode}`, request.url), { headers: request.headers });
  const user = await requireRecentUser(back, context);
  try {
    await decideDeviceCode(context.services.db, { userCode, userId: user.id, decision }, context.services.clock.now());
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
      ) : userCode && status === "expired" ? (
        <Notice>This code has expired. Run retasc login again for a new one.</Notice>
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
