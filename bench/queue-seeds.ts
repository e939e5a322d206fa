import { simulate, type SimResult, type Strategy, type Workload } from "./queue-sim.js";

/**
 * npx tsx bench/queue-seeds.ts — strategies on one line over several arrival seeds (one seed's
 * throughput swings by ±10%), means printed per strategy. For trying a lever before it goes into
 * `bench:queue -- --goals` (docs/benchmarks.md, "CI budget and adaptive tuning").
 *
 * Environment: RATE (PRs/h, 30), FLAKE (share of runs flaky, 0.05), HOURS (of arrivals, 24),
 * SEEDS (offsets from the goal workload's seed, "0,1,2"), STRATS (a JSON array of
 * { name, settings }; settings are queue settings over optimistic merging and skipping
 * redundant bisection runs; default: batches of 3–6, 6 in flight, bisection pool 6, depth 2).
 */
const rate = Number(process.env.RATE ?? 30);
const seeds = (process.env.SEEDS ?? "0,1,2").split(",").map(Number);
const base = { batch: true, batchingMaxWaitTimeMinutes: 5, optimizationMode: "bisection_skip_redundant_tests" as const, canOptimisticallyMerge: true };
const strategies: Strategy[] = JSON.parse(process.env.STRATS ?? "null") ?? [{ name: "3x6", description: "", settings: { batchingMinSize: 3, concurrency: 6, bisectionConcurrency: 6, pendingFailureDepth: 2 } }];
for (const strategy of strategies) {
  strategy.settings = { ...base, ...strategy.settings };
  strategy.description ??= "";
  const rows: SimResult[] = [];
  for (const seed of seeds) {
    const w: Workload = {
      name: `${rate}/h`,
      arrivalsPerHour: rate,
      ciMinutes: 30,
      realFailureRate: 0.03,
      flakeRate: Number(process.env.FLAKE ?? 0.05),
      targets: null,
      hours: Number(process.env.HOURS ?? 24),
      // The seed of bench:queue's goal workload at this rate (queue.ts `workload`), plus the offset.
      seed: 1000 + rate * 7 + Math.round(Number(process.env.FLAKE ?? 0.05) * 100) + seed,
    };
    rows.push(await simulate(strategy, w, { kind: "sqlite" }, { estimates: true }));
  }
  const mean = (f: (r: SimResult) => number) => (rows.reduce((a, r) => a + f(r), 0) / rows.length).toFixed(2);
  console.log(
    `${strategy.name}: merged/h ${mean((r) => r.throughputPerHour)} of ${mean((r) => r.arrivalsPerHour)} [${rows.map((r) => r.throughputPerHour).join(" ")}], p95 ${mean((r) => r.p95TimeInQueueMinutes)} min, CI runs/merge ${mean((r) => r.ciRunsPerMerge)}, runs in flight ${mean((r) => r.runsInFlightMean)}, estimate error p50/p90 at entry ${mean((r) => r.estimateErrorP50 ?? 0)}/${mean((r) => r.estimateErrorP90 ?? 0)}, at each place ${mean((r) => r.placeEstimateErrorP50 ?? 0)}/${mean((r) => r.placeEstimateErrorP90 ?? 0)} (${mean((r) => r.placeEstimates)}), flake ejections ${mean((r) => r.flakeEjections)}, unfinished ${mean((r) => r.unfinished)}, bad merges ${mean((r) => r.badMerges)}`,
  );
}
