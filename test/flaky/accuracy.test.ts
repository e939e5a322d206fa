import { measureAccuracy } from "../../bench/flaky-accuracy.js";
import { corpusTests, type CorpusOptions, QUICK } from "../../bench/flaky-corpus/corpus.js";
import { BACKENDS } from "../support/backends.js";

/**
 * Issue 25: the labelled corpus (bench/flaky-corpus) at a small size, replayed through the real
 * upload over HTTP and read back through the API, on each backend. It fails when detection falls
 * below the goals `bench:flaky -- --accuracy` measures at full size: F1 of "flaky" ≥ 0.95 over
 * tests flaky at ≥ 2%, no broken test ever quarantined, no regression a queue run would have
 * excused, no healthy test made flaky or broken by an infrastructure incident, and a 5%-flaky
 * test found within 60 of its runs.
 */
const SMALL: CorpusOptions = { seed: 25, tests: 240, days: 8, pipelinesPerDay: 24 };

test("the small corpus holds every kind of truth", () => {
  const truths = corpusTests(SMALL).map((t) => t.truth);
  const kinds = {
    flaky: truths.some((t) => t.kind === "flaky"),
    order: truths.some((t) => t.kind === "order"),
    timing: truths.some((t) => t.kind === "timing"),
    brokenAndFixed: truths.some((t) => t.kind === "broken" && t.untilTree !== null),
    brokenForGood: truths.some((t) => t.kind === "broken" && t.untilTree === null),
    flakyThenBroken: truths.some((t) => t.kind === "broken" && t.flakyBefore !== undefined),
  };
  expect(kinds).toEqual({ flaky: true, order: true, timing: true, brokenAndFixed: true, brokenForGood: true, flakyThenBroken: true });
});

describe.each(BACKENDS)("flaky detection on a labelled corpus, $name", (backend) => {
  test("meets the accuracy goals", async () => {
    const figures = await measureAccuracy(backend.name, SMALL, await backend.createDatabase());
    const summary = {
      flakyF1AtLeast95: figures.flaky.f1 >= 0.95,
      brokenRecall: figures.broken.recall,
      brokenQuarantined: figures.brokenQuarantined,
      regressionsExcused: figures.regressionsExcused,
      infraMintedFlaky: figures.infraMintedFlaky,
      infrastructureFalsePositives: figures.infrastructure.falsePositives,
      fivePercentWithin60Runs: (figures.detectRuns["5%"]?.p90 ?? Infinity) <= 60,
      // The policy backtest under the repository's own settings ends where detection is, test by test.
      backtestDisagrees: figures.backtest.disagree,
    };
    expect(summary).toEqual({
      flakyF1AtLeast95: true,
      brokenRecall: 1,
      brokenQuarantined: 0,
      regressionsExcused: 0,
      infraMintedFlaky: 0,
      infrastructureFalsePositives: 0,
      fivePercentWithin60Runs: true,
      backtestDisagrees: 0,
    });
    expect(figures.backtest.replayed).toBeGreaterThan(10);
    expect(figures.uploads).toBeGreaterThan(1000);
  }, 240_000);
});

/**
 * The quick corpus (`bench:flaky -- --accuracy --quick`) on SQLite: broken tests fixed in it were
 * called flaky for days on their failures from before the fix (defect 3: flaky precision 0.708,
 * F1 0.829); and its flaky test that broke, quarantined until its streak makes it broken, had
 * its regression excused in 5 queue runs before a quarantine covered only the ways a test failed
 * when it was quarantined. It is still listed as quarantined during the streak (brokenQuarantined
 * 1, docs/benchmarks.md), so that figure is not held here.
 */
test("the quick corpus: fixed tests are not called flaky; a flaky test that broke is not excused by its quarantine", async () => {
  const figures = await measureAccuracy("sqlite", QUICK);
  expect({
    precision: figures.flaky.precision,
    recall: figures.flaky.recall,
    healthyMadeUnhealthy: figures.infraMintedFlaky,
    regressionsExcused: figures.regressionsExcused,
    flakesNotExcused: figures.flakesNotExcused,
    backtestDisagrees: figures.backtest.disagree,
  }).toEqual({ precision: 1, recall: 1, healthyMadeUnhealthy: 0, regressionsExcused: 0, flakesNotExcused: 0, backtestDisagrees: 0 });
  expect(figures.backtest.replayed).toBeGreaterThan(20);
}, 300_000);
