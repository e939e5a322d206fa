/**
 * Text and JSON columns read back into the domain's types, once, in the store. A value that is
 * not what the column promises is corruption (or a migration that forgot a case): it fails
 * loudly here instead of travelling through the app as a wrong union member.
 */

export function oneOf<T extends string>(allowed: readonly T[], value: string, column: string): T {
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw new Error(`store: ${column} holds ${JSON.stringify(value)}, not one of ${allowed.join(", ")}`);
}

export function oneOfOrNull<T extends string>(allowed: readonly T[], value: string | null, column: string): T | null {
  return value === null ? null : oneOf(allowed, value, column);
}

export function jsonNumbers(text: string, column: string): number[] {
  const value: unknown = JSON.parse(text);
  if (Array.isArray(value) && value.every((n) => typeof n === "number")) return value;
  throw new Error(`store: ${column} is not a JSON list of numbers`);
}

export function jsonStrings(text: string, column: string): string[] {
  const value: unknown = JSON.parse(text);
  if (Array.isArray(value) && value.every((s) => typeof s === "string")) return value;
  throw new Error(`store: ${column} is not a JSON list of strings`);
}

export function jsonRecordOf<T extends string>(allowed: readonly T[], text: string, column: string): Record<string, T> {
  const value: unknown = JSON.parse(text);
  if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    for (const [key, item] of Object.entries(value)) oneOf(allowed, String(item), `${column}.${key}`);
    return value as Record<string, T>;
  }
  throw new Error(`store: ${column} is not a JSON object`);
}

/**
 * A row read through plain SQL (sql.ts) in the shape Prisma reads it in: `booleans` as booleans
 * (SQLite answers 0 or 1), `dates` as Dates (SQLite keeps Prisma's ISO text; null stays null).
 * Integer and BigInt columns are left as numbers (or PostgreSQL's int8 text): readers wrap them
 * in Number() already.
 */
export function prismaShaped<T>(row: Record<string, unknown>, booleans: readonly string[], dates: readonly string[]): T {
  for (const column of booleans) row[column] = row[column] === true || row[column] === 1 || row[column] === "1";
  for (const column of dates) {
    const value = row[column];
    if (value !== null && value !== undefined && !(value instanceof Date)) row[column] = new Date(value as string | number);
  }
  return row as T;
}
