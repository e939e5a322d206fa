import { z } from "zod";
import { INSTANT, isRealInstant, isTimeZone, WALL_TIME, WEEKDAYS } from "../../domain/freezes.js";
import { caseInsensitiveEnum, storableText, TRIMMED } from "../shared/schemas.js";
import { ZActor, ZFreezeStatus, ZQueueAddress } from "./queue-schemas.js";

/** Merge freezes' schemas (freeze-operations.ts, docs/freezes.md). */

export const ZFreezeReason = z
  .string()
  .max(255)
  .regex(/\S/, "must not be blank")
  .trim()
  .check(storableText)
  .describe(`why (shown on the PRs' statuses, the dashboard and the queue's events); not blank, at most 255 characters; ${TRIMMED}`);

/** An ISO 8601 time with its offset; seconds may be left out (`2026-12-24T18:00Z`). */
const ZInstant = z
  .string()
  .max(40)
  .regex(INSTANT, { message: "must be an ISO 8601 time with its offset, such as 2026-12-24T18:00Z", abort: true })
  .refine(isRealInstant, "must be a real date and time (no 30 February, no hour 24)")
  .transform((s) => new Date(s));

const ZWallTime = z.string().regex(WALL_TIME, "must be a 24-hour time HH:MM");

export const ZWeeklyWindow = z.strictObject({
  timeZone: z
    .string()
    .max(64)
    .refine(isTimeZone, "must be an IANA time zone such as Europe/Berlin or UTC")
    .describe("an IANA time zone (`Europe/Berlin`, `America/New_York`, `UTC`): the window follows its daylight saving time"),
  days: z.array(caseInsensitiveEnum(WEEKDAYS)).min(1).max(7).describe("the days the window starts on"),
  from: ZWallTime.describe("local start, HH:MM"),
  until: ZWallTime.describe("local end, HH:MM; not after `from`: the window runs overnight and ends the next day"),
});

export const ZFreezeQueueRequest = ZQueueAddress.extend({
  reason: ZFreezeReason,
  from: ZInstant.optional().describe("a one-off window's start (with `until`); absent: the freeze starts now"),
  until: ZInstant.optional().describe("when the freeze ends (in the future); absent without `from` and `weekly`: when someone unfreezes the queue"),
  weekly: ZWeeklyWindow.optional().describe("a window every week instead (not with `from`/`until`)"),
  testing: z.boolean().optional().describe("whether pull requests are tested while it holds (default true: they merge as soon as it ends); false: nothing starts testing but hotfixes"),
});

export const ZUnfreezeQueueRequest = ZQueueAddress.extend({
  freezeId: z
    .string()
    .regex(/^[0-9A-Za-z-]{1,64}$/, "must be a freeze's id, as listQueueFreezes answers it")
    .optional()
    .describe("the freeze to remove (listQueueFreezes); absent: end every freeze holding now (a weekly one for its current window only)"),
});

export const ZFreezeRecord = z.strictObject({
  id: z.string(),
  reason: z.string(),
  testing: z.boolean(),
  kind: z.enum(["now", "once", "weekly"]),
  from: z.iso.datetime().nullable().describe("its start (now: when it was made); null for weekly"),
  until: z.iso.datetime().nullable().describe("its end; null for weekly, and for one that holds until someone unfreezes the queue"),
  weekly: ZWeeklyWindow.nullable(),
  createdAt: z.iso.datetime(),
  createdBy: ZActor,
  holdingNow: z.boolean(),
  nextStart: z.iso.datetime().nullable().describe("when it next starts, if later"),
});

export const ZFreezeQueueResponse = z.strictObject({ freeze: ZFreezeRecord, status: ZFreezeStatus });
export const ZUnfreezeQueueResponse = z.strictObject({ ended: z.array(ZFreezeRecord).describe("the freezes removed or ended (empty: the queue was not frozen)"), status: ZFreezeStatus });
export const ZListQueueFreezesResponse = z.strictObject({ status: ZFreezeStatus, freezes: z.array(ZFreezeRecord).describe("current and scheduled freezes (past ones are dropped)") });
