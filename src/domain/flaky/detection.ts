import { DAY_MS } from "../time.js";
import { z } from "zod";
import { storableText } from "../storable.js";

export type TestStatus = "healthy" | "flaky" | "broken";
export type QuarantineSetting = "auto" | "always" | "never";

/** Per-repository detection and quarantine settings, each with its rule. */
export const FLAKY_SETTING_FIELDS = {
  /** Quarantine tests found flaky (never broken ones). */
  autoQuarantine: z.boolean(),
  /** The failure-rate rule's window, in days. */
  windowDays: z.number().int().min(1).max(30),
  /** The fewest runs in the window before the failure-rate rule judges a test. */
  minSamples: z.number().int().min(1).max(10_000),
  /** Failure rate at or above which a test is flaky … */
  flakyRate: z.number().gt(0).max(1),
  /** … and at or above which it is broken (failing most of the time, not flaky). */
  brokenRate: z.number().gt(0).max(1),
  /** Days without new pass-on-retry evidence after which a flaky test recovers. */
  recoveryDays: z.number().int().min(1).max(90),
};
export const DEFAULT_FLAKY_SETTINGS = { autoQuarantine: true, windowDays: 7, minSamples: 10, flakyRate: 0.3, brokenRate: 0.8, recoveryDays: 7 };
/** Stored settings: fields missing (added in later versions) take their defaults. */
export const ZFlakySettings = z.object({
  autoQuarantine: FLAKY_SETTING_FIELDS.autoQuarantine.default(DEFAULT_FLAKY_SETTINGS.autoQuarantine),
  windowDays: FLAKY_SETTING_FIELDS.windowDays.default(DEFAULT_FLAKY_SETTINGS.windowDays),
  minSamples: FLAKY_SETTING_FIELDS.minSamples.default(DEFAULT_FLAKY_SETTINGS.minSamples),
  flakyRate: FLAKY_SETTING_FIELDS.flakyRate.default(DEFAULT_FLAKY_SETTINGS.flakyRate),
  brokenRate: FLAKY_SETTING_FIELDS.brokenRate.default(DEFAULT_FLAKY_SETTINGS.brokenRate),
  recoveryDays: FLAKY_SETTING_FIELDS.recoveryDays.default(DEFAULT_FLAKY_SETTINGS.recoveryDays),
  /** A ticket link with TICKET_KEY where a ticket's key goes (link-ticket-to-test-case's external_ticket_id); absent: none. */
  ticketUrlTemplate: z.string().optional(),
});
/** Where a ticket's key goes in a repository's ticketUrlTemplate. */
export const TICKET_KEY = "{id}";

/**
 * A repository's ticket link template, one rule for the API and `.greenline.yml`: an http(s)
 * link of at most 2,048 characters, storable, holding TICKET_KEY where the ticket's key goes.
 */
export const ZTicketUrlTemplate = z
  .string()
  .max(2048)
  .url({ protocol: /^https?$/ })
  .check(storableText)
  .refine((s) => s.includes(TICKET_KEY), `must contain ${TICKET_KEY}, where the ticket's key goes`);
/** A ticket's link from the repository's template: the key, URL-encoded, in place of each TICKET_KEY. */
export function ticketUrlOf(template: string, key: string): string {
  return template.split(TICKET_KEY).join(encodeURIComponent(key));
}
export type FlakySettings = z.output<typeof ZFlakySettings>;

/** What detection knows of one test. */
export type Evidence = {
  /** Runs and failed runs in the last `windowDays`. */
  runs: number;
  failures: number;
  /**
   * Its failing streak in the window: the runs that failed after its latest passing run, and the
   * commits they were on (absent: none).
   */
  streak?: number;
  streakCommits?: number;
  /**
   * When a streak of BROKEN_STREAK failed runs or more, on more than one commit, ended in the
   * window with FIXED_PASSES passing runs in a row: the first pass's time and the streak's length.
   * `runs` and `failures` are then counted from it (a test broken, then fixed, is judged by how
   * it has run since the fix).
   */
  fixed?: { at: Date; after: number };
  /**
   * Its failing streak now (failed runs off pull requests since its latest passing one) when
   * every failure of it is in a way (failures.ts `shape`) the test first failed in within the
   * streak, and the test had failed another way before it (both within the window): the runs,
   * their commits, and the latest failure's summary.
   */
  newWay?: { runs: number; commits: number; summary: string };
  /** The latest pass-on-retry evidence: a failure and a pass on one commit, or within one run. */
  flakeAt: Date | null;
  flakeReason: string | null;
};

export type Verdict = { status: TestStatus; reason: string };

const percent = (x: number) => `${Math.round(x * 1000) / 10}%`;

/**
 * Failed runs in a row, on more than one commit, after which a test is broken (issue 25: the
 * corpus showed newly broken tests called flaky, and quarantined, for days while passes from
 * before the break kept their rate under `brokenRate`). One that broke gets there eight runs
 * after the break. A test flaky at 30% starts such a run of failures with a chance of
 * 0.3^8 × 0.7 ≈ 5 in 100,000 per run, about 1.4% a week at 300 runs a week (six in a row would
 * be 14%), if its flakes are independent; flakes that come together (a loaded runner) make it
 * likelier. It is then broken, its failures counted, until it passes.
 */
export const BROKEN_STREAK = 8;

/**
 * Failed runs in a row, off pull requests and on more than one commit, after which a test that
 * fails in a way it had not failed before — and had failed another way before — is broken (issue
 * 25: a flaky test that broke was quarantined, as flaky, until BROKEN_STREAK runs made it broken).
 * A flaky test fails its own ways again and again; one that starts failing every run a new way
 * has a regression. Three in a row rather than eight: the new way is the evidence the count
 * stands in for otherwise.
 */
export const NEW_WAY_STREAK = 3;

/** A failing streak's new way: every failure in a shape first failed in within it, and some other shape failed in before it (null: not so). */
export function newWayOf(
  streak: readonly { at: number; sha: string; shape: string | null; summary: string | null }[],
  firstFailedAt: ReadonlyMap<string, number>,
): { runs: number; commits: number; summary: string } | null {
  const start = streak[0]!.at;
  const shapes = new Set(streak.map((r) => r.shape));
  if ([...shapes].some((shape) => shape === null || (firstFailedAt.get(shape) ?? start) < start)) return null;
  if (![...firstFailedAt].some(([shape, first]) => first < start && !shapes.has(shape))) return null;
  return { runs: streak.length, commits: new Set(streak.map((r) => r.sha)).size, summary: streak.at(-1)!.summary ?? "" };
}

/**
 * Passing runs in a row, off pull requests, after a broken streak, that make it a fix: the
 * change point from which the rates count. One pass is not enough: a test failing 90% of its
 * runs passes now and then, and would be called fixed (and healthy) at each pass; three in a
 * row it passes with a chance of 1 in 1,000.
 */
export const FIXED_PASSES = 3;

/**
 * A test's status from its evidence, the most severe rule deciding: broken when it failed at
 * least `brokenRate` of at least `minSamples` runs in the window; broken when its last
 * BROKEN_STREAK runs or more failed, on more than one commit, none passing since; flaky when it failed and
 * passed on the same code within `recoveryDays`; broken too when every one of its runs in the
 * window failed, however few (a test that never passes is not healthy); flaky when it failed at
 * least `flakyRate` of at least `minSamples` runs; healthy otherwise. After a broken streak ended
 * with FIXED_PASSES passes in a row (a fix), the rates are of the runs since the first of them and
 * pass-on-retry evidence from before it is set aside: the evidence is of the code before the fix. The reason names the rule
 * and its figures. The API's status and every page's status word are this verdict.
 */
export function classify(evidence: Evidence, settings: FlakySettings, now: Date): Verdict {
  const { runs, failures } = evidence;
  const rate = runs === 0 ? 0 : failures / runs;
  const window = evidence.fixed ? `since it passed again at ${evidence.fixed.at.toISOString()} after ${evidence.fixed.after} failed runs in a row` : `in the last ${settings.windowDays} days`;
  const figures = `failed ${failures} of ${runs} runs ${window}`;
  const sampled = runs >= settings.minSamples;
  if (sampled && rate >= settings.brokenRate) return { status: "broken", reason: `${figures} (${percent(rate)}, broken at ≥ ${percent(settings.brokenRate)})` };
  // A test that started failing every run, on more than one commit, is broken from then on,
  // whatever its rate over the window (passes from before the break would call it flaky and
  // quarantine a regression) and whatever flaked before.
  const streak = evidence.streak ?? 0;
  if (streak >= BROKEN_STREAK && (evidence.streakCommits ?? 0) >= 2) {
    return { status: "broken", reason: `failed its last ${streak} runs, on ${evidence.streakCommits} commits, none passing since (broken at ≥ ${BROKEN_STREAK} failed runs in a row on more than one commit)` };
  }
  // A test that failed one way (a flake) and now fails every run another way has a regression.
  const newWay = evidence.newWay;
  if (newWay && newWay.runs >= NEW_WAY_STREAK && newWay.commits >= 2) {
    return {
      status: "broken",
      reason: `failed its last ${newWay.runs} runs, on ${newWay.commits} commits, in a way it had not failed before (${newWay.summary || "no message"}), none passing since (broken at ≥ ${NEW_WAY_STREAK} such runs in a row on more than one commit)`,
    };
  }
  // Pass-on-retry evidence from before a fix is evidence about the code before it, as its failures are.
  const flakeAt = evidence.flakeAt && (!evidence.fixed || evidence.flakeAt.getTime() >= evidence.fixed.at.getTime()) ? evidence.flakeAt : null;
  if (flakeAt && now.getTime() - flakeAt.getTime() < settings.recoveryDays * DAY_MS) {
    return { status: "flaky", reason: evidence.flakeReason ?? "failed and passed on the same commit" };
  }
  // Too few runs for the rate rules, but not one passed: failing, never "healthy" (issue 22, item 9).
  if (runs > 0 && failures >= runs) return { status: "broken", reason: `${figures}: every run failed (the rate rules wait for ${settings.minSamples} runs)` };
  if (sampled && rate >= settings.flakyRate) return { status: "flaky", reason: `${figures} (${percent(rate)}, flaky at ≥ ${percent(settings.flakyRate)})` };
  const quiet = flakeAt ? `no pass-on-retry for ${settings.recoveryDays} days; ` : "";
  return { status: "healthy", reason: `${quiet}${figures}` };
}

/** Whether a test is quarantined: by its override, else automatically when flaky. */
export function isQuarantined(status: TestStatus, setting: QuarantineSetting, settings: FlakySettings): boolean {
  if (setting !== "auto") return setting === "always";
  return settings.autoQuarantine && status === "flaky";
}
