/** The hot statements of the view reads: an issue's view and its claim's discussion. */
import { claimDiscussion, viewReads, type HotStatement } from "./functions.ts";

export const readStatements: HotStatement[] = [
  // ── retasc_view_reads (0070_org_keyed_statements) ──
  {
    name: "view_reads: the issue's view",
    source: viewReads,
    sql: `SELECT json_build_object(
    'rels', (SELECT coalesce(json_agg(json_build_object('type', r.type, 'sourceId', r.source_id, 'targetId', r.target_id,
                                                       'identifier', o.identifier, 'status', o.status, 'projectId', o.project_id)), '[]')
               FROM relations r JOIN issues o ON o.org_id = p_org_id AND o.id = CASE WHEN r.source_id = i.id THEN r.target_id ELSE r.source_id END
              WHERE r.org_id = p_org_id AND (r.source_id = i.id OR r.target_id = i.id)),
    'labels', (SELECT coalesce(json_agg(l.name ORDER BY l.name), '[]')
                 FROM issue_labels il JOIN labels l ON l.id = il.label_id WHERE il.issue_id = i.id),
    'children', (SELECT coalesce(json_agg(json_build_object('identifier', c.identifier, 'projectId', c.project_id) ORDER BY c.number), '[]')
                   FROM issues c WHERE c.org_id = p_org_id AND c.parent_id = i.id),
    'parent', (SELECT json_build_object('identifier', p.identifier, 'projectId', p.project_id) FROM issues p WHERE p.org_id = p_org_id AND p.id = i.parent_id),
    'checkpoint', (SELECT json_build_object('doneEnc', cp.done_enc, 'nextEnc', cp.next_enc, 'gotchasEnc', cp.gotchas_enc,
                                            'noteEnc', cp.note_enc, 'branch', cp.branch, 'runtime', cp.runtime,
                                            'userId', cp.user_id, 'createdAt', retasc_iso(cp.created_at))
                     FROM checkpoints cp WHERE cp.org_id = p_org_id AND cp.issue_id = i.id ORDER BY cp.created_at DESC, cp.id DESC LIMIT 1),
    'lease', (SELECT json_build_object('userId', l.user_id, 'runtime', l.runtime, 'keyId', l.key_id, 'fence', l.fence,
                                       'expiresAt', retasc_iso(l.expires_at),
                                       'holder', CASE WHEN u.id IS NULL THEN NULL
                                                      ELSE json_build_object('userId', u.id, 'email', u.email, 'name', u.name) END)
                FROM leases l LEFT JOIN "user" u ON u.id = l.user_id
               WHERE l.org_id = p_org_id AND l.id = i.lease_id AND i.lease_expires_at > p_now),
    'people', (SELECT coalesce(json_agg(json_build_object('userId', u.id, 'email', u.email, 'name', u.name)), '[]')
                 FROM "user" u WHERE u.id IN (i.assignee_id, i.author_id)))
    FROM issues i WHERE i.org_id = p_org_id AND i.id = p_issue_id`,
  },
  // ── retasc_claim_discussion (0070_org_keyed_statements) ──
  {
    name: "claim_discussion: latest comments and attachments",
    source: claimDiscussion,
    sql: `SELECT json_build_object(
    'comments', (SELECT coalesce(json_agg(json_build_object('id', c.id, 'bodyEnc', c.body_enc, 'createdAt', retasc_iso(c.created_at),
                                                          'runtime', c.runtime, 'name', c.name)
                                        ORDER BY c.created_at DESC, c.id DESC), '[]')
                   FROM (SELECT cm.id, cm.body_enc, cm.created_at, cm.runtime, u.name
                           FROM comments cm LEFT JOIN "user" u ON u.id = cm.author_id
                          WHERE cm.org_id = p_org_id AND cm.issue_id = p_issue_id AND cm.retracted_at IS NULL
                          ORDER BY cm.created_at DESC, cm.id DESC LIMIT 5) c),
    'commentsTotal', (SELECT count(*) FROM comments cm WHERE cm.org_id = p_org_id AND cm.issue_id = p_issue_id AND cm.retracted_at IS NULL),
    'attachments', (SELECT coalesce(json_agg(json_build_object('id', a.id, 'urlEnc', a.url_enc, 'titleEnc', a.title_enc,
                                                             'contentType', a.content_type, 'size', a.size_bytes)
                                           ORDER BY a.created_at DESC, a.id DESC), '[]')
                      FROM (SELECT at.id, at.url_enc, at.title_enc, at.created_at, f.content_type, f.size_bytes
                              FROM attachments at LEFT JOIN attachment_files f ON f.attachment_id = at.id
                             WHERE at.org_id = p_org_id AND at.issue_id = p_issue_id AND at.obsoleted_at IS NULL
                             ORDER BY at.created_at DESC, at.id DESC LIMIT 5) a),
    'attachmentsTotal', (SELECT count(*) FROM attachments at WHERE at.org_id = p_org_id AND at.issue_id = p_issue_id AND at.obsoleted_at IS NULL))`,
  },
];
