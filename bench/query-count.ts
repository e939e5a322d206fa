import pg from "pg";

/**
 * Counts the statements sent to PostgreSQL by this process (every pg client: Prisma's pool,
 * the raw SQL transactions, the advisory-lock connection), grouped by shape: a bench's way to
 * see the store's round trips without touching production code. Applied engine events are
 * counted by their QueueEvent insert (saveDecision writes one per event).
 */
export type QueryCount = { total: number; events: number; shapes: Map<string, number>; stop(): void };

/** A statement's shape: whitespace collapsed, the schema prefix and parameter lists dropped, cut short. */
function shapeOf(text: string): string {
  return text
    .replace(/\s+/g, " ")
    .replaceAll('"public".', "")
    .replace(/\$\d+(, ?\$\d+)*/g, "$…")
    .replace(/ (OFFSET|LIMIT) \$…/g, "")
    .slice(0, 140);
}

export function countQueries(): QueryCount {
  const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = proto.query;
  const count: QueryCount = {
    total: 0,
    events: 0,
    shapes: new Map(),
    stop: () => {
      proto.query = original;
    },
  };
  proto.query = function (this: unknown, ...args: unknown[]) {
    const first = args[0];
    const text = typeof first === "string" ? first : typeof first === "object" && first !== null && "text" in first ? String((first as { text: unknown }).text) : "";
    const shape = shapeOf(text);
    count.total++;
    // Alone, or in saveDecision's one statement on PostgreSQL (WITH … "event" AS (INSERT …)).
    if (/^\s*INSERT INTO "QueueEvent"|AS \(INSERT INTO "QueueEvent"/.test(text.replaceAll('"public".', ""))) count.events++;
    count.shapes.set(shape, (count.shapes.get(shape) ?? 0) + 1);
    return original.apply(this, args);
  };
  return count;
}

/** The most frequent statement shapes, per applied event, as Markdown table rows. */
export function topShapes(count: QueryCount, n = 15): string[] {
  return [...count.shapes.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([shape, times]) => `| ${(times / Math.max(1, count.events)).toFixed(2)} | \`${shape.replaceAll("|", "\\|")}\` |`);
}
