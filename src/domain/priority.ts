/** Named priorities, as Trunk defines them. Lower values go first. */
export const PRIORITY_NAMES = { urgent: 0, high: 10, medium: 100, low: 200 } as const;
export type PriorityName = keyof typeof PRIORITY_NAMES;
export const DEFAULT_PRIORITY: PriorityName = "medium";
export const MAX_PRIORITY_VALUE = 255;

export type Priority = {
  value: number;
  /** The level's name, or the number itself for a value between named levels. */
  name: string;
  /** Set when the client gave no priority and the default was applied. */
  usedDefaultName: PriorityName | null;
};

/** Resolves a requested priority (name, number, or nothing) to its value and name. */
export function resolvePriority(requested: PriorityName | number | null | undefined): Priority {
  if (requested === undefined || requested === null) {
    return { value: PRIORITY_NAMES[DEFAULT_PRIORITY], name: DEFAULT_PRIORITY, usedDefaultName: DEFAULT_PRIORITY };
  }
  if (typeof requested === "string") {
    return { value: PRIORITY_NAMES[requested], name: requested, usedDefaultName: null };
  }
  const named = (Object.keys(PRIORITY_NAMES) as PriorityName[]).find((name) => PRIORITY_NAMES[name] === requested);
  return { value: requested, name: named ?? String(requested), usedDefaultName: null };
}

/** Only urgent skips the line: it interrupts lower-priority testing instead of waiting. */
export function skipsTheLine(priorityValue: number): boolean {
  return priorityValue === PRIORITY_NAMES.urgent;
}
