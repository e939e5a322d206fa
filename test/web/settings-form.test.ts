import { z } from "zod";
import { ZQueueSettings } from "../../src/api/queues/queue-schemas.js";
import { DEFAULT_QUEUE_SETTINGS } from "../../src/domain/queue-settings.js";
import { SETTING_FIELDS, type SettingField } from "../../src/web/settings-form.js";
import { BACKENDS } from "../support/backends.js";
import { DashboardClient, queueForm, queuePath } from "../support/dashboard.js";
import { queueOf, startTestServer, type TestServer } from "../support/harness.js";

type Json = { type?: string; enum?: string[]; minimum?: number; maximum?: number; title?: string; description?: string };
const SCHEMA = (z.toJSONSchema(ZQueueSettings, { io: "input", unrepresentable: "any" }) as { properties: Record<string, Json> }).properties;
const DEFAULTS = DEFAULT_QUEUE_SETTINGS as unknown as Record<string, unknown>;
const MAX_UINT32 = 4294967295;

/**
 * The values to try for a setting, from the schema updateQueue validates with: an integer's
 * bounds and their neighbours, each enum value, true and false, a list of one and of several
 * names; and the setting's default (a setting must be able to go back to it).
 */
function candidates(field: SettingField): unknown[] {
  const schema = SCHEMA[field.name]!;
  const values: unknown[] = [];
  if (field.kind === "integer") {
    const min = schema.minimum!;
    const max = schema.maximum!;
    values.push(min, min + 1, max - 1, max);
  } else if (field.kind === "boolean") values.push(true, false);
  else if (field.kind === "choice") values.push(...new Set(schema.enum!.map((v) => v.toLowerCase())));
  else values.push(["ci/test"], ["ci/test", "lint", "e2e (ubuntu)"]);
  if (field.name in DEFAULTS && DEFAULTS[field.name] !== null) values.push(DEFAULTS[field.name]);
  return [...new Map(values.map((v) => [JSON.stringify(v), v])).values()];
}

/** What a person types or picks in the form's control for `value`. */
const typed = (value: unknown) => (Array.isArray(value) ? value.join("\n") : String(value));

/** The form's control of a setting, from the page's HTML. */
function controlOf(page: string, name: string): string {
  const control = new RegExp(`<select id="setting-${name}"[\\s\\S]*?</select>|<textarea id="setting-${name}"[\\s\\S]*?</textarea>|<input id="setting-${name}"[^>]*>`).exec(page);
  if (!control) throw new Error(`no control for ${name}`);
  return control[0];
}

/** Whether the control lets a person enter `value`: within an input's min/max (whole numbers), or one of a select's options. */
function controlAllows(control: string, value: unknown): boolean {
  if (control.startsWith("<select")) return new RegExp(`<option value="${typed(value)}"`).test(control);
  if (control.startsWith("<textarea")) return true;
  const min = /\smin="(-?\d+)"/.exec(control);
  const max = /\smax="(-?\d+)"/.exec(control);
  const n = Number(value);
  return Number.isInteger(n) && (!min || n >= Number(min[1])) && (!max || n <= Number(max[1])) && /type="number"/.test(control) && /step="1"/.test(control);
}

const SETTINGS_KEYS = Object.keys(DEFAULT_QUEUE_SETTINGS);
const pick = (record: Record<string, unknown>) => Object.fromEntries(SETTINGS_KEYS.map((k) => [k, record[k]]));

/**
 * Issue 22, item 8: the queue settings form can express every value updateQueue accepts. For each
 * setting and each candidate value, updateQueue is called on one queue and the form (its HTML's
 * constraints, then the POST a browser sends) on a twin: whatever the API accepts, the form
 * accepts and stores the same; every default can be set back.
 */
describe.each(BACKENDS)("the queue settings form on $name", (backend) => {
  let server: TestServer;
  let acme: DashboardClient;
  let csrf: string;

  beforeAll(async () => {
    server = await startTestServer(backend);
    await server.api.ok("createQueue", queueOf("viaapi"));
    await server.api.ok("createQueue", queueOf("viaform"));
    acme = await DashboardClient.signIn(server.url, server.api.token);
    csrf = await acme.csrf();
  });
  afterAll(() => server?.close());

  test("covers every setting of updateQueue but state (its own buttons)", () => {
    expect(SETTING_FIELDS.map((f) => f.name).sort()).toEqual(
      Object.keys(SCHEMA)
        .filter((n) => n !== "state")
        .sort(),
    );
  });

  test("each setting is labelled in people's words from the schema, with the API's name beside it as a hint, its help, unit and a new queue's value", async () => {
    // Every setting has its words in the schema (title and help), not only its name spelled out.
    expect(SETTING_FIELDS.filter((f) => !SCHEMA[f.name]?.title || !SCHEMA[f.name]?.description).map((f) => f.name)).toEqual([]);
    const page = (await acme.get(queuePath("viaform"))).text;
    const labels = Object.fromEntries(SETTING_FIELDS.map((f) => [f.name, new RegExp(`<label for="setting-${f.name}">([\\s\\S]*?)</label>`).exec(page)?.[1] ?? ""]));
    for (const field of SETTING_FIELDS) expect([field.name, labels[field.name]]).toEqual([field.name, expect.stringContaining(`<code class="field-name" title="its name in the API">${field.name}</code>`)]);
    expect(labels.batchingMaxWaitTimeMinutes).toMatch(/^Longest wait to fill a batch <span class="muted">\(now: 5 minutes\)<\/span>/);
    // The help under each control, which the control names as its description, with a new queue's value and the unit.
    const help = (name: string) => new RegExp(`<p class="help" id="setting-${name}-help">([\\s\\S]*?)</p>`).exec(page)?.[1] ?? "";
    expect(page).toMatch(/<input id="setting-testingTimeoutMinutes"[^>]*aria-describedby="setting-testingTimeoutMinutes-help"/);
    expect(help("testingTimeoutMinutes")).toContain("Must be greater than checksStartTimeoutMinutes");
    expect(help("testingTimeoutMinutes")).toContain("A new queue has 300 minutes.");
    expect(help("mergeMethod")).toContain("A new queue starts with squash.");
    expect(help("concurrency")).toContain("A new queue has 1 run.");
    expect(help("commentsEnabled")).toContain("On for a new queue.");
    expect(page).toMatch(/id="setting-concurrency"[^>]*>\s*<span class="unit">runs<\/span>/);
    for (const field of SETTING_FIELDS) expect([field.name, help(field.name).length > 20]).toEqual([field.name, true]);
    expect(labels.createPrsForTestingBranches).toMatch(/^Open a pull request for each testing branch </);
    expect(labels.canOptimisticallyMerge).toMatch(/^Merge when a pull request behind passes </);
  });

  test("every value updateQueue accepts, each default included, can be entered in the form's control and saved through it", async () => {
    const refusedByForm: string[] = [];
    const defaultsRefused: string[] = [];
    for (const field of SETTING_FIELDS) {
      for (const value of candidates(field)) {
        const label = `${field.name}=${JSON.stringify(value)}`;
        // checksStartTimeoutMinutes must be less than the testing timeout: room for its whole range.
        const room = field.name === "checksStartTimeoutMinutes" ? { testingTimeoutMinutes: MAX_UINT32 } : {};
        for (const name of ["viaapi", "viaform"]) await server.api.ok("updateQueue", { ...queueOf(name), ...room });
        const api = await server.api.call("updateQueue", { ...queueOf("viaapi"), [field.name]: value });
        const page = (await acme.get(queuePath("viaform"))).text;
        const allowed = controlAllows(controlOf(page, field.name), value);
        const form = await acme.post("/actions/queue", { ...queueForm("viaform"), action: "settings", csrf, [field.name]: typed(value) });
        if (api.status === 200 && (!allowed || form.status !== 200)) refusedByForm.push(`${label}: control allows ${allowed}, form answered ${form.status}`);
        if (DEFAULTS[field.name] === value && (api.status !== 200 || form.status !== 200)) defaultsRefused.push(`${label}: API ${api.status}, form ${form.status}`);
        const [viaApi, viaForm] = await Promise.all(["viaapi", "viaform"].map((name) => server.api.ok("getQueue", queueOf(name))));
        // Both ways leave the queue the same.
        expect([label, pick(viaForm)]).toEqual([label, pick(viaApi)]);
        if (api.status === 200 && field.name in DEFAULTS) expect([label, viaForm[field.name]]).toEqual([label, value]);
      }
    }
    expect(refusedByForm).toEqual([]);
    expect(defaultsRefused).toEqual([]);
  }, 300_000);

  test("pendingFailureDepth goes back to its default 0 through the form after being raised", async () => {
    const post = (depth: string) => acme.post("/actions/queue", { ...queueForm("viaform"), action: "settings", csrf, pendingFailureDepth: depth });
    expect((await post("3")).status).toBe(200);
    expect((await server.api.ok("getQueue", queueOf("viaform"))).pendingFailureDepth).toBe(3);
    expect(controlOf((await acme.get(queuePath("viaform"))).text, "pendingFailureDepth")).toMatch(/ min="0"/);
    expect((await post("0")).status).toBe(200);
    expect((await server.api.ok("getQueue", queueOf("viaform"))).pendingFailureDepth).toBe(0);
    // Below the range is still refused, naming the setting.
    const refused = await post("-1");
    expect(refused.status).toBe(400);
    expect(refused.text).toContain("Pull requests behind a failure to wait for: Too small");
  });
});
