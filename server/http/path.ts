/**
 * The path a request will be routed on, for every decision taken before routing (which limit
 * applies, which handler answers): React Router builds the request URL with `new URL` (dot
 * segments, `%2e` and backslashes resolved) and matches case-insensitively, percent-decoded,
 * ignoring a trailing slash. Deciding on the raw target instead let `/api/auth/./sign-in/email`
 * or `/Auth/Sign-In/` past the sign-in limit while still reaching sign-in.
 *
 * Returns null for a target no route can be decided for: not origin-form (`//host/x` and
 * `http://host/x` would name another host in the URL the app sees) or bad percent-encoding.
 */
export function routePath(target: string | undefined): string | null {
  const raw = target ?? "/";
  const end = raw.search(/[?#]/);
  const path = end === -1 ? raw : raw.slice(0, end);
  // The common case (`/mcp`, `/dash/queue`, `/assets/x-1a2b.js`) is already canonical.
  if (CANONICAL.test(path)) return path;
  if (path[0] !== "/" || path[1] === "/" || path[1] === "\\") return null;
  let resolved: string;
  try {
    resolved = decodeURIComponent(new URL(path, "http://x").pathname);
  } catch {
    return null;
  }
  const collapsed = resolved.toLowerCase().replace(/[/\\]+/g, "/");
  return collapsed.length > 1 && collapsed.endsWith("/") ? collapsed.slice(0, -1) : collapsed;
}

/** `/` or segments of lowercase URL-safe characters, none empty, `.` or `..`. */
const CANONICAL = /^(?:\/|(?:\/(?!\.\.?(?:\/|$))[a-z0-9._~-]+)+)$/;
