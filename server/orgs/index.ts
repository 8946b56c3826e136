/**
 * Orgs, projects, members and agent keys, one file per concern: fields.ts (ids and the shared
 * field schemas), org-rows.ts (people, orgs, memberships), prefixes.ts (a project's prefix and
 * creating a project), mint-key.ts (minting a key under its holder's and its tree's locks),
 * key-auth.ts (what a presented key resolves to). Files in this folder import those directly;
 * the rest of the tree imports them from here.
 */
export { emailSchema, newId, prefixSchema, runtimeSchema } from "./fields.ts";
export { createOrg, deleteOrg, ensureMember, ensureUser, isTimeZone } from "./org-rows.ts";
export { createProject, prefixRaceRefusal, projectNamedBy, requirePrefixFree } from "./prefixes.ts";
export { lockActiveHolder, lockKeyTree, mintAgentKey } from "./mint-key.ts";
export {
  agentPrincipalColumns,
  authenticateAgentKey,
  authenticateAgentKeyCached,
  authenticateCiKey,
  bearerKeyOf,
  CI_KEY_PREFIX,
  keyActs,
  keyMembership,
  keyOrg,
  keyPlaceColumns,
  keyProject,
  touchKey,
} from "./key-auth.ts";
