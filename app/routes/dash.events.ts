import type { Route } from "./+types/dash.events";
import { requireMember } from "../auth.server.ts";
import { requestScope } from "../../server/http/scope.ts";

/**
 * Server-sent events for live Dash pages: every change event of the viewer's org, as
 * published by any app instance (PostgreSQL NOTIFY → context.hub). Payloads carry the
 * kind and identifier only, never content; pages reload their own data on each one.
 * A comment line every 15 s keeps proxies from closing an idle stream.
 */
const HEARTBEAT_MS = 15_000;

export async function loader({ request, context }: Route.LoaderArgs) {
  const { ctx } = await requireMember(request, context);
  const orgId = ctx.principal.orgId;
  const release = context.hub.holdStream({ person: ctx.principal.userId ?? ctx.principal.orgId, address: requestScope()?.address ?? null });
  if (!release) {
    return Response.json(
      {
        error: {
          code: "RATE_LIMITED",
          message: "Too many live Dash streams are open for you or your address.",
          hint: "Close some Dash tabs; each holds one stream.",
        },
      },
      { status: 429, headers: { "retry-after": "30" } },
    );
  }
  const encoder = new TextEncoder();
  let stop = () => {};
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      const send = (chunk: string) => {
        try {
          controller.enqueue(encoder.encode(chunk));
        } catch {
          stop(); // the client is gone
        }
      };
      const unsubscribe = context.hub.subscribe(
        (event) => {
          if (event.orgId !== orgId) return;
          // Events name no project: a viewer scoped to some projects (decision 042) is told a change happened, not where.
          const identifier = ctx.principal.projectIds === null ? (event.identifier ?? null) : null;
          send(`event: change\ndata: ${JSON.stringify({ kind: event.kind, identifier })}\n\n`);
        },
        () => stop(),
      );
      const heartbeat = setInterval(() => send(": ping\n\n"), HEARTBEAT_MS);
      let stopped = false;
      stop = () => {
        if (stopped) return;
        stopped = true;
        release();
        unsubscribe();
        clearInterval(heartbeat);
        try {
          controller.close();
        } catch {
          // already closed
        }
      };
      request.signal.addEventListener("abort", stop, { once: true });
      // Gone before the stream began: no abort event will come.
      if (request.signal.aborted) return stop();
      send("retry: 2000\n: connected\n\n");
    },
    cancel() {
      stop();
    },
  });
  return new Response(stream, {
    headers: {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache, no-transform",
      "x-accel-buffering": "no",
    },
  });
}
