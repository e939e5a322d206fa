import { BACKENDS } from "../support/backends.js";
import { startGitHubWorld, type GitHubWorld } from "../support/github-world.js";
import { TestClock, type ApiClient } from "../support/harness.js";

/**
 * Issue 25, part 3: a repository's detection settings in its config file, `.greenline.yml` on
 * its default branch, read at each push to it through the App (the GitHub simulator's push
 * webhook, real Octokit): the settings it sets become the repository's and are refused by
 * update-settings, naming each; a file that is not valid changes nothing and says why.
 */
describe.each(BACKENDS)("the repository's config file on GitHub, $name", (backend) => {
  const clock = new TestClock();
  const OWNER = "octo-config";
  const FULL = `${OWNER}/app`;
  const scope = { repo: { host: "github.com", owner: OWNER, name: "app" }, org_url_slug: OWNER };
  let world: GitHubWorld;
  let api: ApiClient;

  /** Pushes to main as a person would; GitHub delivers the push webhook and the worker handles it. */
  async function pushToMain(files: Record<string, string | undefined>) {
    const sha = world.gh.push(FULL, "main", files as Record<string, string>);
    await world.webhooks.flush();
    await world.server.greenline.worker.processWebhooks();
    return sha;
  }
  const settings = () => api.ok("flaky-tests/get-settings", scope);

  beforeAll(async () => {
    world = await startGitHubWorld(backend, clock, [{ owner: OWNER, installation: 93 }]);
    api = world.accounts[0]!.api;
  });
  afterAll(() => world?.close());

  test("a repository Greenline does not know yet is not read; once it uploaded, a push to main applies the file", async () => {
    await pushToMain({ ".greenline.yml": "flakyTests:\n  flakyRate: 0.2\n" });
    const reads = () => world.gh.requests.filter((r) => r.path.startsWith(`/repos/${FULL}/contents/.greenline.yml`)).length;
    expect(reads()).toBe(0);
    // The first upload registers the repository.
    const report = `<testsuite name="unit"><testcase classname="Cache" name="evicts"/></testsuite>`;
    await api.ok("flaky-tests/upload", { ...scope, commit_sha: world.gh.branchHead(FULL, "main"), branch: "main", junit_xml: [report] });
    expect((await settings()).config_file).toBeUndefined();
    const sha = await pushToMain({ "src/a.ts": "1" });
    expect(reads()).toBe(1);
    expect(await settings()).toMatchObject({ settings: { flakyRate: 0.2, brokenRate: 0.8 }, config_file: { path: ".greenline.yml", commit: sha, fields: ["flakyRate"], error: null } });
  });

  test("a setting the file sets is refused by update-settings, naming it; the others stay the API's", async () => {
    const refused = await api.call("flaky-tests/update-settings", { ...scope, settings: { flakyRate: 0.5, minSamples: 20 } });
    expect(refused.status).toBe(400);
    expect(refused.body.error.details).toEqual([{ path: "settings.flakyRate", message: expect.stringContaining("set by .greenline.yml on the default branch") }]);
    // Nothing of the refused request was written.
    expect((await settings()).settings.minSamples).toBe(10);
    expect((await api.ok("flaky-tests/update-settings", { ...scope, settings: { minSamples: 20 } })).settings).toMatchObject({ flakyRate: 0.2, minSamples: 20 });
  });

  test("a file that is not valid changes nothing and says why, naming the field; a valid one again applies", async () => {
    const bad = await pushToMain({ ".greenline.yml": "flakyTests:\n  flakyRate: 1.5\n  autoQuarantine: yes please\n" });
    const read = await settings();
    expect(read.settings.flakyRate).toBe(0.2);
    expect(read.config_file).toMatchObject({ commit: bad, fields: ["flakyRate"] });
    expect(read.config_file.error).toContain("flakyTests.flakyRate");
    expect(read.config_file.error).toContain("flakyTests.autoQuarantine");
    await pushToMain({ ".greenline.yml": "flakyTests:\n  flakyRat: 0.1\n" });
    expect((await settings()).config_file.error).toContain("flakyTests.flakyRat: not a setting");
    await pushToMain({ ".greenline.yml": "flakyTests:\n  flakyRate: 0.9\n" });
    expect((await settings()).config_file.error).toContain("flakyTests.flakyRate: must not exceed brokenRate");
    await pushToMain({ ".greenline.yml": "flakyTests: [1, 2\n" });
    expect((await settings()).config_file.error).toContain("not YAML");
    await pushToMain({ ".greenline.yml": "flakyTests:\n  flakyRate: 0.25\n  autoQuarantine: false\n" });
    expect(await settings()).toMatchObject({ settings: { flakyRate: 0.25, autoQuarantine: false, minSamples: 20 }, config_file: { fields: ["autoQuarantine", "flakyRate"], error: null } });
  });

  test("a file too large is refused with its size, not read as an empty file (GitHub sends files over 1 MB without content)", async () => {
    const before = (await settings()).settings;
    const big = `flakyTests:\n  flakyRate: 0.3\n# ${"x".repeat(1_500_000)}\n`;
    const sha = await pushToMain({ ".greenline.yml": big });
    const read = await settings();
    expect(read.config_file).toMatchObject({ commit: sha, error: ".greenline.yml: larger than 64 KiB" });
    expect(read.settings).toEqual(before);
    // Only the listing was asked for: the 1.5 MB blob was never fetched.
    expect(world.gh.requests.filter((r) => r.path.includes("/git/blobs/"))).toEqual([]);
    await pushToMain({ ".greenline.yml": "flakyTests:\n  flakyRate: 0.25\n  autoQuarantine: false\n" });
    expect((await settings()).config_file.error).toBeNull();
  });

  test("a push to another branch reads nothing; the file removed hands every setting back to the API", async () => {
    const before = world.gh.requests.filter((r) => r.path.startsWith(`/repos/${FULL}/contents/.greenline.yml`)).length;
    world.gh.push(FULL, "feature", { ".greenline.yml": "flakyTests:\n  flakyRate: 0.05\n" });
    await world.webhooks.flush();
    await world.server.greenline.worker.processWebhooks();
    expect(world.gh.requests.filter((r) => r.path.startsWith(`/repos/${FULL}/contents/.greenline.yml`)).length).toBe(before);
    expect((await settings()).settings.flakyRate).toBe(0.25);
    await pushToMain({ ".greenline.yml": undefined });
    const read = await settings();
    expect(read.config_file).toMatchObject({ fields: [], error: null });
    // The values stay as they were; the API may change them again.
    expect(read.settings).toMatchObject({ flakyRate: 0.25, autoQuarantine: false });
    expect((await api.ok("flaky-tests/update-settings", { ...scope, settings: { flakyRate: 0.3 } })).settings.flakyRate).toBe(0.3);
  });

  test("a file refused only for not fitting the API's brokenRate applies when update-settings makes it fit, not only at the next push", async () => {
    await api.ok("flaky-tests/update-settings", { ...scope, settings: { brokenRate: 0.5 } });
    const sha = await pushToMain({ ".greenline.yml": "flakyTests:\n  flakyRate: 0.6\n" });
    expect((await settings()).config_file).toMatchObject({ commit: sha, error: expect.stringContaining("flakyTests.flakyRate: must not exceed brokenRate (0.6 > 0.5, the repository's own)") });
    const raised = await api.ok("flaky-tests/update-settings", { ...scope, settings: { brokenRate: 0.9 } });
    expect(raised).toMatchObject({ settings: { flakyRate: 0.6, brokenRate: 0.9 }, config_file: { commit: sha, fields: ["flakyRate"], error: null } });
    expect(await settings()).toMatchObject({ settings: { flakyRate: 0.6 }, config_file: { fields: ["flakyRate"], error: null } });
    // Now the file's: the API refuses it, naming it.
    expect((await api.call("flaky-tests/update-settings", { ...scope, settings: { flakyRate: 0.1 } })).status).toBe(400);
  });
});
