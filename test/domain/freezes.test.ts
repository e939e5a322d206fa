import { describe, expect, it } from "@jest/globals";
import { freezeStatusAt, instantOfWall, intervalsOf, isTimeZone, type Freeze, type FreezeWindow } from "../../src/domain/freezes.js";

const at = (iso: string) => Date.parse(iso);
let n = 0;
function freeze(window: FreezeWindow, extra: Partial<Freeze> = {}): Freeze {
  return { id: `f${++n}`, reason: "release", testing: true, window, createdAt: "2026-11-30T00:00:00Z", createdBy: { kind: "token", name: "t" }, ...extra };
}

describe("freezes", () => {
  it("a freeze now holds from its creation until its end, or until someone unfreezes it", () => {
    const until = freeze({ kind: "now", until: "2026-12-01T09:00:00Z" }, { createdAt: "2026-11-30T10:00:00Z" });
    expect(freezeStatusAt([until], at("2026-11-30T09:59:00Z"))).toMatchObject({ frozen: false, nextChangeAt: at("2026-11-30T10:00:00Z") });
    expect(freezeStatusAt([until], at("2026-11-30T12:00:00Z"))).toMatchObject({ frozen: true, until: at("2026-12-01T09:00:00Z"), nextChangeAt: at("2026-12-01T09:00:00Z") });
    expect(freezeStatusAt([until], at("2026-12-01T09:00:00Z"))).toMatchObject({ frozen: false, nextChangeAt: null });
    const open = freeze({ kind: "now", until: null });
    expect(freezeStatusAt([open], at("2027-06-01T00:00:00Z"))).toMatchObject({ frozen: true, until: null, nextChangeAt: null });
  });

  it("a weekly window is read in its own time zone, across daylight saving time", () => {
    // Fridays 18:00 to Monday 08:00 in Berlin, written as three overnight windows that join.
    const weekend = freeze({ kind: "weekly", timeZone: "Europe/Berlin", days: ["fri", "sat", "sun"], from: "18:00", until: "08:00" });
    // Friday 2026-03-27 18:00 CET is 17:00 UTC; Monday 2026-03-30 08:00 CEST (summer time since Sunday) is 06:00 UTC.
    expect(freezeStatusAt([weekend], at("2026-03-27T16:59:00Z"))).toMatchObject({ frozen: false, nextChangeAt: at("2026-03-27T17:00:00Z") });
    const during = freezeStatusAt([weekend], at("2026-03-28T12:00:00Z"));
    // Saturday 08:00–18:00 is not frozen: the windows do not touch.
    expect(during).toMatchObject({ frozen: false, nextChangeAt: at("2026-03-28T17:00:00Z") });
    const night = freezeStatusAt([weekend], at("2026-03-29T03:00:00Z"));
    expect(night).toMatchObject({ frozen: true, until: at("2026-03-29T06:00:00Z") });
    const allWeekend = freeze({ kind: "weekly", timeZone: "Europe/Berlin", days: ["fri", "sat", "sun"], from: "00:00", until: "00:00" });
    // Whole days that touch join: Friday 00:00 CET to Monday 00:00 CEST.
    expect(freezeStatusAt([allWeekend], at("2026-03-28T12:00:00Z"))).toMatchObject({ frozen: true, until: at("2026-03-29T22:00:00Z") });
  });

  it("a wall time the zone skips happens after the gap, and a repeated one at its first", () => {
    // 2026-03-29 02:30 does not exist in Berlin (02:00 → 03:00): 03:30 CEST = 01:30 UTC.
    expect(instantOfWall(Date.UTC(2026, 2, 29, 2, 30), "Europe/Berlin")).toBe(at("2026-03-29T01:30:00Z"));
    // 2026-10-25 02:30 happens twice: the first (CEST) is 00:30 UTC.
    expect(instantOfWall(Date.UTC(2026, 9, 25, 2, 30), "Europe/Berlin")).toBe(at("2026-10-25T00:30:00Z"));
    expect(instantOfWall(Date.UTC(2026, 0, 5, 9, 0), "America/New_York")).toBe(at("2026-01-05T14:00:00Z"));
  });

  it("overlapping freezes join, testing holds only if every freeze allows it, and past windows do nothing", () => {
    const a = freeze({ kind: "once", from: "2026-12-01T00:00:00Z", until: "2026-12-02T00:00:00Z" });
    const b = freeze({ kind: "once", from: "2026-12-01T20:00:00Z", until: "2026-12-03T00:00:00Z" }, { testing: false });
    const s = freezeStatusAt([a, b], at("2026-12-01T10:00:00Z"));
    expect(s).toMatchObject({ frozen: true, testing: true, until: at("2026-12-03T00:00:00Z") });
    expect(freezeStatusAt([a, b], at("2026-12-01T21:00:00Z"))).toMatchObject({ frozen: true, testing: false });
    expect(freezeStatusAt([a, b], at("2026-12-04T00:00:00Z"))).toMatchObject({ frozen: false, nextChangeAt: null });
    // A one-off window months ahead still wakes the queue when it starts.
    const later = freeze({ kind: "once", from: "2027-06-01T00:00:00Z", until: "2027-06-02T00:00:00Z" });
    expect(freezeStatusAt([later], at("2026-12-01T00:00:00Z")).nextChangeAt).toBe(at("2027-06-01T00:00:00Z"));
  });

  it("a weekly freeze ended early skips the occurrence under way, not the next", () => {
    const nightly = freeze({ kind: "weekly", timeZone: "UTC", days: ["mon", "tue", "wed", "thu", "fri", "sat", "sun"], from: "22:00", until: "06:00" }, { skipBefore: "2026-12-01T23:00:00Z" });
    expect(freezeStatusAt([nightly], at("2026-12-02T01:00:00Z"))).toMatchObject({ frozen: false, nextChangeAt: at("2026-12-02T22:00:00Z") });
    expect(freezeStatusAt([nightly], at("2026-12-02T23:00:00Z"))).toMatchObject({ frozen: true, until: at("2026-12-03T06:00:00Z") });
    expect(intervalsOf(nightly, at("2026-12-02T00:00:00Z"), at("2026-12-04T00:00:00Z"))).toHaveLength(2);
  });

  it("wakes the queue when what holds changes inside joined freezes: testing resumes when the freeze holding it ends", () => {
    const holdsTesting = freeze({ kind: "once", from: "2026-12-01T00:00:00Z", until: "2026-12-01T12:00:00Z" }, { testing: false });
    const allowsTesting = freeze({ kind: "once", from: "2026-12-01T11:00:00Z", until: "2026-12-01T14:00:00Z" });
    expect(freezeStatusAt([holdsTesting, allowsTesting], at("2026-12-01T10:00:00Z"))).toMatchObject({ frozen: true, testing: false, until: at("2026-12-01T14:00:00Z"), nextChangeAt: at("2026-12-01T11:00:00Z") });
    expect(freezeStatusAt([holdsTesting, allowsTesting], at("2026-12-01T11:00:00Z"))).toMatchObject({ testing: false, nextChangeAt: at("2026-12-01T12:00:00Z") });
    expect(freezeStatusAt([holdsTesting, allowsTesting], at("2026-12-01T12:00:00Z"))).toMatchObject({ frozen: true, testing: true, nextChangeAt: at("2026-12-01T14:00:00Z") });
  });

  it("a weekly window from a time to the same time is the whole day", () => {
    const sundays = freeze({ kind: "weekly", timeZone: "UTC", days: ["sun"], from: "00:00", until: "00:00" });
    expect(freezeStatusAt([sundays], at("2026-11-22T23:59:00Z"))).toMatchObject({ frozen: true, until: at("2026-11-23T00:00:00Z") });
  });

  it("a wall time is found in zones far from UTC too", () => {
    // Auckland springs forward 2026-09-27 02:00 → 03:00 (NZST +12 → NZDT +13): 02:30 happens at 03:30 NZDT = 14:30 UTC the day before.
    expect(instantOfWall(Date.UTC(2026, 8, 27, 2, 30), "Pacific/Auckland")).toBe(at("2026-09-26T14:30:00Z"));
    // It falls back 2026-04-05 03:00 → 02:00: the first 02:30 is NZDT (+13), 13:30 UTC the day before.
    expect(instantOfWall(Date.UTC(2026, 3, 5, 2, 30), "Pacific/Auckland")).toBe(at("2026-04-04T13:30:00Z"));
    expect(instantOfWall(Date.UTC(2026, 0, 1, 0, 0), "Pacific/Kiritimati")).toBe(at("2025-12-31T10:00:00Z"));
  });

  it("knows which time zones exist", () => {
    expect(isTimeZone("Europe/Berlin")).toBe(true);
    expect(isTimeZone("UTC")).toBe(true);
    expect(isTimeZone("Mars/Olympus")).toBe(false);
    expect(isTimeZone("")).toBe(false);
  });
});
