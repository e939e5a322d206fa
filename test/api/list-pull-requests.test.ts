import { BACKENDS } from "../support/backends.js";
import { prOf, queueOf, repo, startTestServer, TestClock, type TestServer } from "../support/harness.js";

/** Trunk's listPullRequests: newest submission first, paged by cursor, filtered by state or by when PRs concluded. */
describe.each(BACKENDS)("listPullRequests on $name", (backend) => {
  let server: TestServer;
  const clock = new TestClock();
  let cancelledAt: number;
  const numbers = (answer: { pullRequests: { prNumber: number }[] }) => answer.pullRequests.map((pr) => pr.prNumber);
  const list = (body: object) => server.api.ok("listPullRequests", { ...queueOf(), ...body });

  beforeAll(async () => {
    server = await startTestServer(backend, { now: clock.now });
    await server.api.ok("createQueue", { ...queueOf(), concurrency: 20 });
    await server.api.ok("createQueue", queueOf("web", "release"));
    for (const n of [1, 2, 3, 4, 5]) {
      await server.api.ok("submitPullRequest", prOf(n));
      clock.advance(60_000);
    }
    cancelledAt = clock.ms;
    await server.api.ok("cancelPullRequest", prOf(2));
    clock.advance(60_000);
    await server.api.ok("submitPullRequest", prOf(9, "web", "release"));
  });
  afterAll(() => server?.close());

  test("lists the queue's PRs, most recently submitted first, with the merge-item record", async () => {
    const answer = await list({});
    expect(numbers(answer)).toEqual([5, 4, 3, 2, 1]);
    expect(answer.nextCursor).toBeUndefined();
    expect(answer.pullRequests[3]).toMatchObject({ prNumber: 2, state: "cancelled", prTitle: "Sandbox pull request #2" });
  });

  test("pages by cursor until no nextCursor is given", async () => {
    const first = await list({ take: 2 });
    const second = await list({ take: 2, cursor: first.nextCursor });
    const third = await list({ take: 2, cursor: second.nextCursor });
    expect([numbers(first), numbers(second), numbers(third)]).toEqual([[5, 4], [3, 2], [1]]);
    expect(third.nextCursor).toBeUndefined();
  });

  test("filters by state (either case) and by when PRs concluded", async () => {
    expect(numbers(await list({ state: "CANCELLED" }))).toEqual([2]);
    expect(numbers(await list({ state: "testing" }))).toEqual([5, 4, 3, 1]);
    expect(numbers(await list({ since: new Date(cancelledAt).toISOString() }))).toEqual([2]);
    expect(numbers(await list({ since: new Date(cancelledAt + 1).toISOString() }))).toEqual([]);
    expect(numbers(await list({ until: new Date(cancelledAt - 1).toISOString() }))).toEqual([]);
    expect(numbers(await list({ since: new Date(cancelledAt).toISOString(), state: "testing" }))).toEqual([]);
  });

  test("bad input is 400 naming the field", async () => {
    const cases: [object, string][] = [
      [{ take: 0 }, "take"],
      [{ take: 101 }, "take"],
      [{ take: 2.5 }, "take"],
      [{ state: "bogus" }, "state"],
      [{ since: "yesterday" }, "since"],
      [{ since: "2026-11-22T10:00:00Z", until: "2026-11-22T09:00:00Z" }, "until"],
      [{ cursor: "" }, "cursor"],
      [{ cursor: "no-such-entry" }, "cursor"],
    ];
    for (const [body, field] of cases) {
      const response = await server.api.call("listPullRequests", { ...queueOf(), ...body });
      expect([JSON.stringify(body), response.status, response.body.error.details[0].path]).toEqual([JSON.stringify(body), 400, field]);
    }
  });

  test("another queue's cursor is refused; another queue's PRs are not listed", async () => {
    const release = await server.api.ok("listPullRequests", queueOf("web", "release"));
    expect(numbers(release)).toEqual([9]);
    const response = await server.api.call("listPullRequests", { ...queueOf(), cursor: release.pullRequests[0].id });
    expect([response.status, response.body.error.details[0].path]).toEqual([400, "cursor"]);
  });

  test("another organization lists nothing of ours", async () => {
    const other = await server.clientFor("globex");
    expect((await other.call("listPullRequests", queueOf())).status).toBe(404);
    await other.ok("createQueue", { repo: repo("site", "globex"), targetBranch: "main" });
    const { pullRequests } = await list({});
    const theirs = await other.call("listPullRequests", { repo: repo("site", "globex"), targetBranch: "main", cursor: pullRequests[0].id });
    expect([theirs.status, theirs.body.error.details[0].path]).toEqual([400, "cursor"]);
    expect(numbers(await other.ok("listPullRequests", { repo: repo("site", "globex"), targetBranch: "main" }))).toEqual([]);
  });
});
