import crypto from "node:crypto";
import type { ServerResponse } from "node:http";
import type { Config } from "../config/index.ts";

/**
 * Security headers of every response, set once at the edge (server/http/edge.ts) before any
 * handler runs; a handler's own headers of the same name win. Pages get a Content-Security-Policy
 * whose scripts must carry the request's nonce: React Router inlines the hydration context and
 * route modules' imports, and their content changes per request, so hashes cannot allow them.
 * No page may be framed (`frame-ancestors 'none'` + X-Frame-Options), or a click on an invisible
 * /device page would approve an attacker's device code.
 */
export type SecurityHeaders = (res: ServerResponse, nonce: string | null) => void;

export function securityHeaders(
  config: Pick<Config, "PUBLIC_URL" | "GITHUB_OAUTH_URL" | "GOOGLE_OAUTH_URL" | "RETASC_BILLING" | "STRIPE_CHECKOUT_URL">,
): SecurityHeaders {
  const fixed: [string, string][] = [
    ["x-content-type-options", "nosniff"],
    ["x-frame-options", "DENY"],
    // Same-origin form posts keep their Origin header (the edge checks it); nothing leaks a
    // /join/<code> URL to another site.
    ["referrer-policy", "same-origin"],
    ["cross-origin-opener-policy", "same-origin"],
  ];
  // Behind a TLS proxy the app itself speaks http, so PUBLIC_URL says whether people use https.
  if (config.PUBLIC_URL?.startsWith("https:")) fixed.push(["strict-transport-security", "max-age=31536000; includeSubDomains"]);
  // Social sign-in posts the sign-in form, which redirects to the provider, and Buy credit posts
  // the Dash's form, which redirects to Stripe Checkout: form-action covers redirects.
  const formAction = [
    "'self'",
    new URL(config.GITHUB_OAUTH_URL).origin,
    new URL(config.GOOGLE_OAUTH_URL).origin,
    ...(config.RETASC_BILLING === "on" ? [new URL(config.STRIPE_CHECKOUT_URL).origin] : []),
  ].join(" ");
  const page = (nonce: string) =>
    `default-src 'self'; script-src 'self' 'nonce-${nonce}'; style-src 'self'; style-src-attr 'unsafe-inline'; ` +
    `img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action ${formAction}; frame-ancestors 'none'`;
  // Answers that are never a page (/mcp): nothing to load, nothing to frame.
  const none = "default-src 'none'; frame-ancestors 'none'";
  return (res, nonce) => {
    for (const [name, value] of fixed) res.setHeader(name, value);
    res.setHeader("content-security-policy", nonce === null ? none : page(nonce));
  };
}

/** A fresh script nonce for one page. */
export const newNonce = () => crypto.randomBytes(16).toString("base64");
