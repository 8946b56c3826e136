import type { LinearApi } from "./client.ts";

/**
 * The team's issues as Linear pages them, each page whole: its issues with their labels,
 * comments, link attachments and outgoing relations. A nested connection longer than its
 * nested page is read to the end with follow-up queries, so nothing is cut off.
 */
export interface LinearPerson {
  id: string;
  name: string;
  email: string | null;
}
export interface LinearComment {
  id: string;
  body: string;
  createdAt: string;
  archivedAt: string | null;
  parentId: string | null;
  user: LinearPerson | null;
}
export interface LinearAttachment {
  id: string;
  title: string;
  url: string;
  createdAt: string;
  creator: LinearPerson | null;
}
export interface LinearRelation {
  id: string;
  type: string;
  relatedIssueId: string;
  createdAt: string;
}
export interface LinearIssue {
  id: string;
  number: number;
  title: string;
  description: string | null;
  priority: number;
  estimate: number | null;
  dueDate: string | null;
  createdAt: string;
  updatedAt: string;
  startedAt: string | null;
  completedAt: string | null;
  canceledAt: string | null;
  archivedAt: string | null;
  stateType: string;
  /** The workflow state's own name (In Review), which the owner's mapping names. */
  stateName: string;
  parentId: string | null;
  creator: LinearPerson | null;
  assignee: LinearPerson | null;
  labels: { id: string; name: string; color: string }[];
  comments: LinearComment[];
  attachments: LinearAttachment[];
  relations: LinearRelation[];
}
export interface LinearPage {
  issues: LinearIssue[];
  endCursor: string | null;
  hasNextPage: boolean;
}

/** Issues per page: Linear's complexity budget allows this many with nested pages of NESTED. */
export const ISSUES_PER_PAGE = 50;
const NESTED = 50;
const FOLLOW_UP = 250;

const person = `fragment RetascPerson on User { id name email }`;
const nested = {
  labels: `labels(first: $nested, after: $nestedAfter, includeArchived: true) { nodes { id name color } pageInfo { hasNextPage endCursor } }`,
  comments: `comments(first: $nested, after: $nestedAfter, includeArchived: true) { nodes { id body createdAt archivedAt parent { id } user { ...RetascPerson } } pageInfo { hasNextPage endCursor } }`,
  attachments: `attachments(first: $nested, after: $nestedAfter) { nodes { id title url createdAt creator { ...RetascPerson } } pageInfo { hasNextPage endCursor } }`,
  relations: `relations(first: $nested, after: $nestedAfter) { nodes { id type createdAt relatedIssue { id } } pageInfo { hasNextPage endCursor } }`,
} as const;
type Nested = keyof typeof nested;

const issuesQuery = `query RetascImportIssues($teamId: String!, $first: Int!, $after: String, $nested: Int!, $nestedAfter: String) {
  team(id: $teamId) {
    issues(first: $first, after: $after, includeArchived: true, orderBy: createdAt) {
      nodes {
        id number title description priority estimate dueDate createdAt updatedAt startedAt completedAt canceledAt archivedAt
        state { type name } parent { id } creator { ...RetascPerson } assignee { ...RetascPerson }
        ${Object.values(nested).join("\n        ")}
      }
      pageInfo { hasNextPage endCursor }
    }
  }
}
${person}`;

const followUp = (kind: Nested) => `query RetascImportMore($id: String!, $nested: Int!, $nestedAfter: String) {
  issue(id: $id) { ${nested[kind]} }
}
${person}`;

interface Connection<T> {
  nodes: T[];
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
}
type RawPerson = { id: string; name: string; email?: string | null } | null;
type RawIssue = Omit<LinearIssue, "stateType" | "stateName" | "parentId" | "labels" | "comments" | "attachments" | "relations" | "creator" | "assignee"> & {
  state: { type: string; name: string };
  parent: { id: string } | null;
  creator: RawPerson;
  assignee: RawPerson;
  labels: Connection<LinearIssue["labels"][number]>;
  comments: Connection<Omit<LinearComment, "parentId" | "user"> & { parent: { id: string } | null; user: RawPerson }>;
  attachments: Connection<Omit<LinearAttachment, "creator"> & { creator: RawPerson }>;
  relations: Connection<Omit<LinearRelation, "relatedIssueId"> & { relatedIssue: { id: string } }>;
};

const toPerson = (p: RawPerson): LinearPerson | null => (p ? { id: p.id, name: p.name, email: p.email ?? null } : null);

/** One page of the team's issues after `cursor` (null: the first). */
export async function fetchIssuePage(api: LinearApi, teamId: string, cursor: string | null): Promise<LinearPage> {
  const data = await api.request<{ team: { issues: Connection<RawIssue> } }>(issuesQuery, {
    teamId,
    first: ISSUES_PER_PAGE,
    after: cursor,
    nested: NESTED,
    nestedAfter: null,
  });
  const page = data.team.issues;
  const issues: LinearIssue[] = [];
  for (const raw of page.nodes) {
    const all = async <K extends Nested>(kind: K): Promise<RawIssue[K]["nodes"]> => {
      const nodes = [...raw[kind].nodes] as RawIssue[K]["nodes"];
      let info = raw[kind].pageInfo;
      while (info.hasNextPage) {
        const more = await api.request<{ issue: Record<K, RawIssue[K]> }>(followUp(kind), { id: raw.id, nested: FOLLOW_UP, nestedAfter: info.endCursor });
        nodes.push(...(more.issue[kind].nodes as never[]));
        info = more.issue[kind].pageInfo;
      }
      return nodes;
    };
    issues.push({
      id: raw.id,
      number: raw.number,
      title: raw.title,
      description: raw.description,
      priority: raw.priority,
      estimate: raw.estimate,
      dueDate: raw.dueDate,
      createdAt: raw.createdAt,
      updatedAt: raw.updatedAt,
      startedAt: raw.startedAt,
      completedAt: raw.completedAt,
      canceledAt: raw.canceledAt,
      archivedAt: raw.archivedAt,
      stateType: raw.state.type,
      stateName: raw.state.name,
      parentId: raw.parent?.id ?? null,
      creator: toPerson(raw.creator),
      assignee: toPerson(raw.assignee),
      labels: await all("labels"),
      comments: (await all("comments")).map((c) => ({ id: c.id, body: c.body, createdAt: c.createdAt, archivedAt: c.archivedAt, parentId: c.parent?.id ?? null, user: toPerson(c.user) })),
      attachments: (await all("attachments")).map((a) => ({ id: a.id, title: a.title, url: a.url, createdAt: a.createdAt, creator: toPerson(a.creator) })),
      relations: (await all("relations")).map((r) => ({ id: r.id, type: r.type, createdAt: r.createdAt, relatedIssueId: r.relatedIssue.id })),
    });
  }
  return { issues, endCursor: page.pageInfo.endCursor, hasNextPage: page.pageInfo.hasNextPage };
}

const teamsQuery = `query RetascImportTeams($after: String) {
  teams(first: 100, after: $after) { nodes { id key name issueCount(includeArchived: true) } pageInfo { hasNextPage endCursor } }
}`;

export interface LinearTeam {
  id: string;
  key: string;
  name: string;
  issueCount: number;
}

/** Every team the key can see, with its issue count (archived ones included, as the import takes them). */
export async function fetchTeams(api: LinearApi): Promise<LinearTeam[]> {
  const teams: LinearTeam[] = [];
  let after: string | null = null;
  for (;;) {
    const data: { teams: Connection<LinearTeam> } = await api.request(teamsQuery, { after });
    teams.push(...data.teams.nodes);
    if (!data.teams.pageInfo.hasNextPage) return teams;
    after = data.teams.pageInfo.endCursor;
  }
}
