/**
 * Is `name` a branch name git accepts (`git check-ref-format --branch`)? A checkpoint's branch
 * is handed to the next agent, which passes it to git: anything git would refuse (spaces,
 * control characters, `..`, `~^:?*[\`, `@{`, a leading `-`, a component starting with `.` or
 * ending in `.lock`) is refused here instead of being stored.
 */
export function isBranchName(name: string): boolean {
  if (name === "HEAD" || name.startsWith("-") || name.endsWith(".")) return false;
  if (/[\x00-\x20\x7f~^:?*[\\]/.test(name) || name.includes("..") || name.includes("@{")) return false;
  return name.split("/").every((part) => part.length > 0 && !part.startsWith(".") && !part.endsWith(".lock"));
}
