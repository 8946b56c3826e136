import { desc, eq } from "drizzle-orm";
import type { Db } from "../../db/client.ts";
import { checkpoints, issues } from "../../db/schema/index.ts";
import type { Services } from "../context.ts";
import type { NotifyKind } from "./kinds.ts";

/** A message stays well inside every platform's limit (Telegram 4,096, Discord 2,000 characters). */
const MAX_TITLE = 200;
const MAX_DETAIL = 400;
const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

/** Levels by number (server/issues/levels.ts): what an assignee is told about urgency. */
const levelNames = ["none", "low", "medium", "high", "urgent", "breached"] as const;

/** What a person is told, in plain text; each platform escapes it its own way (render.ts). */
export interface Message {
  /** "RTSC-12 · Fix the login" (identifier and title). */
  subject: string;
  /** What happened, one sentence. */
  headline: string;
  /** Further facts: the cancel reason, the checkpoint, the urgency. */
  details: { label: string; text: string }[];
  /** The issue in the Dash. */
  url: string;
}

export function dashBaseUrl(config: Services["config"]): string {
  return config.PUBLIC_URL ? config.PUBLIC_URL.replace(/\/+$/, "") : `http://localhost:${config.PORT}`;
}

/**
 * Builds the message at send time: the title, cancel reason and checkpoint are read and
 * decrypted here, never carried in a job payload. Null when the issue is gone.
 */
export async function composeMessage(services: Services, db: Db, orgId: string, issueId: string | null, kind: NotifyKind): Promise<Message | null> {
  const base = dashBaseUrl(services.config);
  if (kind === "test") {
    return {
      subject: "Retasc test message",
      headline: "Notifications reach you here. This is the test you asked for from the Dash.",
      details: [],
      url: `${base}/dash/settings/notifications`,
    };
  }
  if (!issueId) return null;
  const [row] = await db.select().from(issues).where(eq(issues.id, issueId));
  if (!row || row.orgId !== orgId) return null;
  const cipher = await services.keyring.forOrg(db, orgId);
  const title = clip(cipher.decrypt(row.titleEnc), MAX_TITLE);
  const details: Message["details"] = [];
  let headline: string;
  switch (kind) {
    case "done":
      headline = "was marked done.";
      break;
    case "canceled": {
      headline = "was canceled.";
      const reason = cipher.decrypt(row.cancelReasonEnc);
      if (reason) details.push({ label: "Reason", text: clip(reason, MAX_DETAIL) });
      break;
    }
    case "review": {
      headline = "is waiting for your review.";
      const [last] = await db
        .select()
        .from(checkpoints)
        .where(eq(checkpoints.issueId, issueId))
        .orderBy(desc(checkpoints.createdAt))
        .limit(1);
      if (last) {
        for (const [label, enc] of [["Done", last.doneEnc], ["Next", last.nextEnc], ["Gotchas", last.gotchasEnc]] as const) {
          const text = cipher.decrypt(enc);
          if (text) details.push({ label, text: clip(text, MAX_DETAIL) });
        }
      }
      break;
    }
    case "assigned": {
      headline = "was assigned to you.";
      details.push({ label: "Urgency", text: levelNames[row.effectiveLevel] ?? String(row.effectiveLevel) });
      if (row.effectiveDueAt) details.push({ label: "Deadline", text: row.effectiveDueAt.toISOString().replace(/\.\d{3}Z$/, "Z") });
      break;
    }
    case "reclaimed":
      headline = "was reclaimed: your agent's lease lapsed and the work is back in the queue.";
      break;
    case "issue_quarantined":
      headline = `is blocked: ${row.quarantineReason ?? "quarantined"}. No agent gets it until a person reads the notes and releases it.`;
      break;
    case "verification_stale": {
      headline = "was finished, but CI has not passed or failed it within the project's window: what waits on it is still blocked.";
      const evidence = [row.evidenceCommit && `commit ${row.evidenceCommit}`, row.evidenceBranch && `branch ${row.evidenceBranch}`, row.evidencePr && `request ${row.evidencePr}`].filter(Boolean).join(", ");
      if (evidence) details.push({ label: "Evidence", text: clip(evidence, MAX_DETAIL) });
      details.push({ label: "What to do", text: "Check the CI run for it, or pass or fail it by hand on the issue page." });
      break;
    }
    case "verification_failed": {
      headline = "failed CI after it was finished: it is back in the queue, ranked High or above.";
      const [last] = await db.select({ gotchasEnc: checkpoints.gotchasEnc }).from(checkpoints).where(eq(checkpoints.issueId, issueId)).orderBy(desc(checkpoints.createdAt)).limit(1);
      const failing = cipher.decrypt(last?.gotchasEnc ?? null);
      if (failing) details.push({ label: "Checks", text: clip(failing, MAX_DETAIL) });
      break;
    }
  }
  return { subject: `${row.identifier} · ${title}`, headline, details, url: `${base}/dash/issues/${encodeURIComponent(row.identifier)}` };
}
