/**
 * The replies of the server as this CLI reads them: the /api/cli endpoints
 * (app/routes/api.cli.*.ts) and the CLI the server serves; the MCP tools' are in ./wire-mcp.ts.
 * The CLI talks to the server only over the wire, so these restate the fields it uses rather
 * than import the server's types; the end-to-end tests hold both sides to them.
 */

export type Role = "owner" | "admin" | "member";

export interface OrgOfUser {
  orgId: string;
  name: string;
  role: Role;
  status: string;
  memberId?: string;
}

/** GET /api/cli/whoami */
export interface CliWhoami {
  user: { id: string; email: string; name: string };
  orgs: OrgOfUser[];
}

/** GET /api/cli/sign-in-methods */
export interface SignInMethods {
  social: string[];
  emailPassword: boolean;
}

/** POST /api/auth/device/code (RFC 8628) */
export interface DeviceCode {
  device_code: string;
  user_code: string;
  verification_uri_complete: string;
  interval?: number;
  expires_in: number;
}

/** POST /api/auth/device/token: the token, or an RFC 8628 error. */
export interface DeviceToken {
  access_token?: string;
  error?: string;
  error_description?: string;
}

/** POST /api/cli/orgs */
export interface CreatedOrg {
  orgId: string;
  name: string;
  role: Role;
}

export interface Project {
  id: string;
  prefix: string;
  name: string;
}

/** GET /api/cli/projects */
export interface ProjectList {
  projects: Project[];
}

/** POST /api/cli/projects, action rename-prefix (decision 089). */
export interface RenamedPrefix {
  projectId: string;
  prefix: string;
  previous: string;
  renamed: number;
  changed: boolean;
  /** The prefixes the project had before, which still name its issues. */
  oldPrefixes: string[];
}

/** POST /api/cli/projects */
export interface CreatedProject {
  projectId: string;
  name: string;
  prefix: string;
}

/** POST /api/cli/keys, action mint (and rotate, which adds replacedKeyId). */
export interface MintedKey {
  keyId: string;
  key: string;
  prefix: string;
  runtime: string;
  name: string | null;
  projectId: string | null;
  userId: string;
  /** A CI key (rtci_…): attests verification for its project and nothing else. */
  ci?: true;
  /** A hosted key: never behind a watchdog proxy; its claim replies say what renews them. */
  hosted?: true;
}

/** POST /api/ci/verify (server/verification/attest.ts) */
export interface Attested {
  identifier: string;
  check: string;
  recorded: boolean;
  verification: "pending" | "passed" | "failed" | "none";
}

/** POST /api/cli/projects, action verification (server/verification/settings.ts) */
export interface VerificationSettings {
  projectId: string;
  prefix: string;
  mode: "off" | "ci";
  checks: string[];
  windowMinutes: number;
  stallMinutes: number;
  quarantineAfter: number;
  releaseStalled: boolean;
}

/** POST /api/cli/keys, action revoke */
export interface RevokedKey {
  keyId: string;
  status: "revoked";
  changed: boolean;
}

export interface KeyView {
  keyId: string;
  prefix: string;
  runtime: string;
  name: string | null;
  hosted: boolean;
  userEmail: string;
  projectPrefix: string | null;
  status: "active" | "revoked" | "expired";
  lastUsedAt: string | null;
}

/** GET /api/cli/keys */
export interface KeyList {
  keys: KeyView[];
}

export interface PersonView {
  kind: "human";
  memberId: string;
  name: string;
  email: string;
  role: Role;
  status: string;
  /** The projects they and their agents reach, or null for all. */
  projectIds: string[] | null;
}

export interface AgentView {
  kind: "agent";
  memberId: string;
  runtime: string;
  keyPrefix: string;
  humanEmail: string;
  projectPrefix: string | null;
  status: string;
}

export interface InviteView {
  inviteId: string;
  state: string;
  projectIds: string[] | null;
  expiresAt: string | null;
  acceptedBy: string | null;
}

/** GET /api/cli/members: invites are null for plain members. */
export interface MemberList {
  members: (PersonView | AgentView)[];
  invites: InviteView[] | null;
}

/** POST /api/cli/members, action invite */
export interface CreatedInvite {
  inviteId: string;
  code: string;
  projectIds: string[] | null;
  expiresAt: string;
}

/** POST /api/cli/members, action scope */
export interface ScopedMember {
  memberId: string;
  projectIds: string[] | null;
}

/** POST /api/cli/members, action revoke-invite */
export interface RevokedInvite {
  inviteId: string;
  state: string;
  changed: boolean;
}

/** POST /api/cli/join */
export interface JoinedOrg {
  orgId: string;
  orgName: string;
  memberId: string;
  role: Role;
  projects: Project[];
}

/** POST /api/cli/setup */
export interface RedeemedSetup {
  key: string;
  keyId: string;
  orgId: string;
  orgName: string;
  projectId: string;
  prefix: string;
  runtime: string;
}

/** `/cli/latest.json`: the CLI the server serves (app/routes/cli.$file.ts). */
export interface ServerCli {
  version: string;
  /** The versioned tarball's URL. */
  url: string;
  /** The command that installs it, as the server prints it for people. */
  install: string;
}
