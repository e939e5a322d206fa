import { Html, html } from "./html.js";

/**
 * Live pages updated by what changed, not re-rendered whole. A page's live part is described as
 * parts: blocks (replaced whole when they change) and lists of keyed rows. Each stream keeps a
 * snapshot of what it last sent (ids and fingerprints, not the markup) and answers a change with
 * htmx out-of-band swaps: removed, changed and moved rows deleted, then changed, moved and added
 * rows inserted after their predecessor; blocks replaced. Fingerprints are the data a
 * part shows, not its markup, because the markup holds times since ("for 3 s") that the browser
 * counts on by itself: a row whose data did not change is not sent again.
 */

export type LiveRow = { id: string; fingerprint: string; render(): Html };

export type LivePart = { kind: "block"; id: string; fingerprint: string; render(): Html } | { kind: "list"; id: string; rows: LiveRow[] };

/** What a stream last sent: each block's fingerprint, each list's rows in order. */
export type LiveSnapshot = { blocks: Map<string, string>; lists: Map<string, { id: string; fingerprint: string }[]> };

export function snapshotOf(parts: LivePart[]): LiveSnapshot {
  const snapshot: LiveSnapshot = { blocks: new Map(), lists: new Map() };
  for (const part of parts) {
    if (part.kind === "block") snapshot.blocks.set(part.id, part.fingerprint);
    else
      snapshot.lists.set(
        part.id,
        part.rows.map(({ id, fingerprint }) => ({ id, fingerprint })),
      );
  }
  return snapshot;
}

/** `element` (markup starting with its own tag, carrying its id) as an out-of-band swap of `how`. */
export function outOfBand(element: Html, how = "true"): Html {
  return new Html(element.text.replace(/^(\s*<[a-zA-Z][a-zA-Z0-9-]*)/, `$1 hx-swap-oob="${how}"`));
}

/**
 * The out-of-band swaps that turn what `previous` describes into `parts`; null when nothing
 * changed. A part the snapshot does not know (the page's structure changed) makes the answer
 * `full()`, the whole live part, as does a missing snapshot.
 */
export function patchOf(previous: LiveSnapshot | null, parts: LivePart[], full: () => Html): Html | null {
  if (previous === null) return outOfBand(full());
  const swaps: Html[] = [];
  for (const part of parts) {
    if (part.kind === "block") {
      const before = previous.blocks.get(part.id);
      if (before === undefined) return outOfBand(full());
      if (before !== part.fingerprint) swaps.push(outOfBand(part.render()));
      continue;
    }
    const before = previous.lists.get(part.id);
    if (before === undefined) return outOfBand(full());
    swaps.push(...listPatch(part.id, before, part.rows));
  }
  return swaps.length === 0 ? null : html`${swaps}`;
}

function listPatch(listId: string, before: { id: string; fingerprint: string }[], rows: LiveRow[]): Html[] {
  const indexBefore = new Map(before.map((row, i) => [row.id, i]));
  // Rows unchanged and in the same order among themselves stay; every other row is (re)inserted
  // after its predecessor: a changed row costs the same whether it moved or not.
  const unchanged = rows.flatMap((row) => {
    const index = indexBefore.get(row.id);
    return index !== undefined && before[index]!.fingerprint === row.fingerprint ? [{ id: row.id, index }] : [];
  });
  const staying = new Set(inOrder(unchanged));
  const swaps: Html[] = [];
  for (const row of before) if (!staying.has(row.id)) swaps.push(html`<div id="${row.id}" hx-swap-oob="delete"></div>`);
  let previousId: string | null = null;
  for (const row of rows) {
    if (!staying.has(row.id)) {
      const where = previousId === null ? `afterbegin:#${listId}` : `afterend:#${previousId}`;
      swaps.push(html`<div hx-swap-oob="${where}">${row.render()}</div>`);
    }
    previousId = row.id;
  }
  return swaps;
}

/**
 * The rows that keep their place: the longest run of `rows` whose earlier indexes increase
 * (patience sorting, O(n log n)); the others moved. Removals and insertions alone move nothing.
 */
function inOrder(rows: { id: string; index: number }[]): string[] {
  const tails: number[] = []; // tails[k]: position in `rows` of the smallest last index of an increasing run of length k + 1
  const parent = new Array<number>(rows.length).fill(-1);
  rows.forEach((row, i) => {
    let low = 0;
    let high = tails.length;
    while (low < high) {
      const mid = (low + high) >> 1;
      if (rows[tails[mid]!]!.index < row.index) low = mid + 1;
      else high = mid;
    }
    if (low > 0) parent[i] = tails[low - 1]!;
    tails[low] = i;
  });
  const kept: string[] = [];
  for (let i = tails.at(-1) ?? -1; i >= 0; i = parent[i]!) kept.push(rows[i]!.id);
  return kept;
}
