import type { Principal } from "../auth/tokens.js";
import type { RepoRef } from "../ports/code-host.js";
import { invalidArgument } from "../app/errors.js";
import type { Services } from "../app/services.js";
import { backtest, type Backtest, type BacktestTest, type PolicyOutcome, replayPair } from "../domain/flaky/backtest.js";
import { DEFAULT_FLAKY_SETTINGS, ZFlakySettings, type FlakySettings } from "../domain/flaky/detection.js";
import { DAY_MS } from "../domain/time.js";
import { loadReplayTests } from "../store/flaky-store.js";
import { repositoryInScope } from "./queries.js";
import { loadFlakySettings } from "./status.js";

/** Tests named per list in a backtest's answer (the totals count them all). */
export const BACKTEST_TESTS_NAMED = 50;

export type BacktestInput = { repo: RepoRef; org_url_slug: string; since_days: number; settings: Partial<Omit<FlakySettings, "ticketUrlTemplate">> };

/**
 * Replays the repository's stored results of the last `since_days` days under its settings and
 * under them changed by `settings`, and answers what would have changed (domain/flaky/backtest.ts).
 * Reads only: nothing is re-judged or stored.
 */
export async function backtestFlakyPolicy(services: Services, principal: Principal, input: BacktestInput, options: { now?: Date } = {}) {
  const end = (options.now ?? services.now()).getTime();
  const from = end - input.since_days * DAY_MS;
  const repo = await repositoryInScope(services, principal, input);
  const current = repo ? await services.db.sqlRead((sql) => loadFlakySettings(sql, repo.id)) : DEFAULT_FLAKY_SETTINGS;
  const proposed = ZFlakySettings.parse({ ...current, ...input.settings });
  if (proposed.flakyRate > proposed.brokenRate) throw invalidArgument("settings.flakyRate", `must not exceed brokenRate (${proposed.brokenRate})`);
  // The evidence at the period's start reaches back a window (rates, streaks) or a recovery (pass-on-retry).
  const reach = Math.max(current.windowDays, proposed.windowDays, current.recoveryDays, proposed.recoveryDays) * DAY_MS;
  const tests = repo ? await services.db.sqlRead((sql) => loadReplayTests(sql, repo.id, from - reach, end)) : [];
  // Test by test, other requests served in between: a large repository's replay must not hold the process.
  const replayed = new Map<number, ReturnType<typeof replayPair>>();
  for (const test of tests) {
    replayed.set(test.key, replayPair(test, current, proposed, from, end));
    await new Promise((resolve) => setImmediate(resolve));
  }
  const result = backtest(tests, current, proposed, from, end, replayed);
  return { answer: answerOf(result, current, proposed, from, end), result };
}

const settingsOf = ({ ticketUrlTemplate: _, ...settings }: FlakySettings) => settings;

function answerOf(result: Backtest, current: FlakySettings, proposed: FlakySettings, from: number, end: number) {
  return {
    period: { from: new Date(from).toISOString(), to: new Date(end).toISOString() },
    current: { settings: settingsOf(current), outcome: outcomeOf(result.current) },
    proposed: { settings: settingsOf(proposed), outcome: outcomeOf(result.proposed) },
    changes: {
      newly_quarantined: named(result.newlyQuarantined),
      no_longer_quarantined: named(result.noLongerQuarantined),
      ejections_avoided: result.ejectionsAvoided,
      ejections_added: result.ejectionsAdded,
      regressions_hidden: named(result.regressionsHidden),
    },
  };
}

const named = (tests: BacktestTest[]) => ({ total: tests.length, tests: tests.slice(0, BACKTEST_TESTS_NAMED).map(({ id, name, variant }) => ({ id, name, variant })) });

const outcomeOf = (o: PolicyOutcome) => ({
  tests_flaky: o.testsFlaky,
  tests_broken: o.testsBroken,
  tests_quarantined: o.testsQuarantined,
  tests_ever_quarantined: o.testsEverQuarantined,
  quarantines_started: o.quarantinesStarted,
  releases: o.releases,
  failures_excused: o.failuresExcused,
  queue_runs_failed: o.queueRunsFailed,
  queue_runs_excused: o.queueRunsExcused,
  regressions_excused: o.regressionsExcused,
  regression_tests: o.regressionTests,
});
