import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createToken } from "../../src/auth/tokens.js";
import { daysOf } from "../../src/cli/freeze-commands.js";
import { BACKENDS } from "../support/backends.js";
import { runGreenlineCli } from "../support/cli-process.js";
import { prOf, queueOf, startTestServer, type TestServer } from "../support/harness.js";

/** `greenline queue freeze|unfreeze|freezes` and `pr submit --hotfix`, the real CLI in its own process against a real Greenline (docs/freezes.md). */
describe("greenline queue freeze against a real Greenline (sandbox code host)", () => {
  let server: TestServer;
  let dir: string;
  let env: Record<string, string>;
  const cli = (args: string[]) => runGreenlineCli(args, env, dir);
  const at = (name: string) => ["--repo", `acme/${name}`, "--target-branch", "main"];

  beforeAll(async () => {
    server = await startTestServer(BACKENDS[0]!);
    dir = mkdtempSync(join(tmpdir(), "greenline-freeze-cli-"));
    env = { GREENLINE_URL: server.url, GREENLINE_API_TOKEN: server.api.token };
    await server.api.ok("createQueue", queueOf("web"));
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await server?.close();
  });

  test("freeze now, show it, submit a hotfix through it, unfreeze", async () => {
    const frozen = await cli(["queue", "freeze", ...at("web"), "--reason", "release 4.2", "--until", "2099-01-01T00:00Z"]);
    expect(frozen).toMatchObject({ code: 0, stderr: "" });
    expect(frozen.stdout).toMatch(
      /^greenline: added freeze \S+ to the queue main of acme\/web\n {2}frozen until 2099-01-01 00:00 UTC \(release 4\.2\); pull requests are tested and merge once it ends; only hotfixes merge\n$/,
    );
    const shown = await cli(["queue", "show", ...at("web")]);
    expect(shown.stdout).toContain("  frozen until 2099-01-01 00:00 UTC (release 4.2): only hotfixes merge\n");

    // An emergency needs an admin token; --hotfix is --emergency.
    const refused = await cli(["pr", "submit", "--pr", "5", ...at("web"), "--hotfix", "payments are down"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('role "admin"');
    const { token } = await createToken(server.greenline.services.db, "acme", "release-manager", "admin");
    const hotfix = await runGreenlineCli(["pr", "submit", "--pr", "5", ...at("web"), "--emergency", "payments are down"], { ...env, GREENLINE_API_TOKEN: token }, dir);
    expect(hotfix).toMatchObject({ code: 0, stdout: "greenline: submitted PR #5 to the queue main of acme/web (emergency: payments are down)\n" });
    expect(await server.api.ok("getSubmittedPullRequest", prOf(5))).toMatchObject({ priorityName: "emergency" });

    const listed = await cli(["queue", "freezes", ...at("web"), "--json"]);
    const answer = JSON.parse(listed.stdout);
    expect(answer.status).toMatchObject({ frozen: true, reasons: ["release 4.2"] });

    const thawed = await cli(["queue", "unfreeze", ...at("web")]);
    expect(thawed).toMatchObject({ code: 0, stdout: 'greenline: ended "release 4.2" on the queue main of acme/web\n  not frozen\n' });
    expect((await cli(["queue", "unfreeze", ...at("web")])).stdout).toBe("greenline: the queue main of acme/web was not frozen\n  not frozen\n");
  });

  test("a weekly window with days and a time zone is listed; removed by its id", async () => {
    const made = await cli(["queue", "freeze", ...at("web"), "--reason", "weekends", "--days", "fri-sun", "--from", "18:00", "--until", "08:00", "--time-zone", "Europe/Berlin", "--no-testing", "--json"]);
    expect(made.code).toBe(0);
    const { freeze } = JSON.parse(made.stdout);
    expect(freeze).toMatchObject({ kind: "weekly", testing: false, weekly: { timeZone: "Europe/Berlin", days: ["fri", "sat", "sun"], from: "18:00", until: "08:00" } });
    const listed = await cli(["queue", "freezes", ...at("web")]);
    expect(listed.stdout).toContain(`  ${freeze.id}  every fri, sat, sun 18:00–08:00 Europe/Berlin`);
    expect(listed.stdout).toContain(", testing held: weekends\n");
    expect((await cli(["queue", "unfreeze", ...at("web"), "--freeze-id", freeze.id])).code).toBe(0);
    expect((await cli(["queue", "freezes", ...at("web")])).stdout).toContain("  no freezes\n");
  });

  test.each([
    [["--reason", "x", "--days", "mon"], "--days needs --from and --until"],
    [["--reason", "x", "--time-zone", "UTC"], "--time-zone goes with --days"],
    [["--reason", "x", "--days", "funday", "--from", "08:00", "--until", "09:00"], "--days takes mon, tue"],
    [["--until", "2099-01-01T00:00Z"], "--reason is required"],
  ])("queue freeze %p is a usage error: %s", async (args, message) => {
    const result = await cli(["queue", "freeze", ...at("web"), ...args]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(message);
  });

  test("the API's refusal names the field", async () => {
    const result = await cli(["queue", "freeze", ...at("web"), "--reason", "x", "--days", "mon", "--from", "08:00", "--until", "09:00", "--time-zone", "Mars/Olympus"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("weekly.timeZone");
  });

  test("days: lists, ranges and ranges across the week's end", () => {
    expect(daysOf("mon-fri")).toEqual(["mon", "tue", "wed", "thu", "fri"]);
    expect(daysOf("Sat,SUN")).toEqual(["sat", "sun"]);
    expect(daysOf("fri-mon")).toEqual(["fri", "sat", "sun", "mon"]);
    expect(daysOf("monday,wednesday")).toEqual(["mon", "wed"]);
  });
});

describe("greenline audit against a real Greenline (sandbox code host)", () => {
  let server: TestServer;
  let dir: string;
  beforeAll(async () => {
    server = await startTestServer(BACKENDS[0]!);
    dir = mkdtempSync(join(tmpdir(), "greenline-audit-cli-"));
    await server.api.ok("createQueue", queueOf("web"));
    for (const concurrency of [2, 3, 4]) await server.api.ok("updateQueue", { ...queueOf("web"), concurrency });
    await server.api.ok("freezeQueue", { ...queueOf("web"), reason: "release 4.2" });
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await server?.close();
  });
  const cli = (args: string[]) => runGreenlineCli(args, { GREENLINE_URL: server.url, GREENLINE_API_TOKEN: server.api.token }, dir);

  test("lists the log newest first, one line an entry, with the next page's token", async () => {
    const first = await cli(["audit", "--limit", "2"]);
    expect(first.code).toBe(0);
    const lines = first.stdout.trimEnd().split("\n");
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ {2}queue\.freeze_added github\.com\/acme\/web main {2}by token bootstrap \(GREENLINE_API_TOKEN\) \(api\): release 4\.2$/);
    expect(lines[1]).toContain("queue.settings_changed");
    const token = /^more: --page-token (\S+)$/.exec(lines[2]!)![1]!;
    const next = await cli(["audit", "--limit", "2", "--page-token", token]);
    expect(next.stdout.split("\n").filter((l) => l.includes("queue.settings_changed"))).toHaveLength(2);
    const filtered = JSON.parse((await cli(["audit", "--repo", "acme/web", "--action", "queue.created", "--json"])).stdout);
    expect(filtered.entries.map((e: { action: string }) => e.action)).toEqual(["queue.created"]);
    expect((await cli(["audit", "--limit", "500"])).code).toBe(2);
  });
});
