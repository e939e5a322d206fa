import type { QuarantineSetting, TestStatus } from "../../domain/flaky/detection.js";

/**
 * Columns as the drivers return them, read once into the domain's types. PostgreSQL answers
 * bigint and COUNT as strings, SQLite booleans as 0 and 1; text columns holding a union are
 * checked, so a value the code does not know fails here, not somewhere downstream.
 */

export const integer = (value: unknown): number => Number(value);

export const integerOrNull = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value));

export const boolean = (value: unknown): boolean => Boolean(value);

const TEST_STATUSES = { healthy: true, flaky: true, broken: true } satisfies Record<TestStatus, true>;
const QUARANTINE_SETTINGS = { auto: true, always: true, never: true } satisfies Record<QuarantineSetting, true>;

function oneOf<T extends string>(known: Record<T, true>, column: string, value: unknown): T {
  if (typeof value === "string" && Object.hasOwn(known, value)) return value as T;
  throw new Error(`${column} holds ${JSON.stringify(value)}, not one of ${Object.keys(known).join(", ")}`);
}

export const testStatus = (value: unknown): TestStatus => oneOf(TEST_STATUSES, "TestCase.status", value);

export const quarantineSetting = (value: unknown): QuarantineSetting => oneOf(QUARANTINE_SETTINGS, "TestCase.quarantineSetting", value);

/** TestCase.codeowners: a JSON array of owners. */
export function owners(text: string): string[] {
  const parsed: unknown = JSON.parse(text);
  if (Array.isArray(parsed) && parsed.every((owner) => typeof owner === "string")) return parsed;
  throw new Error(`TestCase.codeowners holds ${text}, not a list of owners`);
}
