import { createRequire } from "node:module";
import type { IssueStatus } from "../../../db/schema/index.ts";
import { BODY_MAX_CHARS } from "../../issues/schemas.ts";
import type { ReadNotice, SourceIssue, SourceLabel, SourceMapping, SourcePerson, SourceReader, SourceRelation } from "../pipeline/stream.ts";
import type { JiraApi } from "./client.ts";
import { dcRun } from "./fetch-dc.ts";
import type { AdfNode, JiraIssue, JiraUser } from "./fetch.ts";
import { readJiraPage } from "./read.ts";
import { wikiToMarkdown } from "./wiki.ts";

const { convert } = createRequire(import.meta.url)("adf-to-md") as { convert(doc: AdfNode & { version: number }): { result: string } };

/**
 * A Jira issue in the pipeline's terms. Statuses go by their category (To Do → todo, In
 * Progress → doing, Done → done, or canceled when the resolution says it was not done);
 * priorities by name; components come as labels; sub-tasks and an epic's children name their
 * parent; of the issue links, each issue carries its outward ones (blocks, duplicates, relates),
 * so every link comes once. The owner's mapping (`statuses`, `priorities` by Jira's names)
 * overrides the defaults.
 */
const canceledResolutions = new Set(["won't do", "won't fix", "duplicate", "cannot reproduce", "declined", "abandoned", "obsolete", "rejected"]);
const defaultPriorities: Record<string, number> = { highest: 1, blocker: 1, critical: 1, high: 2, major: 2, medium: 3, low: 4, minor: 4, lowest: 4, trivial: 4 };

export function jiraStatus(issue: JiraIssue, mapping: SourceMapping = {}): IssueStatus {
  const byName = mapping.statuses?.[issue.fields.status.name];
  if (byName) return byName;
  const category = issue.fields.status.statusCategory.key;
  if (category === "indeterminate") return "doing";
  if (category === "done") return canceledResolutions.has((issue.fields.resolution?.name ?? "").toLowerCase()) ? "canceled" : "done";
  return "todo";
}

export function jiraPriority(name: string | undefined, mapping: SourceMapping = {}): number {
  if (!name) return 0;
  return mapping.priorities?.[name] ?? defaultPriorities[name.toLowerCase()] ?? 0;
}

/** Jira's link types as Retasc's relations, seen from the outward side. */
function relationType(name: string): SourceRelation["type"] {
  const n = name.toLowerCase();
  if (n === "blocks") return "blocks";
  if (n === "duplicate") return "duplicate";
  return "related";
}

const MAX_DEPTH = 40;

/**
 * ADF as Markdown, by adf-to-md, after the tree is reduced to what it converts (a mention is its
 * text, a panel or an expand its content, a task list a bullet list, media dropped: attachments
 * come on their own) and checked (depth, heading levels, link marks), so hostile input can
 * neither crash the converter nor reach it as something else. The result is Markdown, rendered by
 * our safe renderer like any body.
 */
export function adfToMarkdown(doc: AdfNode | null | undefined): string | null {
  if (!doc || typeof doc !== "object") return null;
  const clean = (node: AdfNode, depth: number): AdfNode[] => {
    if (!node || typeof node !== "object" || depth > MAX_DEPTH) return [];
    const children = () => (Array.isArray(node.content) ? node.content.flatMap((c) => clean(c, depth + 1)) : []);
    const text = (value: unknown): AdfNode[] => (typeof value === "string" && value ? [{ type: "text", text: value }] : []);
    switch (node.type) {
      case "text":
        return [{ type: "text", text: typeof node.text === "string" ? node.text : "", marks: cleanMarks(node.marks) }];
      case "doc":
      case "paragraph":
      case "blockquote":
      case "bulletList":
      case "orderedList":
      case "listItem":
      case "table":
      case "tableRow":
      case "tableHeader":
      case "tableCell":
        return [{ type: node.type, content: children() }];
      case "heading": {
        const level = Math.min(Math.max(Math.trunc(Number(node.attrs?.level) || 1), 1), 6);
        return [{ type: "heading", attrs: { level }, content: children() }];
      }
      case "codeBlock": {
        const language = typeof node.attrs?.language === "string" && /^[\w+-]{1,30}$/.test(node.attrs.language) ? node.attrs.language : "";
        return [{ type: "codeBlock", ...(language ? { attrs: { language } } : {}), content: children().filter((c) => c.type === "text").map((c) => ({ type: "text", text: c.text!.replace(/`{3,}/g, (run) => run.split("").join("\u200b")) })) }];
      }
      case "hardBreak":
      case "rule":
        return [{ type: node.type }];
      case "inlineCard":
      case "blockCard":
      case "embedCard":
        return typeof node.attrs?.url === "string" ? [{ type: "text", text: node.attrs.url, marks: cleanMarks([{ type: "link", attrs: { href: node.attrs.url } }]) }] : [];
      case "mention":
        return text(node.attrs?.text ?? "@someone");
      case "emoji":
        return text(node.attrs?.text ?? node.attrs?.shortName);
      case "date":
        return text(Number.isFinite(Number(node.attrs?.timestamp)) ? new Date(Number(node.attrs!.timestamp)).toISOString().slice(0, 10) : "");
      case "status":
        return text(node.attrs?.text);
      case "taskList":
      case "decisionList":
        return [{ type: "bulletList", content: children() }];
      case "taskItem":
      case "decisionItem":
        return [{ type: "listItem", content: [{ type: "paragraph", content: children() }] }];
      case "media":
      case "mediaSingle":
      case "mediaGroup":
      case "mediaInline":
        return [];
      default:
        // panel, expand, nestedExpand, layouts and whatever comes next: their content, unwrapped.
        return children();
    }
  };
  const [root] = clean({ ...doc, type: "doc" }, 0);
  try {
    const { result } = convert({ ...root!, version: 1 });
    return result.slice(0, BODY_MAX_CHARS);
  } catch {
    return null;
  }
}

function cleanMarks(marks: AdfNode["marks"]): AdfNode["marks"] {
  if (!Array.isArray(marks)) return undefined;
  const out = [];
  for (const m of marks) {
    if (!m || typeof m !== "object") continue;
    if (m.type === "link") {
      const href = typeof m.attrs?.href === "string" ? m.attrs.href : "";
      // Only web and mail links; a space or parenthesis would end the Markdown link early.
      if (/^(https?:|mailto:)/i.test(href) && !/[\s()<>]/.test(href)) out.push({ type: "link", attrs: { href } });
    } else if (["code", "em", "strike", "strong"].includes(m.type)) out.push({ type: m.type });
  }
  return out;
}

/** Cloud's accountId, Data Center's user key (stable across renames) or name. */
const person = (site: string, u: JiraUser | null | undefined): SourcePerson | null => {
  const id = u?.accountId || u?.key || u?.name;
  return id ? { id: `jira:${site}:user:${id}`, name: u!.displayName || u!.name || "Jira user", email: u!.emailAddress || null } : null;
};
/** A body as Markdown: ADF from Cloud, wiki markup from Data Center. */
const markdown = (body: AdfNode | string | null | undefined) => (typeof body === "string" ? wikiToMarkdown(body) : adfToMarkdown(body));
const issueNumber = (key: string) => Number(key.slice(key.lastIndexOf("-") + 1)) || null;
/** Jira's label colours are not in its API; imported labels get one colour. */
const LABEL_COLOR = "#6b778c";

export function fromJira(site: string, issue: JiraIssue, mapping: SourceMapping = {}): SourceIssue {
  const f = issue.fields;
  const id = (kind: string, value: string) => `jira:${site}:${kind}:${value}`;
  const status = jiraStatus(issue, mapping);
  const labels: SourceLabel[] = [
    ...(f.labels ?? []).map((name) => ({ id: id("label", name), name: name.slice(0, 100), color: LABEL_COLOR })),
    ...(f.components ?? []).map((c) => ({ id: id("component", c.id), name: c.name.slice(0, 100), color: LABEL_COLOR })),
  ];
  const ended = f.resolutiondate ?? f.statuscategorychangedate ?? f.updated;
  return {
    id: id("issue", issue.id),
    number: issueNumber(issue.key),
    key: issue.key,
    title: (f.summary || issue.key).slice(0, 500),
    body: markdown(f.description),
    status,
    priority: jiraPriority(f.priority?.name, mapping),
    sourceStatus: f.status.name,
    sourcePriority: f.priority?.name ?? "",
    estimate: null,
    dueDate: f.duedate && /^\d{4}-\d{2}-\d{2}$/.test(f.duedate) ? f.duedate : null,
    createdAt: f.created,
    updatedAt: f.updated,
    startedAt: status === "doing" ? (f.statuscategorychangedate ?? null) : null,
    completedAt: status === "done" ? ended : null,
    canceledAt: status === "canceled" ? ended : null,
    parentId: f.parent ? id("issue", f.parent.id) : null,
    creator: person(site, f.reporter ?? f.creator),
    assignee: person(site, f.assignee),
    labels,
    comments: (f.comment?.comments ?? []).map((c) => ({ id: id("comment", c.id), body: markdown(c.body) ?? "", createdAt: c.created, retractedAt: null, parentId: null, author: person(site, c.author) })),
    // Jira serves an attachment's content from the site itself: a file, fetched with the credentials; a content url elsewhere stays a link.
    attachments: (f.attachment ?? []).map((a) => ({
      id: id("attachment", a.id),
      title: a.filename.slice(0, 500),
      url: a.content,
      createdAt: a.created,
      author: person(site, a.author),
      ...(URL.canParse(a.content) && new URL(a.content).host === site ? { file: { size: typeof a.size === "number" ? a.size : null } } : {}),
    })),
    relations: (f.issuelinks ?? [])
      .filter((l) => l.outwardIssue)
      .map((l) => ({ id: id("link", l.id), type: relationType(l.type.name), targetId: id("issue", l.outwardIssue!.id), createdAt: f.created })),
  };
}

/** A Jira project as the pipeline reads a source. */
export function jiraReader(api: JiraApi, projectKey: string, mapping: SourceMapping = {}): SourceReader {
  const host = new URL(api.site).host;
  const dc = dcRun();
  return {
    source: "jira",
    async readPage(cursor: string | null, notice?: ReadNotice) {
      const page = await readJiraPage(api, projectKey, cursor, dc, notice);
      return { issues: page.issues.map((i) => fromJira(host, i, mapping)), next: page.next };
    },
    fetchFile: api.fetchFile,
  };
}
