/**
 * Every list the server answers is paged (a page says where the next begins with `nextCursor`);
 * a list command reads to the end, one page at a time, so it can print each as it arrives.
 */
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
