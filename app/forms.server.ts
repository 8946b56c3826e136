import { data } from "react-router";

/**
 * The form a page action was sent. A body that is no form (another content type, broken
 * multipart) is the sender's mistake: a 400, never the 500 `request.formData()` would throw into.
 */
export async function readForm(request: Request): Promise<FormData> {
  try {
    return await request.formData();
  } catch {
    throw data(
      {
        error: {
          code: "INVALID_INPUT",
          message: "the request body is not a form",
          hint: "Submit the page's form (application/x-www-form-urlencoded or multipart/form-data).",
        },
      },
      { status: 400 },
    );
  }
}
