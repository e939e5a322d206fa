import { invalidArgument } from "./errors.js";

export type PageQuery = { page_size: number; page_token: string };

export type PageInfo = {
  total_rows: number;
  total_pages: number;
  next_page_token: string;
  prev_page_token: string;
  last_page_token: string;
  page_index: number;
};

/**
 * Page tokens are opaque to clients: base64url of a cursor. Pages are cut by key (keyset), not by
 * offset, so rows arriving while a client pages never repeat or skip a row it has not seen:
 * "next" continues after the last key shown, "prev" ends before the first, "last" is the end.
 */
type Cursor = { p: number; after?: number; before?: number; last?: true; q?: string };

function encodeCursor(cursor: Cursor): string {
  return Buffer.from(JSON.stringify(cursor)).toString("base64url");
}

function decodeCursor(token: string): Cursor | null {
  if (token === "") return null;
  try {
    const c = JSON.parse(Buffer.from(token, "base64url").toString("utf8")) as Record<string, unknown>;
    const int = (v: unknown) => Number.isSafeInteger(v) && (v as number) >= 0;
    const kinds = [c.after !== undefined, c.before !== undefined, c.last !== undefined].filter(Boolean).length;
    if (int(c.p) && kinds === 1 && (c.after === undefined || int(c.after)) && (c.before === undefined || int(c.before)) && (c.last === undefined || c.last === true) && (c.q === undefined || typeof c.q === "string")) {
      return c as Cursor;
    }
  } catch {
    // fall through
  }
  throw invalidArgument("page_query.page_token", "is not a page token this server issued");
}

/**
 * Cuts one page out of keys sorted ascending. `scope` names what the keys are (a sorted list's
 * places, a filter): its tokens carry it, and a token of another scope is refused.
 */
export function paginate(keys: readonly number[], query: PageQuery, scope?: string): { page: number[]; info: PageInfo } {
  const cursor = decodeCursor(query.page_token);
  if (cursor && cursor.q !== scope) throw invalidArgument("page_query.page_token", "is a page token of another list (its sort or filters differ): start again without a token");
  const size = query.page_size;
  const totalPages = Math.ceil(keys.length / size);
  const firstAtOrAbove = (k: number) => {
    let lo = 0;
    let hi = keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (keys[mid]! < k) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  let start = 0;
  let index = 0;
  if (cursor?.last) {
    start = Math.max(0, (totalPages - 1) * size);
    index = Math.max(0, totalPages - 1);
  } else if (cursor?.after !== undefined) {
    start = firstAtOrAbove(cursor.after + 1);
    index = cursor.p;
  } else if (cursor?.before !== undefined) {
    const end = firstAtOrAbove(cursor.before);
    start = Math.max(0, end - size);
    index = start === 0 ? 0 : cursor.p;
  }
  const page = keys.slice(start, start + size);
  const info: PageInfo = {
    total_rows: keys.length,
    total_pages: totalPages,
    next_page_token: page.length > 0 && start + size < keys.length ? encodeCursor({ p: index + 1, after: page.at(-1)!, ...(scope ? { q: scope } : {}) }) : "",
    prev_page_token: start > 0 && page.length > 0 ? encodeCursor({ p: Math.max(0, index - 1), before: page[0]!, ...(scope ? { q: scope } : {}) }) : "",
    last_page_token: totalPages > 0 ? encodeCursor({ p: totalPages - 1, last: true, ...(scope ? { q: scope } : {}) }) : "",
    page_index: index,
  };
  return { page, info };
}

export function emptyPage(query: PageQuery): PageInfo {
  return paginate([], query).info;
}

/** Refuses a page token this server did not issue, before anything is read. */
export function checkPageToken(query: PageQuery): void {
  decodeCursor(query.page_token);
}
