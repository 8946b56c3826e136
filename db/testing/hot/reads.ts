/** The hot statements of the view reads: an issue's view and its claim's discussion (migration 0085, decision 119). */
import { claimDiscussion, issueDiscussion, issueViewReads, viewReads, type HotStatement } from "./functions.ts";

export const readStatements: HotStatement[] = [
  // ── retasc_view_reads and retasc_claim_discussion (0085_view_extras): the doors by id read the row ──
  { name: "view_reads: the issue", source: viewReads, sql: `SELECT * FROM issues WHERE org_id = p_org_id AND id = p_issue_id` },
  { name: "claim_discussion: the issue", source: claimDiscussion, sql: `SELECT * FROM issues WHERE org_id = p_org_id AND id = p_issue_id` },
  // ── retasc_issue_view_reads (0085_view_extras): each section only when its bit is set; its labels and
  // people read no partitioned table (issue_labels by the issue's id, labels and "user"), so are not listed ──
  {
    name: "issue_view_reads: relations",
    source: issueViewReads,
    sql: `SELECT coalesce(json_agg(json_build_object('type', r.type, 'sourceId', r.source_id, 'targetId', r.target_id,
                                               'identifier', o.identifier, 'status', o.status, 'projectId', o.project_id)), '[]')
      FROM relations r JOIN issues o ON o.org_id = p_issue.org_id AND o.id = CASE WHEN r.source_id = p_issue.id THEN r.target_id ELSE r.source_id END
     WHERE r.org_id = p_issue.org_id AND (r.source_id = p_issue.id OR r.target_id = p_issue.id)`,
  },

  {
    name: "issue_view_reads: children",
    source: issueViewReads,
    sql: `SELECT coalesce(json_agg(json_build_object('identifier', c.identifier, 'projectId', c.project_id) ORDER BY c.number), '[]')
      FROM issues c WHERE c.org_id = p_issue.org_id AND c.parent_id = p_issue.id`,
  },
  {
    name: "issue_view_reads: parent",
    source: issueViewReads,
    sql: `SELECT json_build_object('identifier', p.identifier, 'projectId', p.project_id)
      FROM issues p WHERE p.org_id = p_issue.org_id AND p.id = p_issue.parent_id`,
  },
  {
    name: "issue_view_reads: checkpoint",
    source: issueViewReads,
    sql: `SELECT json_build_object('doneEnc', cp.done_enc, 'nextEnc', cp.next_enc, 'gotchasEnc', cp.gotchas_enc,
                             'noteEnc', cp.note_enc, 'branch', cp.branch, 'runtime', cp.runtime,
                             'userId', cp.user_id, 'createdAt', retasc_iso(cp.created_at))
      FROM checkpoints cp WHERE cp.org_id = p_issue.org_id AND cp.issue_id = p_issue.id ORDER BY cp.created_at DESC, cp.id DESC LIMIT 1`,
  },
  {
    name: "issue_view_reads: lease",
    source: issueViewReads,
    sql: `SELECT json_build_object('userId', l.user_id, 'runtime', l.runtime, 'keyId', l.key_id, 'fence', l.fence,
                             'expiresAt', retasc_iso(l.expires_at),
                             'holder', CASE WHEN u.id IS NULL THEN NULL
                                            ELSE json_build_object('userId', u.id, 'email', u.email, 'name', u.name) END)
      FROM leases l LEFT JOIN "user" u ON u.id = l.user_id
     WHERE l.org_id = p_issue.org_id AND l.id = p_issue.lease_id`,
  },

  // ── retasc_issue_discussion (0085_view_extras) ──
  {
    name: "issue_discussion: latest comments",
    source: issueDiscussion,
    sql: `SELECT coalesce(json_agg(json_build_object('id', c.id, 'bodyEnc', c.body_enc, 'createdAt', retasc_iso(c.created_at),
                                               'runtime', c.runtime, 'name', c.name)
                             ORDER BY c.created_at DESC, c.id DESC), '[]'),
           (SELECT count(*) FROM comments cm WHERE cm.org_id = p_issue.org_id AND cm.issue_id = p_issue.id AND cm.retracted_at IS NULL)
      FROM (SELECT cm.id, cm.body_enc, cm.created_at, cm.runtime, u.name
              FROM comments cm LEFT JOIN "user" u ON u.id = cm.author_id
             WHERE cm.org_id = p_issue.org_id AND cm.issue_id = p_issue.id AND cm.retracted_at IS NULL
             ORDER BY cm.created_at DESC, cm.id DESC LIMIT 5) c`,
  },
  {
    name: "issue_discussion: latest attachments",
    source: issueDiscussion,
    sql: `SELECT coalesce(json_agg(json_build_object('id', a.id, 'urlEnc', a.url_enc, 'titleEnc', a.title_enc,
                                               'contentType', a.content_type, 'size', a.size_bytes)
                             ORDER BY a.created_at DESC, a.id DESC), '[]'),
           (SELECT count(*) FROM attachments at WHERE at.org_id = p_issue.org_id AND at.issue_id = p_issue.id AND at.obsoleted_at IS NULL)
      FROM (SELECT at.id, at.url_enc, at.title_enc, at.created_at, f.content_type, f.size_bytes
              FROM attachments at LEFT JOIN attachment_files f ON f.attachment_id = at.id
             WHERE at.org_id = p_issue.org_id AND at.issue_id = p_issue.id AND at.obsoleted_at IS NULL
             ORDER BY at.created_at DESC, at.id DESC LIMIT 5) a`,
  },
];
