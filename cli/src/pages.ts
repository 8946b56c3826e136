/**
 * Every list the server answers is paged (a page says where the next begins with `nextCursor`);
 * a list command reads to the end, one page at a time, so it can print each as it arrives.
 */
/** A reply of a paged list: its items under their own name, and where the next page begins. */
export type Paged<T> = T & { nextCursor?: string };

export interface Page<T> {
  items: T[];
  nextCursor?: string;
}

/** The pages of a list from the first to the last; `read` fetches the page at a cursor (none: the first). */
export async function* pages<T>(read: (cursor: string | undefined) => Promise<Page<T>>): AsyncGenerator<T[]> {
  let cursor: string | undefined;
  do {
    const page = await read(cursor);
    yield page.items;
    cursor = page.nextCursor;
  } while (cursor);
}
