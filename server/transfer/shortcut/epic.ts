import { DomainError, invalidInput } from "../../errors.ts";
import type { ReadNotice, SourceMapping, SourceReader } from "../pipeline/stream.ts";
import type { ShortcutApi } from "./client.ts";
import { fetchShortcutWorkspace, SHORTCUT_STORIES_PER_PAGE, type ShortcutEpic, type ShortcutStory, type ShortcutWorkspace } from "./fetch.ts";
import { fromShortcutEpic, fromShortcutStory } from "./normalize.ts";

/**
 * One Shortcut epic as an import target (issue 29): the epic itself, a container, and its stories
 * whatever their team (`/epics/{id}/stories`, which Shortcut answers whole, unpaginated). The
 * epics a token sees come from `/epics/paginated` (`page` from 1, `page_size` up to 250, answered
 * as `{data, next, total}`), the paginated listing Shortcut offers beside the unbounded `/epics`.
 * A run of an epic is named `epic:<id>`, so its runs, kept credential and "last imported" are
 * apart from any team's (a team's id is a UUID).
 */
export const EPIC_SOURCE_PREFIX = "epic:";
export const epicSourceId = (id: number) => `${EPIC_SOURCE_PREFIX}${id}`;

const EPICS_PER_PAGE = 250;

export async function fetchShortcutEpics(api: ShortcutApi): Promise<ShortcutEpic[]> {
  const epics: ShortcutEpic[] = [];
  for (let page: number | null = 1; page !== null; ) {
    const got: { data: ShortcutEpic[]; next?: number | null } = await api.get<{ data: ShortcutEpic[]; next?: number | null }>("/epics/paginated", { page, page_size: EPICS_PER_PAGE });
    epics.push(...got.data);
    // A next page no later than this one would loop forever.
    page = typeof got.next === "number" && got.next > page ? got.next : null;
  }
  return epics;
}

export const epicOf = (e: ShortcutEpic) => ({ id: String(e.id), name: e.name, state: e.state, issueCount: e.stats?.num_stories_total ?? 0 });

const hint = "Listing the epics shows the ones the token sees, archived ones left out (retasc import shortcut with neither --team nor --epic, or run_import without a target).";

/** An archived epic is not imported: asked for by id, URL or name, it is refused, saying how to bring it back. */
const archivedEpic = (e: ShortcutEpic) =>
  new DomainError("CONFLICT", `Shortcut epic ${e.id} (${e.name.slice(0, 60)}) is archived`, `Unarchive it in Shortcut to import it, or name another epic. ${hint}`, { reason: "epic_archived", epicId: String(e.id) });

/**
 * The epic by its id (or its URL, …/epic/<id>/…, or epic:<id>), else by its name when one epic
 * not archived has it. Archived epics are left out of the names; one named all the same, by its
 * id or a name only archived epics have, is refused (CONFLICT, reason epic_archived).
 */
export async function findShortcutEpic(api: ShortcutApi, wanted: string): Promise<ShortcutEpic> {
  const raw = wanted.trim();
  const id = /^(?:epic:)?(\d+)$/.exec(raw)?.[1] ?? /\/epic\/(\d+)(?:[/?#]|$)/.exec(raw)?.[1];
  if (id) {
    let epic: ShortcutEpic | null = null;
    try {
      epic = await api.get<ShortcutEpic>(`/epics/${Number(id)}`);
    } catch (error) {
      if (!(error instanceof DomainError && error.code === "NOT_FOUND")) throw error;
      // A name made of digits is still a name.
    }
    if (epic?.archived) throw archivedEpic(epic);
    if (epic) return epic;
  }
  const name = raw.toLowerCase();
  const all = (await fetchShortcutEpics(api)).filter((e) => e.name.trim().toLowerCase() === name);
  const named = all.filter((e) => !e.archived);
  if (named.length > 1) throw invalidInput(`${named.length} Shortcut epics are named ${raw.slice(0, 60)}`, `Name the epic by its id: ${named.map((e) => e.id).join(", ")}.`);
  if (!named[0] && all[0]) throw archivedEpic(all[0]);
  if (!named[0]) throw new DomainError("NOT_FOUND", `the token sees no Shortcut epic ${raw.slice(0, 60)}`, hint);
  const epic = await api.get<ShortcutEpic>(`/epics/${Number(named[0].id)}`);
  // Archived since it was listed.
  if (epic.archived) throw archivedEpic(epic);
  return epic;
}

/**
 * The epic as the pipeline reads it: the epic on the first page, then its stories in pages,
 * each read whole (`/stories/{id}`), in id order so a cursor (an offset) names the same place in
 * a later read. The list of the epic's stories is read once a reader.
 */
export function shortcutEpicReader(api: ShortcutApi, epic: ShortcutEpic, mapping: SourceMapping = {}): SourceReader {
  let workspace: ShortcutWorkspace | null = null;
  let ids: number[] | null = null;
  return {
    source: "shortcut",
    async readPage(cursor: string | null, notice?: ReadNotice) {
      workspace ??= await fetchShortcutWorkspace(api, notice);
      ids ??= (await api.get<{ id: number }[]>(`/epics/${epic.id}/stories`, {}, notice)).map((s) => Number(s.id)).sort((a, b) => a - b);
      const offset = Number(cursor ?? 0);
      const stories: ShortcutStory[] = [];
      for (const id of ids.slice(offset, offset + SHORTCUT_STORIES_PER_PAGE)) stories.push(await api.get<ShortcutStory>(`/stories/${id}`, {}, notice));
      const ws = workspace;
      const epics = offset === 0 ? [fromShortcutEpic(ws, epic, api.fileOrigins, mapping)] : [];
      const next = offset + SHORTCUT_STORIES_PER_PAGE < ids.length ? String(offset + SHORTCUT_STORIES_PER_PAGE) : null;
      return { issues: [...epics, ...stories.map((s) => fromShortcutStory(ws, s, api.fileOrigins, mapping))], next };
    },
    fetchFile: api.fetchFile,
  };
}
