import type { BetterAuthPlugin } from "better-auth";
import { APIError, createAuthMiddleware } from "better-auth/api";
import { unstorableText, unstorableTextIn } from "../errors.ts";

/**
 * better-auth's endpoints (/api/auth/*) are a door of their own: sign-up, sign-in, the device
 * flow, OAuth registration and tokens parse their own bodies. Every one of them refuses, before
 * it runs, a body or query holding text no column can store (a NUL, an unpaired surrogate), as
 * the pages' forms, the CLI's JSON and /mcp's arguments do.
 */
export const unstorableTextGuard = {
  id: "retasc-unstorable-text",
  hooks: {
    before: [
      {
        matcher: () => true,
        handler: createAuthMiddleware(async (ctx) => {
          const where = unstorableTextIn({ ...(ctx.query ?? {}), ...(typeof ctx.body === "object" ? ctx.body : { body: ctx.body }) });
          if (where === null) return;
          const { code, message, hint } = unstorableText(where);
          throw new APIError("BAD_REQUEST", { code, message, hint });
        }),
      },
    ],
  },
} satisfies BetterAuthPlugin;
