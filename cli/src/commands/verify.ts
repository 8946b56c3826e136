import { deploymentUrl, request } from "../api.ts";
import { CliError } from "../errors.ts";
import { ok, printJson, say } from "../output.ts";
import { asSession, requireSession } from "../session.ts";
import { orgIdOf, type OrgFlags } from "./manage.ts";
import type { Attested, VerificationSettings } from "../wire.ts";

export interface VerifyFlags {
  commit?: string;
  status?: string;
  check?: string;
  /** The run's URL (the issue's contract names it --url); the deployment is RETASC_DEPLOYMENT_URL's. */
  url?: string;
  json?: boolean;
}

/**
 * `retasc verify <PFX-42> --commit <sha> --status pass|fail --check <name> [--url <run>]`: CI
 * with no connector attests one check of a finish with its CI key, read from RETASC_CI_KEY
 * (never a flag: CI logs print command lines), at RETASC_DEPLOYMENT_URL (never the folder's
 * .retasc.json: where a key goes is not the checkout's to say).
 */
export async function verify(flags: VerifyFlags, positionals: string[]) {
  const identifier = positionals[0];
  const key = process.env.RETASC_CI_KEY;
  if (!key) throw new CliError("NOT_BOUND", "RETASC_CI_KEY is not set", "Mint a CI key (`retasc key mint --ci --project-id <id>`) and give it to CI as the secret RETASC_CI_KEY.");
  if (!identifier || !flags.commit || !flags.status || !flags.check) {
    throw new CliError("INVALID_INPUT", "verify needs the issue, --commit, --status and --check", "retasc verify PFX-42 --commit $(git rev-parse HEAD) --status pass --check test");
  }
  const attested = await request<Attested>(deploymentUrl({}, { folder: false }), "/api/ci/verify", {
    token: key,
    body: { identifier, commit: flags.commit, status: flags.status, check: flags.check, ...(flags.url ? { url: flags.url } : {}) },
  });
  if (flags.json) return printJson(attested);
  if (!attested.recorded) return say(`${attested.identifier} is not awaiting verification (${attested.verification}); nothing recorded.`);
  ok(`${attested.identifier}: ${flags.check} ${flags.status === "pass" ? "passed" : "failed"}; verification is ${attested.verification}.`);
}

/** `retasc project verification --project-id <id> --mode ci|off [--checks a,b] [--window <minutes>] [--release-stalled | --no-release-stalled]` (owner or admin). */
export async function projectVerification(
  flags: OrgFlags & { "project-id"?: string; mode?: string; checks?: string; window?: string; "quarantine-after"?: string; "release-stalled"?: boolean; "no-release-stalled"?: boolean },
) {
  if (!flags["project-id"] || !flags.mode) {
    throw new CliError("INVALID_INPUT", "project verification needs --project-id and --mode", "retasc project verification --project-id <id> --mode ci --checks test,lint --window 120");
  }
  if (flags["release-stalled"] && flags["no-release-stalled"]) {
    throw new CliError("INVALID_INPUT", "--release-stalled and --no-release-stalled contradict each other", "Pass one of them.");
  }
  const session = requireSession(flags);
  const orgId = await orgIdOf(flags, session);
  const settings = await asSession<VerificationSettings>(session, "/projects", {
    body: {
      orgId,
      action: "verification",
      projectId: flags["project-id"],
      mode: flags.mode,
      ...(flags.checks !== undefined ? { checks: flags.checks } : {}),
      ...(flags.window !== undefined ? { windowMinutes: Number(flags.window) } : {}),
      ...(flags["quarantine-after"] !== undefined ? { quarantineAfter: Number(flags["quarantine-after"]) } : {}),
      ...(flags["release-stalled"] ? { releaseStalled: true } : {}),
      ...(flags["no-release-stalled"] ? { releaseStalled: false } : {}),
    },
  });
  if (flags.json) return printJson(settings);
  ok(
    (settings.mode === "ci"
      ? `${settings.prefix} verifies finishes in CI: ${settings.checks.length ? `required checks ${settings.checks.join(", ")}` : "every check reported on the commit"}, stale after ${settings.windowMinutes} minutes.`
      : `${settings.prefix} takes finishes on the agent's word (verification off).`) +
      ` An issue is quarantined after ${settings.quarantineAfter} abandoned claims in a row.` +
      ` A claim with no progress for ${settings.stallMinutes} minutes is ${settings.releaseStalled ? "released" : "marked stalled"}.`,
  );
}
