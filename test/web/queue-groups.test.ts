import { BACKENDS } from "../support/backends.js";
import { DashboardClient, queuePath } from "../support/dashboard.js";
import { ciFinishes, prOf, queueOf, repo, startTestServer, TestClock, type TestServer } from "../support/harness.js";

const CI_MS = 60_000;

/** The queue page's lanes (parallel mode) and bisection groups, from the engine's view of the line, over HTTP on the sandbox. */
describe.each(BACKENDS)("the queue page's lanes and bisection groups on $name", (backend) => {
  let server: TestServer;
  let acme: DashboardClient;
  const clock = new TestClock();

  beforeAll(async () => {
    server = await startTestServer(backend, { now: clock.now, sandbox: { ciMs: CI_MS } });
    acme = await DashboardClient.signIn(server.url, server.api.token);
  });
  afterAll(() => server?.close());

  const worker = () => server.greenline.worker;
  /** The page's lanes: each lane's PRs and what its runs say (each run's graph's text alternative). */
  async function lanesOf(name: string): Promise<{ prs: string[]; runs: string[] }[]> {
    const { text } = await acme.get(queuePath(name));
    return [...text.matchAll(/<section class="lane" data-lane="\d+"[^>]*>([\s\S]*?)<\/section>/g)].map(([, lane]) => ({
      prs: [...lane!.matchAll(/<li data-pr="(\d+)">/g)].map((m) => m[1]!),
      runs: [...lane!.matchAll(/<li data-run="[^"]+"><span class="run-id">[^<]*<\/span><span class="stack" role="group" aria-label="([^"]*)">/g)].map((m) => m[1]!),
    }));
  }

  test("parallel mode: one column per lane, its PRs in order, and what each run is stacked on", async () => {
    await server.api.ok("createQueue", { ...queueOf("lanes"), mode: "parallel", concurrency: 5 });
    const targets: Record<number, string[]> = { 1: ["//app"], 2: ["//docs"], 3: ["//app"] };
    for (const n of [1, 2, 3]) {
      await server.api.ok("submitPullRequest", prOf(n, "lanes"));
      const { prSha } = await server.api.ok("getSubmittedPullRequest", prOf(n, "lanes"));
      await server.api.ok("setImpactedTargets", { ...queueOf("lanes"), pr: { number: n, sha: prSha }, impactedTargets: targets[n] });
    }
    await worker().drain();
    const lanes = await lanesOf("lanes");
    expect(lanes.map((lane) => lane.prs)).toEqual([["1", "3"], ["2"]]);
    expect(lanes[0]!.runs).toEqual(expect.arrayContaining([expect.stringMatching(/^run-\d+ tests #1 on the target branch$/), expect.stringMatching(/^run-\d+ tests #3 on top of #1$/)]));
    expect(lanes[1]!.runs).toEqual([expect.stringMatching(/^run-\d+ tests #2 on the target branch$/)]);
  });

  test("the queue's tuning and CI budget: what adaptive tuning picks, else the fixed settings", async () => {
    await server.api.ok("createQueue", { ...queueOf("tuned"), concurrency: 5, ciBudget: 3, tuning: "adaptive" });
    expect((await acme.get(queuePath("tuned"))).text).toContain("single mode · adaptive tuning: up to 3 run(s), batches of up to 10 · CI budget 3 run(s) at once");
    await server.api.ok("updateQueue", { ...queueOf("tuned"), tuning: "fixed", ciBudget: 0, batch: true });
    expect((await acme.get(queuePath("tuned"))).text).toContain("single mode · concurrency 5 · batching</span>");
  });

  test("single mode shows no lanes", async () => {
    await server.api.ok("createQueue", queueOf("single"));
    await server.api.ok("submitPullRequest", prOf(1, "single"));
    const { text } = await acme.get(queuePath("single"));
    expect(text).not.toContain("Lanes (");
    expect(text).not.toContain("Bisecting");
  });

  test("a failed batch being bisected: its PRs grouped, with their group size", async () => {
    await server.api.ok("createQueue", { ...queueOf("batch"), batch: true, batchingMinSize: 2 });
    await server.greenline.sandbox!.openPullRequest(repo("batch"), { number: 2, targetBranch: "main", files: { "src/bad.ts": "syntax error" }, broken: true });
    for (const n of [1, 2]) await server.api.ok("submitPullRequest", prOf(n, "batch"));
    let page = "";
    for (let round = 0; round < 6 && !page.includes("Bisecting"); round++) {
      await ciFinishes(server, clock);
      page = (await acme.get(queuePath("batch"))).text;
    }
    const group = /<li data-group-size="(\d+)">([\s\S]*?): tested in groups of (\d+)<ul>/.exec(page);
    expect(group).not.toBeNull();
    expect([group![1], group![2]!.replace(/<[^>]+>/g, ""), group![3]]).toEqual(["1", "#1, #2", "1"]);
  });
});
