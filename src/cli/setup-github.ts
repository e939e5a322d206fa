import { randomBytes, timingSafeEqual } from "node:crypto";
import { chmodSync, existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { dirname, join, resolve } from "node:path";
import { parseEnv } from "node:util";
import { parse as parseYaml } from "yaml";
import { githubWebUrl } from "../config.js";
import { CliUsageError } from "./greenline-client.js";

/**
 * `greenline setup github`: registers Greenline's GitHub App from app.yml with GitHub's App
 * manifest flow and writes its credentials to an env file the service reads at start.
 *
 * The flow (docs.github.com, "Registering a GitHub App from a manifest"): a page served on
 * 127.0.0.1 posts the manifest (form field `manifest`) to `<github>/settings/apps/new?state=…`
 * (or `/organizations/<org>/settings/apps/new`); the user names the App and creates it; GitHub
 * redirects the browser to the manifest's `redirect_url` (this command's `/callback`) with
 * `?code=…&state=…`; the code (single use, valid an hour) is exchanged, without
 * authentication, at `POST <api>/app-manifests/{code}/conversions` for the App's id, private
 * key, webhook secret and OAuth client. Probot's own flow (src/manifest-creation.ts) is the
 * same, served by a running Probot at /probot.
 */

export type SetupGitHubOptions = {
  org?: string;
  "webhook-url"?: string;
  port?: string;
  "github-url"?: string;
  "api-url"?: string;
  dotenv?: string;
  force?: boolean;
  name?: string;
};

/** The variables this command writes; any of them already in the env file counts as existing credentials. */
export const CREDENTIAL_VARIABLES = ["APP_ID", "PRIVATE_KEY", "PRIVATE_KEY_PATH", "WEBHOOK_SECRET", "GITHUB_CLIENT_ID", "GITHUB_CLIENT_SECRET"] as const;

/** Every variable this command may write to the env file (compose.yaml passes each to the container). */
export const WRITTEN_VARIABLES = ["APP_ID", "PRIVATE_KEY", "WEBHOOK_SECRET", "GITHUB_CLIENT_ID", "GITHUB_CLIENT_SECRET", "GITHUB_API_URL", "GITHUB_URL"] as const;

/** The keys of a manifest (GitHub's names; app.yml uses the same). Others in app.yml are refused. */
const MANIFEST_KEYS = new Set([
  "name",
  "url",
  "description",
  "hook_attributes",
  "redirect_url",
  "callback_urls",
  "setup_url",
  "public",
  "default_permissions",
  "default_events",
  "request_oauth_on_install",
  "setup_on_update",
]);

const DEFAULT_PORT = 3456;
const TIMEOUT_MS = 15 * 60_000;
const GITHUB = "https://github.com";
const GITHUB_API = "https://api.github.com";

/** What a manifest conversion answers (only the fields used; the secrets are never printed). */
type Conversion = { id: number; slug?: string; name?: string; html_url: string; pem: string; webhook_secret: string | null; client_id: string; client_secret: string };

function httpUrl(value: string, option: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new CliUsageError(`--${option} must be an http(s) URL, not ${JSON.stringify(value)}`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") throw new CliUsageError(`--${option} must be an http(s) URL, not ${JSON.stringify(value)}`);
  return url;
}

/** app.yml: next to the package (the sources and dist/ sit at different depths, so found upward). */
function findAppYml(): string {
  for (let dir = import.meta.dirname; ; dir = dirname(dir)) {
    const file = join(dir, "app.yml");
    if (existsSync(file)) return file;
    if (dirname(dir) === dir) throw new Error("app.yml not found next to Greenline's package.json");
  }
}

/** The manifest GitHub is sent: app.yml's keys, the webhook URL given, and the callback. */
export function buildManifest(appYml: string, options: { webhookUrl: string; redirectUrl: string; name?: string }): Record<string, unknown> {
  const parsed: unknown = parseYaml(appYml);
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) throw new Error("app.yml must be a mapping of manifest keys");
  const yml = parsed as Record<string, unknown>;
  const unknown = Object.keys(yml).filter((key) => !MANIFEST_KEYS.has(key));
  if (unknown.length > 0) throw new Error(`app.yml: ${unknown.join(", ")} ${unknown.length === 1 ? "is not a" : "are not"} GitHub App manifest key${unknown.length === 1 ? "" : "s"}`);
  if (typeof yml.url !== "string") throw new Error("app.yml: url (the App's homepage) is required");
  const hook = (yml.hook_attributes ?? {}) as Record<string, unknown>;
  return {
    ...yml,
    name: options.name ?? yml.name,
    hook_attributes: { ...hook, url: options.webhookUrl, active: true },
    redirect_url: options.redirectUrl,
    // The dashboard's "Sign in with GitHub" comes back here (the service serves the webhook route and the dashboard on one origin).
    callback_urls: yml.callback_urls ?? [new URL("/sign-in/github/callback", options.webhookUrl).href],
    public: yml.public === true,
  };
}

/** The variables of an env file that hold App credentials. */
function credentialsIn(file: string): string[] {
  if (!existsSync(file)) return [];
  const values = parseEnv(readFileSync(file, "utf8"));
  return CREDENTIAL_VARIABLES.filter((name) => values[name] !== undefined && values[name] !== "");
}

/** A value as an env file line keeps it: double quotes, newlines as `\n` (dotenv and Node read them back; config.ts also accepts the escapes). */
function envValue(value: string): string {
  if (/^[A-Za-z0-9_./:+=@-]*$/.test(value)) return value;
  if (/["\\]/.test(value)) throw new Error("GitHub answered a credential with a quote or backslash, which an env file cannot hold as is");
  return `"${value.replace(/\r?\n/g, "\\n")}"`;
}

/** Writes `values` into the env file (mode 0600): lines setting them (and the other credential variables) are replaced, the rest kept. */
export function writeEnvFile(file: string, values: Record<string, string>): void {
  const replaced = new Set<string>([...CREDENTIAL_VARIABLES, ...Object.keys(values)]);
  const kept = existsSync(file)
    ? readFileSync(file, "utf8")
        .split("\n")
        .filter((line) => {
          const name = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=/.exec(line)?.[1];
          return name === undefined || !replaced.has(name);
        })
    : [];
  while (kept.length > 0 && kept.at(-1)!.trim() === "") kept.pop();
  const lines = [...kept, ...(kept.length > 0 ? [""] : []), "# The GitHub App, written by `greenline setup github`.", ...Object.entries(values).map(([name, value]) => `${name}=${envValue(value)}`)];
  const temporary = `${file}.${randomBytes(4).toString("hex")}.tmp`;
  writeFileSync(temporary, `${lines.join("\n")}\n`, { mode: 0o600 });
  chmodSync(temporary, 0o600);
  renameSync(temporary, file);
}

const escapeHtml = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;");

function page(res: ServerResponse, status: number, title: string, body: string): void {
  res
    .writeHead(status, {
      "content-type": "text/html; charset=utf-8",
      "cache-control": "no-store",
      "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; form-action https: http:",
      "referrer-policy": "no-referrer",
      "x-frame-options": "DENY",
    })
    .end(
      `<!doctype html><html><head><meta charset="utf-8"><title>${escapeHtml(title)}</title><style>body{font-family:system-ui,sans-serif;max-width:40rem;margin:3rem auto;line-height:1.5}</style></head><body><h1>${escapeHtml(title)}</h1>${body}</body></html>`,
    );
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Exchanges the code GitHub handed back for the App's credentials. */
async function convert(apiUrl: string, code: string): Promise<Conversion> {
  const url = `${apiUrl.replace(/\/+$/, "")}/app-manifests/${encodeURIComponent(code)}/conversions`;
  let response: Response;
  try {
    response = await fetch(url, { method: "POST", headers: { accept: "application/vnd.github+json", "x-github-api-version": "2022-11-28", "user-agent": "greenline-setup" } });
  } catch (error) {
    throw new Error(`GitHub's API (${apiUrl}) cannot be reached: ${(error as Error).message}`);
  }
  const text = await response.text();
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // an answer that is not JSON: reported by status below
  }
  if (response.status !== 201) {
    const why = typeof body.message === "string" ? body.message : response.statusText;
    const hint = response.status === 404 ? " (the code is unknown, already used, or older than an hour: run the command again)" : "";
    throw new Error(`GitHub refused the App's code: ${response.status} ${why}${hint}`);
  }
  for (const field of ["id", "html_url", "pem", "client_id", "client_secret"] as const) {
    if (body[field] === undefined || body[field] === null) throw new Error(`GitHub's answer to the manifest conversion has no ${field}`);
  }
  return body as unknown as Conversion;
}

/** Exchanges the code, writes the credentials, says what to do next; answers the App's install URL. */
async function register(apiUrl: string, githubUrl: string, code: string, envFile: string, out: (line: string) => void): Promise<string> {
  const app = await convert(apiUrl, code);
  if (!app.webhook_secret) throw new Error("GitHub created the App without a webhook secret: set one in the App's settings and write it as WEBHOOK_SECRET");
  const credentials: Partial<Record<(typeof WRITTEN_VARIABLES)[number], string>> = {
    APP_ID: String(app.id),
    PRIVATE_KEY: app.pem,
    WEBHOOK_SECRET: app.webhook_secret,
    GITHUB_CLIENT_ID: app.client_id,
    GITHUB_CLIENT_SECRET: app.client_secret,
  };
  if (apiUrl !== GITHUB_API) credentials.GITHUB_API_URL = apiUrl;
  // Where "Sign in with GitHub" sends users, when the API's address does not tell it.
  if (githubUrl !== githubWebUrl(apiUrl)) credentials.GITHUB_URL = githubUrl;
  writeEnvFile(envFile, credentials as Record<string, string>);
  const label = app.name ?? app.slug;
  const install = `${app.html_url}/installations/new`;
  out(`Registered the GitHub App ${label ? `${label} ` : ""}(id ${app.id}): ${app.html_url}`);
  out(`Wrote ${Object.keys(credentials).join(", ")} to ${envFile} (mode 600).`);
  out(`Install the App on the accounts whose repositories Greenline serves: ${install}`);
  out("Then start Greenline from this directory (npm start, or node dist/src/main.js): it reads .env at start (or the file GREENLINE_ENV_FILE names).");
  return install;
}

export async function setupGitHub(values: SetupGitHubOptions, out: (line: string) => void): Promise<number> {
  const webhook = values["webhook-url"]?.trim();
  if (!webhook) throw new CliUsageError("--webhook-url is required: the public address GitHub delivers webhooks to, https://<your host>/api/github/webhooks");
  const webhookUrl = httpUrl(webhook, "webhook-url").href;
  const port = values.port === undefined ? DEFAULT_PORT : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new CliUsageError(`--port must be a port number (0 to 65535), not ${JSON.stringify(values.port)}`);
  const org = values.org?.trim();
  if (org !== undefined && !/^[a-z0-9][a-z0-9-]{0,38}$/i.test(org)) throw new CliUsageError("--org must be a GitHub organization's login: letters, digits and dashes");
  const githubUrl = httpUrl(values["github-url"]?.trim() || GITHUB, "github-url").href.replace(/\/+$/, "");
  const apiDefault = process.env.GITHUB_API_URL?.trim() || (githubUrl === GITHUB ? GITHUB_API : `${githubUrl}/api/v3`);
  const apiUrl = httpUrl(values["api-url"]?.trim() || apiDefault, "api-url").href.replace(/\/+$/, "");
  const envFile = resolve(values.dotenv?.trim() || ".env");
  const name = values.name?.trim() || undefined;

  const existing = credentialsIn(envFile);
  if (existing.length > 0 && !values.force) {
    out(`${envFile} already holds GitHub App credentials (${existing.join(", ")}); nothing was registered. Pass --force to replace them.`);
    return 1;
  }
  const appYmlPath = findAppYml();
  const state = randomBytes(24).toString("hex");
  const server = createServer();
  await new Promise<void>((resolveListen, reject) => {
    server.once("error", (error: NodeJS.ErrnoException) => reject(error.code === "EADDRINUSE" ? new CliUsageError(`--port ${port} is in use; pick another`) : error));
    server.listen(port, "127.0.0.1", () => resolveListen());
  });
  const local = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const registerUrl = `${githubUrl}${org ? `/organizations/${org}` : ""}/settings/apps/new?state=${state}`;

  let used = false;
  try {
    const manifest = buildManifest(readFileSync(appYmlPath, "utf8"), { webhookUrl, redirectUrl: `${local}/callback`, name });
    const outcome = await new Promise<number>((finish, fail) => {
      const timer = setTimeout(() => {
        out("No answer from GitHub within 15 minutes; nothing was written. Run the command again.");
        finish(1);
      }, TIMEOUT_MS);
      server.on("request", (req: IncomingMessage, res: ServerResponse) => {
        const url = new URL(req.url ?? "/", local);
        if (req.method === "GET" && url.pathname === "/") {
          if (used) return page(res, 410, "Already registered", "<p>This setup has finished; run the command again to register another App.</p>");
          return page(
            res,
            200,
            "Register Greenline's GitHub App",
            `<p>GitHub asks you to name the App and create it${org ? ` for the organization <b>${escapeHtml(org)}</b>` : " on your account"}; it then sends you back here and Greenline writes the App's credentials to <code>${escapeHtml(envFile)}</code>.</p>` +
              `<p>Webhooks go to <code>${escapeHtml(webhookUrl)}</code>.</p>` +
              `<form action="${escapeHtml(registerUrl)}" method="post"><input type="hidden" name="manifest" value="${escapeHtml(JSON.stringify(manifest))}"><button type="submit">Create the GitHub App on ${escapeHtml(new URL(githubUrl).host)}</button></form>`,
          );
        }
        if (req.method === "GET" && url.pathname === "/callback") {
          const code = url.searchParams.get("code");
          const given = url.searchParams.get("state") ?? "";
          if (used) return page(res, 410, "Already registered", "<p>This setup has finished; its link cannot be used again.</p>");
          if (!sameSecret(given, state)) {
            out("Refused a callback whose state does not match this setup's (still waiting for GitHub).");
            return page(res, 400, "Not this setup", "<p>The link's <code>state</code> does not match the one this setup sent to GitHub; nothing was written. Start from the page this command printed.</p>");
          }
          if (!code) return page(res, 400, "No code", "<p>GitHub's redirect has no <code>code</code>; nothing was written.</p>");
          used = true;
          clearTimeout(timer);
          register(apiUrl, githubUrl, code, envFile, out).then(
            (install) => {
              res.on("finish", () => finish(0));
              page(
                res,
                200,
                "The GitHub App is registered",
                `<p>Greenline's credentials are in <code>${escapeHtml(envFile)}</code>. You can close this page.</p><p>Next: <a href="${escapeHtml(install)}">install the App</a> on the accounts whose repositories Greenline serves, and start Greenline.</p>`,
              );
            },
            (error: unknown) => {
              res.on("finish", () => fail(error));
              page(res, 502, "The App's credentials could not be fetched", `<p>${escapeHtml((error as Error).message)}</p><p>Nothing was written.</p>`);
            },
          );
          return;
        }
        page(res, 404, "Not found", `<p>Open <a href="/">the setup page</a>.</p>`);
      });
      out(`Open ${local}/ in a browser on this machine to register the GitHub App${org ? ` for the organization ${org}` : ""} on ${githubUrl}.`);
      out(`The App's settings come from ${appYmlPath}; webhooks go to ${webhookUrl}. Waiting up to 15 minutes (Ctrl-C stops).`);
    });
    return outcome;
  } finally {
    server.closeAllConnections();
    await new Promise<void>((done) => server.close(() => done()));
  }
}
