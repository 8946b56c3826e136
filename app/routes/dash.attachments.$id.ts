import type { Route } from "./+types/dash.attachments.$id";
import { requireMember } from "../auth.server.ts";
import { toErrorBody } from "../errors.server.ts";
import { downloadAttachmentFile } from "../../server/issues/attachments-files.ts";

/**
 * A file attachment of the viewer's org, for any member (as the issue page is): images inline
 * (the page's thumbnails), everything else as a download; HTML, SVG and XML as opaque bytes,
 * with nosniff and a sandboxing CSP, so an attached file never runs as a page of this origin.
 * Another org's attachment is NOT_FOUND, exactly like a missing one.
 */
export async function loader({ request, context, params }: Route.LoaderArgs) {
  const { ctx } = await requireMember(request, context);
  try {
    const { headers, content } = await downloadAttachmentFile(ctx, { attachment: params.id });
    return new Response(new Uint8Array(content), { headers });
  } catch (error) {
    const { status, body } = toErrorBody(error, context.log);
    return Response.json({ error: body }, { status });
  }
}
