import { data } from "react-router";
import { unstorableText, unstorableTextIn } from "../server/errors.ts";

/**
 * The form a page action was sent. A body that is no form (another content type, broken
 * multipart) is the sender's mistake: a 400, never the 500 `request.formData()` would throw into;
 * so is a field (or a file's name) holding a NUL or an unpaired surrogate, refused here for every
 * page before the action reads it.
 */
export async function readForm(request: Request): Promise<FormData> {
  let form: FormData;
  try {
    form = await request.formData();
  } catch {
    throw refused("the request body is not a form", "Submit the page's form (application/x-www-form-urlencoded or multipart/form-data).");
  }
  // Every page action at once, before any query: no field may carry text no column can store.
  for (const [name, value] of form) {
    const where = unstorableTextIn(typeof value === "string" ? { [name]: value } : { [name]: value.name });
    if (where !== null) {
      const { message, hint } = unstorableText(where);
      throw refused(message, hint);
    }
  }
  return form;
}

const refused = (message: string, hint: string) => data({ error: { code: "INVALID_INPUT", message, hint } }, { status: 400 });
