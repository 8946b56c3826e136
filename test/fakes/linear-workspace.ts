/**
 * The workspace the fake Linear (./linear.ts) serves: its rows, typed as the fake's GraphQL
 * schema names them, and a realistic one generated from a seed.
 */

export interface FakeUser { id: string; name: string; displayName: string; email: string; active: boolean }
export interface FakeLabel { id: string; name: string; color: string; createdAt: string; archivedAt: string | null }
export interface FakeState { id: string; name: string; type: "triage" | "backlog" | "unstarted" | "started" | "completed" | "canceled"; color: string }
export interface FakeComment { id: string; body: string; createdAt: string; updatedAt: string; archivedAt: string | null; parentId: string | null; userId: string | null }
export interface FakeAttachment { id: string; title: string; subtitle: string | null; url: string; createdAt: string; updatedAt: string; creatorId: string | null }
export interface FakeRelation { id: string; type: "blocks" | "related" | "duplicate"; issueId: string; relatedIssueId: string; createdAt: string }
export interface FakeIssue {
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
  stateId: string;
  parentId: string | null;
  creatorId: string | null;
  assigneeId: string | null;
  labelIds: string[];
  comments: FakeComment[];
  attachments: FakeAttachment[];
}
export interface FakeWorkspace {
  team: { id: string; key: string; name: string };
  otherTeam: { id: string; key: string; name: string };
  users: FakeUser[];
  labels: FakeLabel[];
  states: FakeState[];
  issues: FakeIssue[];
  relations: FakeRelation[];
}


/** A small deterministic generator (mulberry32), so a seed gives the same workspace every time. */
function random(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, int: (n: number) => Math.floor(next() * n), pick: <T>(xs: readonly T[]) => xs[Math.floor(next() * xs.length)]! };
}


export const uuid = (kind: number, n: number) => `${kind.toString(16).padStart(8, "0")}-0000-4000-8000-${n.toString(16).padStart(12, "0")}`;

/**
 * A realistic workspace: `issues` issues in team ENG (numbers with gaps, as deleted issues
 * leave), sub-issues up to five levels deep, threaded comments (one issue has a thread longer
 * than a nested page), every relation type, archived issues, comments and labels, link
 * attachments, and every workflow state type.
 */
export function generateWorkspace(options: { issues?: number; seed?: number } = {}): FakeWorkspace {
  const count = options.issues ?? 2000;
  const r = random(options.seed ?? 16);
  const base = Date.parse("2025-01-06T09:00:00.000Z");
  const at = (ms: number) => new Date(ms).toISOString();
  const users: FakeUser[] = Array.from({ length: 12 }, (_, i) => ({
    id: uuid(1, i + 1),
    name: `Person ${i + 1}`,
    displayName: `p${i + 1}`,
    email: `Person.${i + 1}@Linear-Customer.example`,
    active: i !== 11,
  }));
  const labelNames = ["Bug", "Feature", "Improvement", "Design", "Infra", "Docs", "Security", "Old"];
  const labels: FakeLabel[] = labelNames.map((name, i) => ({
    id: uuid(2, i + 1),
    name,
    color: `#${(0x4e5ba6 + i * 0x151515).toString(16).slice(-6)}`,
    createdAt: at(base - 86_400_000 * (10 - i)),
    archivedAt: name === "Old" ? at(base) : null,
  }));
  const states: FakeState[] = [
    { id: uuid(3, 1), name: "Backlog", type: "backlog", color: "#bec2c8" },
    { id: uuid(3, 2), name: "Todo", type: "unstarted", color: "#e2e2e2" },
    { id: uuid(3, 3), name: "In Progress", type: "started", color: "#f2c94c" },
    { id: uuid(3, 4), name: "In Review", type: "started", color: "#0f783c" },
    { id: uuid(3, 5), name: "Done", type: "completed", color: "#5e6ad2" },
    { id: uuid(3, 6), name: "Canceled", type: "canceled", color: "#95a2b3" },
  ];
  const issues: FakeIssue[] = [];
  const depth = new Map<string, number>();
  let number = 0;
  let commentN = 0;
  let attachmentN = 0;
  for (let i = 0; i < count; i++) {
    number += r.next() < 0.05 ? 2 : 1;
    const id = uuid(4, i + 1);
    const created = base + i * 3_600_000 + r.int(3_000_000);
    const state = r.pick(states);
    const started = state.type === "started" || state.type === "completed" ? created + 3_600_000 + r.int(86_400_000) : null;
    const completed = state.type === "completed" ? started! + r.int(3 * 86_400_000) + 1000 : null;
    const canceled = state.type === "canceled" ? created + r.int(5 * 86_400_000) + 1000 : null;
    const updated = Math.max(created, started ?? 0, completed ?? 0, canceled ?? 0) + r.int(86_400_000);
    let parentId: string | null = null;
    if (i > 0 && r.next() < 0.3) {
      const candidate = issues[i - 1 - r.int(Math.min(i, 40))]!;
      if ((depth.get(candidate.id) ?? 0) < 4) parentId = candidate.id;
    }
    depth.set(id, parentId ? depth.get(parentId)! + 1 : 0);
    const comments: FakeComment[] = [];
    const thread = i === 7 ? 60 : r.int(5);
    for (let c = 0; c < thread; c++) {
      const cAt = created + (c + 1) * 600_000;
      const parent = comments.length > 0 && r.next() < 0.5 ? r.pick(comments) : null;
      comments.push({
        id: uuid(5, ++commentN),
        body: `Comment ${c + 1} on ENG-${number}: ${r.next() < 0.2 ? "see **this** & <that>" : "looks good"}`,
        createdAt: at(cAt),
        updatedAt: at(cAt + r.int(60_000)),
        archivedAt: r.next() < 0.03 ? at(cAt + 1000) : null,
        parentId: parent?.id ?? null,
        userId: r.next() < 0.05 ? null : r.pick(users).id,
      });
    }
    const attachments: FakeAttachment[] = Array.from({ length: r.int(3) }, (_, a) => ({
      id: uuid(6, ++attachmentN),
      title: `Link ${a + 1}`,
      subtitle: a === 0 ? "GitHub" : null,
      url: `https://github.example/acme/app/pull/${attachmentN}`,
      createdAt: at(created + 120_000 * (a + 1)),
      updatedAt: at(created + 120_000 * (a + 1)),
      creatorId: r.pick(users).id,
    }));
    const labelIds = [...new Set(Array.from({ length: r.int(3) }, () => r.pick(labels).id))];
    issues.push({
      id,
      number,
      title: `Issue ${number}: ${r.pick(["fix", "add", "remove", "rework"])} the ${r.pick(["login", "billing", "queue", "export", "search"])} flow`,
      description: r.next() < 0.8 ? `## Context\n\nIssue ${number} body with *markdown*.\n\n- one\n- two` : null,
      priority: r.int(5),
      estimate: r.next() < 0.6 ? r.pick([1, 2, 3, 5, 8]) : null,
      dueDate: r.next() < 0.2 ? at(created + r.int(60) * 86_400_000).slice(0, 10) : null,
      createdAt: at(created),
      updatedAt: at(updated),
      startedAt: started ? at(started) : null,
      completedAt: completed ? at(completed) : null,
      canceledAt: canceled ? at(canceled) : null,
      archivedAt: (state.type === "completed" || state.type === "canceled") && r.next() < 0.1 ? at(updated + 1000) : null,
      stateId: state.id,
      parentId,
      creatorId: r.pick(users).id,
      assigneeId: r.next() < 0.7 ? r.pick(users).id : null,
      labelIds,
      comments,
      attachments,
    });
  }
  const relations: FakeRelation[] = [];
  const seen = new Set<string>();
  const types = ["blocks", "related", "duplicate"] as const;
  for (let n = 0; n < Math.floor(count / 4); n++) {
    const a = r.int(count);
    const b = r.int(count);
    const type = types[n % 3]!;
    const edge = `${Math.min(a, b)}:${Math.max(a, b)}`;
    if (a === b || seen.has(edge)) continue;
    seen.add(edge);
    // A blocks edge always runs from the older issue to the newer, so the generated graph has no cycle.
    const [from, to] = type === "blocks" && a > b ? [b, a] : [a, b];
    relations.push({ id: uuid(7, n + 1), type, issueId: issues[from]!.id, relatedIssueId: issues[to]!.id, createdAt: issues[Math.max(from, to)]!.createdAt });
  }
  return {
    team: { id: uuid(8, 1), key: "ENG", name: "Engineering" },
    otherTeam: { id: uuid(8, 2), key: "OPS", name: "Operations" },
    users,
    labels,
    states,
    issues,
    relations,
  };
}

/** The issue's Retasc status, as the import maps Linear's state types: for the tests' item-by-item checks. */
export const stateTypeOf = (w: FakeWorkspace, issue: FakeIssue) => w.states.find((s) => s.id === issue.stateId)!.type;
