import type { Actor } from "./timeline.js";

/**
 * Merge freezes (docs/freezes.md): while a queue is frozen nothing merges but hotfixes; PRs are
 * still submitted, and tested unless a freeze holds testing too. A freeze is now (until a time,
 * or until someone unfreezes), a one-off window, or a weekly window in an IANA time zone. Pure:
 * the clock is an argument.
 */

export const WEEKDAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"] as const;
export type Weekday = (typeof WEEKDAYS)[number];

/** `HH:MM`, 24-hour, local to the window's time zone. */
export const WALL_TIME = /^([01]\d|2[0-3]):([0-5]\d)$/;

/** An ISO 8601 time with its offset; seconds may be left out (`2026-12-24T18:00Z`). */
export const INSTANT = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d)(:\d\d(\.\d{1,9})?)?(Z|[+-]\d\d:\d\d)$/;

/** Whether `text` is an INSTANT naming a real moment: no 30 February, no hour 24 (JavaScript's parser rolls them over). */
export function isRealInstant(text: string): boolean {
  const m = INSTANT.exec(text);
  if (!m) return false;
  const [year, month, day, hour, minute] = [m[1], m[2], m[3], m[4], m[5]].map(Number) as [number, number, number, number, number];
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  return month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth && hour <= 23 && minute <= 59 && Number.isFinite(Date.parse(text));
}

export type FreezeWindow =
  /** From its creation until `until` (ISO instant), or until someone unfreezes it (null). */
  | { kind: "now"; until: string | null }
  | { kind: "once"; from: string; until: string }
  /**
   * Every listed day, from `from` to `until` local time in `timeZone`; a window whose `until` is
   * not after its `from` runs overnight and ends the next day (`fri` 18:00–08:00 ends Saturday
   * 08:00; 00:00–00:00 is the whole day). Windows that touch or overlap join: one freeze from the first start to the last end.
   */
  | { kind: "weekly"; timeZone: string; days: Weekday[]; from: string; until: string };

export type Freeze = {
  id: string;
  reason: string;
  /** Whether PRs are tested while it holds (they merge once it ends); false: nothing starts but hotfixes. */
  testing: boolean;
  window: FreezeWindow;
  createdAt: string;
  createdBy: Actor;
  /** A weekly freeze ended early (unfreezeQueue) skips its occurrences that began before this instant. */
  skipBefore?: string;
};

/** A queue's freeze at an instant: what holds, until when, and when that next changes. */
export type FreezeStatus = {
  frozen: boolean;
  /** Whether PRs are tested while frozen (every freeze holding allows it). */
  testing: boolean;
  /** Epoch ms the freeze ends (overlapping and adjoining windows joined); null: until someone unfreezes. */
  until: number | null;
  /** Epoch ms a scheduled freeze next starts, or one of those holding ends or another joins them; null: nothing is scheduled. */
  nextChangeAt: number | null;
  /** The freezes holding now, as listed. */
  holding: Freeze[];
};

export const NOT_FROZEN: FreezeStatus = { frozen: false, testing: true, until: null, nextChangeAt: null, holding: [] };

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
/** How far ahead a freeze's end is followed through windows that adjoin it. */
const HORIZON = 15 * DAY;

const formatters = new Map<string, Intl.DateTimeFormat>();

/** Whether `timeZone` is an IANA time zone this runtime knows (`Europe/Berlin`, `UTC`). */
export function isTimeZone(timeZone: string): boolean {
  if (timeZone.length === 0 || timeZone.length > 64) return false;
  try {
    formatterOf(timeZone);
    return true;
  } catch {
    return false;
  }
}

function formatterOf(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", { timeZone, hourCycle: "h23", year: "numeric", month: "numeric", day: "numeric", hour: "numeric", minute: "numeric", second: "numeric" });
    formatters.set(timeZone, f);
  }
  return f;
}

/** The zone's offset from UTC at an instant, in ms (local wall clock minus UTC). */
export function offsetAt(instant: number, timeZone: string): number {
  const parts: Record<string, number> = {};
  for (const p of formatterOf(timeZone).formatToParts(new Date(instant))) if (p.type !== "literal") parts[p.type] = Number(p.value);
  const wall = Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!, parts.second!);
  return wall - Math.floor(instant / 1000) * 1000;
}

/**
 * The instant a wall-clock time (given as the epoch ms it would be in UTC) happens in the zone.
 * A time the zone skips (a spring-forward gap) happens as late as the gap: 02:30 on a day that
 * jumps from 02:00 to 03:00 is 03:30; a time it repeats (fall back) is the first of the two.
 */
export function instantOfWall(wall: number, timeZone: string): number {
  // The zone's offsets 14 hours either side (the widest offset from UTC): the instant is one of
  // the two (a zone changes its offset at most once in that span).
  const before = wall - offsetAt(wall - 14 * 60 * MINUTE, timeZone);
  const after = wall - offsetAt(wall + 14 * 60 * MINUTE, timeZone);
  const ok = [before, after].filter((t) => t + offsetAt(t, timeZone) === wall);
  // None agrees in a gap: the offset before it places the time after the gap.
  return ok.length > 0 ? Math.min(...ok) : before;
}

const minutesOf = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

/** Monday 0 … Sunday 6 of a UTC-midnight day number. */
const weekdayOf = (dayStart: number) => (new Date(dayStart).getUTCDay() + 6) % 7;

/** The freeze's intervals [start, end) that overlap [from, to), in order. */
export function intervalsOf(freeze: Freeze, from: number, to: number): [number, number][] {
  const w = freeze.window;
  if (w.kind === "now") {
    const start = Date.parse(freeze.createdAt);
    const end = w.until === null ? Number.POSITIVE_INFINITY : Date.parse(w.until);
    return start < to && end > from && start < end ? [[start, end]] : [];
  }
  if (w.kind === "once") {
    const start = Date.parse(w.from);
    const end = Date.parse(w.until);
    return start < to && end > from && start < end ? [[start, end]] : [];
  }
  const skipBefore = freeze.skipBefore ? Date.parse(freeze.skipBefore) : Number.NEGATIVE_INFINITY;
  const days = new Set(w.days.map((d) => WEEKDAYS.indexOf(d)));
  const startMinute = minutesOf(w.from);
  const endMinute = minutesOf(w.until);
  const overnight = endMinute <= startMinute;
  const out: [number, number][] = [];
  // Local days from the one before `from` (an overnight window reaches into it) to the one after `to`.
  const firstDay = Math.floor((from + offsetAt(from, w.timeZone)) / DAY) * DAY - DAY;
  const lastDay = Math.floor((to + offsetAt(to, w.timeZone)) / DAY) * DAY + DAY;
  for (let day = firstDay; day <= lastDay; day += DAY) {
    if (!days.has(weekdayOf(day))) continue;
    const start = instantOfWall(day + startMinute * MINUTE, w.timeZone);
    const end = instantOfWall(day + (overnight ? DAY : 0) + endMinute * MINUTE, w.timeZone);
    if (start < skipBefore || !(start < to && end > from && start < end)) continue;
    out.push([start, end]);
  }
  return out;
}

/** Whether the freeze can hold at or after `now` (past one-off windows and ended freezes cannot). */
export function isCurrentOrFuture(freeze: Freeze, now: number): boolean {
  const w = freeze.window;
  if (w.kind === "weekly") return true;
  if (w.kind === "now") return w.until === null || Date.parse(w.until) > now;
  return Date.parse(w.until) > now;
}

/** The queue's freeze at `now`, from its freezes. */
export function freezeStatusAt(freezes: readonly Freeze[], now: number): FreezeStatus {
  if (freezes.length === 0) return NOT_FROZEN;
  const ahead = freezes.map((f) => ({ freeze: f, intervals: intervalsOf(f, now - DAY, now + HORIZON) }));
  const holding = ahead.filter((a) => a.intervals.some(([s, e]) => s <= now && now < e));
  if (holding.length === 0) {
    const starts = ahead.flatMap((a) => a.intervals.map(([s]) => s)).filter((s) => s > now);
    // A one-off window further ahead than the horizon starts at its own time.
    for (const f of freezes) if (f.window.kind === "once" && Date.parse(f.window.from) > now) starts.push(Date.parse(f.window.from));
    const next = starts.length > 0 ? Math.min(...starts) : null;
    return { ...NOT_FROZEN, nextChangeAt: next };
  }
  // The end: the latest end of what holds now, extended through every window that starts before it ends.
  const all = ahead.flatMap((a) => a.intervals);
  let until = Math.max(...holding.flatMap((a) => a.intervals.filter(([s, e]) => s <= now && now < e).map(([, e]) => e)));
  for (let extended = true; extended && Number.isFinite(until); ) {
    extended = false;
    for (const [s, e] of all) {
      if (s <= until && e > until) {
        until = e;
        extended = true;
      }
    }
  }
  const finite = Number.isFinite(until) ? until : null;
  // What holds changes before the joined end too (one freeze ends, another starts: testing, the
  // reasons): the queue decides again at the first such moment.
  const changes = [...holding.flatMap((a) => a.intervals.filter(([s, e]) => s <= now && now < e).map(([, e]) => e)), ...all.map(([s]) => s).filter((s) => s > now && s < until)];
  const next = Math.min(...changes.filter((t) => Number.isFinite(t)));
  return { frozen: true, testing: holding.every((a) => a.freeze.testing), until: finite, nextChangeAt: Number.isFinite(next) ? next : finite, holding: holding.map((a) => a.freeze) };
}

/** "2026-12-01 09:00 UTC", or "someone unfreezes it": how a status and a page say when a freeze ends. */
export function untilText(until: number | null): string {
  if (until === null) return "it is unfrozen";
  return `${new Date(until).toISOString().slice(0, 16).replace("T", " ")} UTC`;
}

/** The words a waiting PR's status shows while its queue is frozen. */
export function frozenPlaceOf(status: Pick<FreezeStatus, "until">): string {
  return `frozen until ${untilText(status.until)}`;
}

/** The freeze a queue last saw holding (stored with its decisions): what its start recorded, to tell its end and changes. */
export type FrozenState = { since: string; until: string | null; reasons: string[]; ids: string[]; testing: boolean };

/** The state to keep after a decision at `now` that saw `status`, given the one kept before. */
export function frozenStateAfter(before: FrozenState | null, status: FreezeStatus, now: number): FrozenState | null {
  if (!status.frozen) return null;
  return {
    since: before?.since ?? new Date(now).toISOString(),
    until: status.until === null ? null : new Date(status.until).toISOString(),
    reasons: status.holding.map((f) => f.reason),
    ids: status.holding.map((f) => f.id),
    testing: status.testing,
  };
}

/** The engine's view of a freeze status (what holds is the application's to record). */
export function engineFreeze(status: FreezeStatus): { frozen: boolean; testing: boolean; until: number | null; nextChangeAt: number | null } {
  return { frozen: status.frozen, testing: status.testing, until: status.until, nextChangeAt: status.nextChangeAt };
}

/** The engine's view of a kept state: what the queue's PRs were last told (their statuses compare against it). */
export function engineFreezeOf(state: FrozenState | null): { frozen: boolean; testing: boolean; until: number | null; nextChangeAt: number | null } | undefined {
  return state ? { frozen: true, testing: state.testing, until: state.until === null ? null : Date.parse(state.until), nextChangeAt: null } : undefined;
}
