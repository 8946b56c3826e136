import { priorityName } from "../../constants/priorities.ts";

/**
 * An activity entry in words, as the Dash's log shows it: a short label for what happened
 * ("claimed", "to review") and a sentence of its facts ("claimed by codex, lease to 14:28
 * UTC, fence 1"), never the raw JSON. Pure, so it is tested on its own.
 */
export interface ActivityWords {
  label: string;
  text: string;
}

export interface ActivityFacts {
  kind: string;
  runtime: string | null;
  detail: Record<string, unknown>;
}

/** Names the log can give things it only holds ids of (attachments, by id), and the other issues the viewer may see named. */
export interface ActivityNames {
  attachments: Map<string, string>;
  /** Identifiers of the issues an entry mentions that lie within the viewer's projects; null: every one (decision 042). */
  issues: Set<string> | null;
}

/** The other issues an entry names: the blockers it was created with, the ends of a relation. */
export function mentionedIssues(entry: Pick<ActivityFacts, "kind" | "detail">): string[] {
  const d = entry.detail;
  if (entry.kind === "created") return list(d.blockedBy);
  if (entry.kind === "relation_added" || entry.kind === "relation_removed") return [d.source, d.target].flatMap((v) => (typeof v === "string" ? [v] : []));
  return [];
}

const clock = (iso: unknown) => (typeof iso === "string" && iso.length >= 16 ? `${iso.slice(11, 16)} UTC` : null);
const str = (v: unknown) => (typeof v === "string" && v.trim() ? v.trim() : null);
const list = (v: unknown) => (Array.isArray(v) ? v.map(String) : []);
const bytes = (n: unknown) => {
  const size = Number(n);
  if (!Number.isFinite(size)) return null;
  return size < 1024 ? `${size} B` : size < 1024 * 1024 ? `${(size / 1024).toFixed(1)} KiB` : `${(size / 1024 / 1024).toFixed(1)} MiB`;
};
const join = (...parts: (string | null | false | undefined)[]) => parts.filter(Boolean).join(", ");
const fenceOf = (d: Record<string, unknown>) => (d.fence !== undefined && d.fence !== null ? `fence ${String(d.fence)}` : null);
const relationWords: Record<string, string> = { blocks: "blocks", related: "is related to", duplicate: "duplicates" };

export function activityWords(entry: ActivityFacts, names: ActivityNames): ActivityWords {
  const d = entry.detail;
  const issue = (v: unknown) => (v === undefined || v === null ? "?" : names.issues === null || names.issues.has(String(v)) ? String(v) : "an issue outside your projects");
  const by = entry.runtime ? `by ${entry.runtime}` : null;
  switch (entry.kind) {
    case "created": {
      const blockers = list(d.blockedBy);
      const kind = d.work === false ? "a container" : "work";
      const priority = d.priority !== undefined ? `priority ${priorityName(Number(d.priority))}` : null;
      return { label: "created", text: join(`created as ${kind} ${by ?? ""}`.trim(), priority, blockers.length ? `blocked by ${blockers.map(issue).join(", ")}` : "depends on nothing") };
    }
    case "claimed":
      return {
        label: d.review === true ? "claimed for review" : "claimed",
        text: join(`claimed ${by ?? ""}`.trim(), clock(d.expiresAt) && `lease to ${clock(d.expiresAt)}`, fenceOf(d)),
      };
    case "heartbeat":
      return d.rebound
        ? { label: "claim recovered", text: join(`the holder (${str(d.runtime) ?? entry.runtime ?? "?"}) took its claim back with a new token`, fenceOf(d)) }
        : Number(d.beats) > 1
          ? // A run of beats kept in one row (decision 105): from the entry's time to the last.
            { label: "heartbeats", text: join(`lease renewed ${String(d.beats)} times ${by ?? ""}`.trim(), clock(d.lastAt) && `the last at ${clock(d.lastAt)}`, fenceOf(d)) }
          : { label: "heartbeat", text: join(`lease renewed ${by ?? ""}`.trim(), fenceOf(d)) };
    case "checkpoint": {
      const parts = (["done", "next", "gotchas", "note"] as const).flatMap((k) => (str(d[k]) ? [`${k}: ${str(d[k])}`] : []));
      return { label: "checkpoint", text: [join(`saved ${by ?? ""}`.trim(), fenceOf(d)), ...parts].join(" · ") };
    }
    case "released":
      if (d.stalled === true) {
        return {
          label: "released, stalled",
          text: join(`claim of ${str(d.holderRuntime) ?? "the holder"} released by Retasc`, fenceOf(d)) + `: no checkpoint, comment or status write for ${String(d.stallMinutes ?? "?")} minutes, and the project releases stalled claims`,
        };
      }
      return { label: "released", text: join(`given back ${by ?? ""}`.trim(), fenceOf(d)) + (str(d.note) ? `: ${str(d.note)}` : "") };
    case "stalled":
      return {
        label: "stalled",
        text: join(`claim of ${str(d.runtime) ?? "the holder"} kept alive with no checkpoint, comment or status write${clock(d.lastProgressAt) ? ` since ${clock(d.lastProgressAt)}` : ""}`, fenceOf(d), `the project's stall window is ${String(d.stallMinutes ?? "?")} minutes`),
      };
    case "force_released":
      return {
        label: "taken back",
        text: join(`claim of ${str(d.holderRuntime) ?? "the holder"} taken back ${by ?? ""}`.trim(), fenceOf(d)) + (str(d.reason) ? `: ${str(d.reason)}` : ""),
      };
    case "reclaimed":
      return { label: "reclaimed", text: join(`lease of ${str(d.runtime) ?? "the holder"} expired${clock(d.expiredAt) ? ` at ${clock(d.expiredAt)}` : ""}`, fenceOf(d), "the issue is available again") };
    case "finished":
      return d.to === "review"
        ? { label: "to review", text: join(`handed to review ${by ?? ""}`.trim(), fenceOf(d), "the lease ended") }
        : { label: "finished", text: join(`${String(d.to ?? "done")} ${by ?? ""}`.trim(), fenceOf(d), "the lease ended", d.verification === "pending" ? "CI verifies it before what waits on it starts" : "") };
    case "verified":
      return { label: "verified", text: `CI passed it (${String(d.source ?? "?")}): what waits on it can start` };
    case "quarantined":
      return { label: "quarantined", text: `${str(d.reason) ?? "quarantined"}: blocked, never dispatched until a person releases it` };
    case "unquarantined":
      return { label: "released from quarantine", text: join(`back in the queue ${by ?? ""}`.trim(), "its count of abandoned claims starts again") };
    case "verification_stale":
      return {
        label: "CI stale",
        text: `no CI result within the project's window (${String(d.windowMinutes ?? "?")} minutes): what waits on it stays blocked; check the run, or pass or fail it by hand`,
      };
    case "verification_failed":
      return { label: "failed CI", text: `${list(d.checks).join(", ") || "failed by hand"} (${String(d.source ?? "?")}): back in the queue at High or above` };
    case "status_changed":
      return { label: "status changed", text: `${String(d.from ?? "?")} → ${String(d.to ?? "?")}` + (str(d.reason) ? `: ${str(d.reason)}` : "") };
    case "updated": {
      const fields = list(d.fields).filter((f) => f !== "priority");
      const priority = d.priority !== undefined ? `priority set to ${priorityName(Number(d.priority))}` : null;
      return { label: "updated", text: join(fields.length ? `changed ${fields.join(", ")}` : null, priority) || "updated" };
    }
    case "commented":
      return { label: "commented", text: join(`comment added ${by ?? ""}`.trim()) };
    case "comment_retracted":
      return { label: "comment retracted", text: `comment retracted` + (str(d.note) ? `: ${str(d.note)}` : "") };
    case "attachment_added": {
      const name = names.attachments.get(String(d.attachmentId)) ?? "an attachment";
      const about = d.size !== undefined ? join(bytes(d.size), str(d.contentType)) : null;
      return { label: "attached", text: `added ${name}${about ? ` (${about})` : ""}` };
    }
    case "attachment_obsoleted":
      return { label: "attachment obsolete", text: `marked ${names.attachments.get(String(d.attachmentId)) ?? "an attachment"} obsolete` };
    case "relation_added":
    case "relation_removed": {
      const relation = `${issue(d.source)} ${relationWords[String(d.type)] ?? String(d.type ?? "")} ${issue(d.target)}`;
      return { label: entry.kind === "relation_added" ? "relation added" : "relation removed", text: relation };
    }
    // Outsiders' text and a person's triage (docs/decisions/038): what was held, why, and what a person let in.
    case "triage_held":
      return d.reason === "edited"
        ? { label: "back in triage", text: `changed at the source${str(d.source) ? ` (${str(d.source)})` : ""} after it was accepted: the new text waits for a person; agents keep the accepted text` }
        : d.reason === "replaced"
          ? { label: "held text changed", text: `changed at the source${str(d.source) ? ` (${str(d.source)})` : ""} while awaiting triage: the text to read is the new one` }
          : { label: "awaiting triage", text: `filed from outside the team${str(d.source) ? ` (${str(d.source)})` : ""}: its text waits for a person` };
    case "triage_accepted":
      return { label: "accepted", text: join(`the text shown was accepted ${entry.runtime === "cli" ? "with retasc triage" : "on the Dash"}`, str(d.sha256) && `SHA-256 ${str(d.sha256)!.slice(0, 12)}…`) };
    case "triage_restored":
      return { label: "accepted again", text: `the source${str(d.source) ? ` (${str(d.source)})` : ""} is back at the text that was accepted` };
    case "comment_held":
      return { label: "comment held", text: `a comment${str(d.source) ? ` by ${str(d.source)}` : ""} from outside the team waits for a person` };
    case "comment_released":
      return { label: "comment released", text: join("a held comment was released to the thread", str(d.sha256) && `SHA-256 ${str(d.sha256)!.slice(0, 12)}…`) };
    case "held_comment_withdrawn":
      return { label: "held comment withdrawn", text: `a held comment was ${str(d.source) ?? "withdrawn"}` };
    case "held_comment_discarded":
      return { label: "held comment discarded", text: "a held comment was discarded unread by agents" };
    case "sla_changed":
      return { label: "deadline", text: `deadline state ${String(d.from ?? "?")} → ${String(d.to ?? "?")}` };
    default: {
      const text = Object.entries(d)
        .filter(([, v]) => v !== null && v !== undefined && typeof v !== "object")
        .map(([k, v]) => `${k} ${String(v)}`)
        .join(", ");
      return { label: entry.kind.replace(/_/g, " "), text };
    }
  }
}
