import { CONFIG_FILE_MAX_BYTES, readConfigFile } from "../../src/flaky/config-file.js";

describe(".greenline.yml", () => {
  test("sets the settings it names, by the API's names and rules", () => {
    expect(readConfigFile("flakyTests:\n  flakyRate: 0.2\n  recoveryDays: 14\n  autoQuarantine: false\n")).toEqual({ ok: true, settings: { flakyRate: 0.2, recoveryDays: 14, autoQuarantine: false } });
    expect(readConfigFile("flakyTests:\n  ticketUrlTemplate: https://acme.atlassian.net/browse/{id}\n")).toEqual({ ok: true, settings: { ticketUrlTemplate: "https://acme.atlassian.net/browse/{id}" } });
  });

  test("an empty file, a comment or an empty section sets nothing", () => {
    for (const text of ["", "# nothing yet\n", "flakyTests:\n", "flakyTests: {}\n"]) expect(readConfigFile(text)).toEqual({ ok: true, settings: {} });
  });

  test.each([
    ["flakyTests:\n  flakyRate: 2\n", "flakyTests.flakyRate"],
    ["flakyTests:\n  windowDays: 1.5\n", "flakyTests.windowDays"],
    ["flakyTests:\n  minSamples: '10'\n", "flakyTests.minSamples"],
    ["flakyTests:\n  treshold: 0.2\n", "flakyTests.treshold: not a setting"],
    ["flakytests:\n  flakyRate: 0.2\n", "flakytests: not a setting"],
    ["flakyTests:\n  flakyRate: 0.9\n  brokenRate: 0.5\n", "flakyTests.flakyRate: must not exceed brokenRate"],
    ["flakyTests:\n  ticketUrlTemplate: https://x.example/browse\n", "flakyTests.ticketUrlTemplate"],
    ["flakyTests:\n  ticketUrlTemplate: javascript:alert(1)//{id}\n", "flakyTests.ticketUrlTemplate"],
    ['flakyTests:\n  ticketUrlTemplate: "https://t.example/{id}\\0"\n', "flakyTests.ticketUrlTemplate"],
    ["flakyTests: [1, 2\n", "not YAML"],
    ["flakyTests:\n  flakyRate: 0.2\n  flakyRate: 0.3\n", "not YAML"],
    ["- a list\n", "(the file)"],
  ])("%j is refused, naming %s", (text, named) => {
    const reading = readConfigFile(text);
    expect(reading.ok).toBe(false);
    expect(!reading.ok && reading.error).toContain(named);
  });

  test("a billion laughs and an oversized file are refused, not expanded", () => {
    const laughs = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
    for (let i = 1; i < 9; i++)
      laughs.push(
        `${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [${Array(9)
          .fill(`*${String.fromCharCode(96 + i)}`)
          .join(",")}]`,
      );
    expect(readConfigFile(`${laughs.join("\n")}\nflakyTests:\n  flakyRate: 0.2\n`)).toEqual({ ok: false, error: expect.stringContaining("Excessive alias count") });
    const big = readConfigFile(`# ${"x".repeat(CONFIG_FILE_MAX_BYTES)}\n`);
    expect(big).toEqual({ ok: false, error: expect.stringContaining("larger than 64 KiB") });
  });
});
