import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { authenticateTokenId, type Principal } from "../auth/tokens.js";
import type { RepoRef } from "../ports/code-host.js";
import { testCaseId } from "../domain/flaky/identity.js";
import { AppError, invalidArgument, notFound, permissionDenied } from "../app/errors.js";
import { checkRepositoryClaimable } from "../app/repositories.js";
import type { Services } from "../app/services.js";
import { findQuarantinedTestIds, uploadExists } from "../store/flaky-store.js";
import { BundleError, readBundle, RUN_STATUS, type Bundle, type TestReport } from "./bundle.js";
import { uploadTestResults, type UploadInput } from "./ingest.js";
import { repositoryInScope } from "./queries.js";

/**
 * Trunk's analytics CLI (`trunk flakytests upload`, trunk-io/analytics-cli) against Greenline:
 * it asks which failures are quarantined (getQuarantineConfig), asks where to put its bundle
 * (createBundleUpload: Greenline answers a URL it signed), PUTs the bundle there with no token,
 * and the bundle lands through the same upload service as a JUnit upload.
 */

/** How bundle upload URLs are signed and how long they last. */
export type BundleUrls = { secret: Buffer; ttlMs: number };

export const DEFAULT_BUNDLE_URL_TTL_MS = 15 * 60_000;

/** The key URLs are signed with: the configured one, else a random one (URLs die with the process). */
export function bundleUrls(config: { secret?: string | undefined; ttlMs?: number } = {}): BundleUrls {
  return { secret: config.secret ? Buffer.from(config.secret, "utf8") : randomBytes(32), ttlMs: config.ttlMs ?? DEFAULT_BUNDLE_URL_TTL_MS };
}

/** What a signed URL lets its holder do: put one bundle for one repository of one organization, until `exp`. */
type Grant = { id: string; org: string; slug: string; token: string; repo: RepoRef; exp: number };

const signature = (urls: BundleUrls, payload: string) => createHmac("sha256", urls.secret).update(payload).digest("base64url");

function sign(urls: BundleUrls, grant: Grant): { grant: string; signature: string } {
  const payload = Buffer.from(JSON.stringify(grant), "utf8").toString("base64url");
  return { grant: payload, signature: signature(urls, payload) };
}

/** The grant a URL carries, if its signature is Greenline's and it has not expired; else 403 saying which. */
function verify(urls: BundleUrls, id: string, query: { grant?: unknown; signature?: unknown }, now: Date): Grant {
  if (typeof query.grant !== "string" || typeof query.signature !== "string") {
    throw permissionDenied("the upload URL lacks its grant and signature: use the url createBundleUpload answered, unchanged");
  }
  const expected = Buffer.from(signature(urls, query.grant));
  const given = Buffer.from(query.signature);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) {
    throw permissionDenied("the upload URL's signature is not valid (altered, or signed with another key): ask createBundleUpload for a new one");
  }
  const grant = JSON.parse(Buffer.from(query.grant, "base64url").toString("utf8")) as Grant;
  if (grant.id !== id) throw permissionDenied("the upload URL was signed for another bundle");
  if (now.getTime() > grant.exp) {
    throw permissionDenied(`the upload URL expired at ${new Date(grant.exp).toISOString()}: ask createBundleUpload for a new one`);
  }
  return grant;
}

// ---- createBundleUpload -----------------------------------------------------------------------

export type CreateBundleUploadInput = { repo: RepoRef; orgUrlSlug: string };

/** The organization slug must be the token's: another answers 404, which the client reports as a wrong slug. */
function checkSlug(principal: Principal, orgUrlSlug: string): void {
  if (orgUrlSlug.toLowerCase() !== principal.organizationSlug) throw notFound(`organization "${orgUrlSlug}" not found (the token belongs to "${principal.organizationSlug}")`);
}

/**
 * An upload intent: a new bundle id and a URL on Greenline (`origin`) that accepts one PUT of
 * the bundle until it expires. The URL is signed (HMAC-SHA256 over the id, organization, token,
 * repository and expiry), so nothing is stored until the bundle comes. A repository the
 * organization could not upload to (another's, or one the code host does not let it claim)
 * answers 404 now, as its PUT would, exactly as a missing one.
 */
export async function createBundleUpload(services: Services, principal: Principal, urls: BundleUrls, origin: string, input: CreateBundleUploadInput) {
  checkSlug(principal, input.orgUrlSlug);
  await services.db.read((tx) => checkRepositoryClaimable(services, tx, principal, input.repo));
  const id = services.newId();
  const repo = { host: input.repo.host, owner: input.repo.owner, name: input.repo.name };
  const grant: Grant = { id, org: principal.organizationId, slug: principal.organizationSlug, token: principal.tokenId, repo, exp: services.now().getTime() + urls.ttlMs };
  const query = new URLSearchParams(sign(urls, grant));
  return {
    id,
    idV2: id,
    url: `${origin}/v1/bundles/${id}?${query}`,
    key: `${principal.organizationSlug}/${repo.host}/${repo.owner}/${repo.name}/${id}/bundle.tar.zstd`,
  };
}

// ---- PUT of the bundle --------------------------------------------------------------------------

export type ReceivedBundle = { id: string; stored: boolean; test_cases: number; failures: number };

/**
 * Receives a bundle PUT to a signed URL: checks the URL, reads the bundle (a truncated or
 * corrupt one is refused before anything is stored) and stores its results with the JUnit
 * upload service, as upload `id`. A bundle already stored (the client retrying) is not stored
 * again. `validate` is the upload operation's own request check.
 */
export async function receiveBundle(
  services: Services,
  urls: BundleUrls,
  request: { id: string; query: { grant?: unknown; signature?: unknown }; body: Uint8Array },
  validate: (input: UploadInput) => UploadInput,
): Promise<ReceivedBundle> {
  const grant = verify(urls, request.id, request.query, services.now());
  // The URL acts for the token that asked for it: revoked since, the URL dies with it.
  const token = await authenticateTokenId(services.db, grant.token);
  if (!token || token.organizationId !== grant.org) throw permissionDenied("the API token that asked for this upload URL has been revoked: ask createBundleUpload for a new one with a valid token");
  const principal: Principal = { organizationId: grant.org, organizationSlug: grant.slug, tokenId: grant.token, role: "write" };
  if (await services.db.sqlRead((sql) => uploadExists(sql, grant.id))) return { id: grant.id, stored: false, test_cases: 0, failures: 0 };
  let bundle: Bundle;
  try {
    bundle = await readBundle(request.body);
  } catch (error) {
    if (error instanceof BundleError) throw invalidArgument("(body)", `the bundle ${error.message}`);
    throw error;
  }
  const input = validate(uploadInput(bundle, grant));
  try {
    const stored = await uploadTestResults(services, principal, input, { uploadId: grant.id });
    return { id: grant.id, stored: true, test_cases: stored.test_cases, failures: stored.failures };
  } catch (error) {
    // The same bundle stored meanwhile by a concurrent PUT (the uploads' id is unique): stored once.
    if (!(error instanceof AppError) && (await services.db.sqlRead((sql) => uploadExists(sql, grant.id)))) return { id: grant.id, stored: false, test_cases: 0, failures: 0 };
    throw renameReport(error, bundle);
  }
}

const sameRepo = (a: RepoRef, b: RepoRef) => a.host.toLowerCase() === b.host.toLowerCase() && a.owner.toLowerCase() === b.owner.toLowerCase() && a.name.toLowerCase() === b.name.toLowerCase();

/**
 * The upload a bundle is. Its results are its JUnit files, read by the same parser as a JUnit
 * upload (so a test's id, time and retries come out the same); a bundle without any (the client
 * given its own binary reports) has its internal.bin's results, written out as JUnit.
 */
function uploadInput(bundle: Bundle, grant: Grant): UploadInput {
  const { meta } = bundle;
  // The client writes the id createBundleUpload answered (cli/src/upload_command.rs: bundle_upload_id: upload.id).
  if (meta.bundle_upload_id !== grant.id) throw invalidArgument("meta.json: bundle_upload_id", `is "${meta.bundle_upload_id}", but the upload URL was made for bundle "${grant.id}"`);
  const repo = meta.repo.repo;
  if (!sameRepo(repo, grant.repo)) {
    throw invalidArgument("meta.json: repo.repo", `is ${repo.host}/${repo.owner}/${repo.name}, but the upload URL was made for ${grant.repo.host}/${grant.repo.owner}/${grant.repo.name}`);
  }
  if (meta.org.toLowerCase() !== grant.slug) throw invalidArgument("meta.json: org", `is "${meta.org}", but the upload URL was made for "${grant.slug}"`);
  const junit = bundle.junit.map((file) => file.xml);
  if (junit.length === 0 && bundle.report) junit.push(reportAsJUnit(bundle.report));
  if (junit.length === 0) throw invalidArgument("(body)", "the bundle holds no test results (no JUnit file and no internal.bin)");
  const variant = meta.variant ?? bundle.report?.uploaderMetadata?.variant ?? "";
  return {
    repo: grant.repo,
    org_url_slug: grant.slug,
    commit_sha: meta.repo.repo_head_sha.toLowerCase(),
    branch: meta.repo.repo_head_branch.replace(/^refs\/heads\//, "") || "(unknown)",
    pr_number: pullRequestOf(meta.envs),
    job_url: jobUrlOf(meta.envs),
    variant: variant || undefined,
    junit_xml: junit,
    codeowners: bundle.codeowners,
  };
}

/** A failure of report `junit_xml[i]` named by the bundle's path for it. */
function renameReport(error: unknown, bundle: Bundle): unknown {
  if (!(error instanceof AppError) || error.code !== "invalid_argument") return error;
  if (error.details[0]?.path === "junit_xml") return invalidArgument("(body)", `the bundle ${error.details[0].message}`);
  const index = /^junit_xml\[(\d+)\]$/.exec(error.details[0]?.path ?? "")?.[1];
  const path = index === undefined ? undefined : (bundle.junit[Number(index)]?.path ?? "internal.bin");
  if (path === undefined) return error;
  return invalidArgument(path, error.details[0]!.message);
}

const number = (value: string | undefined) => (value && /^[1-9]\d{0,9}$/.test(value.trim()) ? Number(value.trim()) : undefined);

/**
 * The pull request of the CI job, from the variables the client records in meta.json `envs`
 * (constants/src/lib.rs ENVS_TO_GET): `--pr-number` (TRUNK_PR_NUMBER) first, then each CI's own.
 */
function pullRequestOf(envs: Record<string, string>): number | undefined {
  return (
    number(envs.TRUNK_PR_NUMBER) ??
    number(/^refs\/pull\/(\d+)\//.exec(envs.GITHUB_REF ?? "")?.[1]) ??
    number(envs.CI_MERGE_REQUEST_IID) ??
    number(envs.BUILDKITE_PULL_REQUEST) ??
    number(envs.CIRCLE_PR_NUMBER) ??
    number(/\/pull\/(\d+)\/?$/.exec(envs.CIRCLE_PULL_REQUEST ?? "")?.[1]) ??
    number(envs.CHANGE_ID)
  );
}

/** The CI job's link, from the same variables. */
function jobUrlOf(envs: Record<string, string>): string | undefined {
  const github = envs.GITHUB_SERVER_URL && envs.GITHUB_REPOSITORY && envs.GITHUB_RUN_ID ? `${envs.GITHUB_SERVER_URL}/${envs.GITHUB_REPOSITORY}/actions/runs/${envs.GITHUB_RUN_ID}` : undefined;
  const url = github ?? envs.CI_JOB_URL ?? envs.BUILDKITE_BUILD_URL ?? envs.CIRCLE_BUILD_URL ?? envs.BUILD_URL;
  return url && /^https?:\/\/\S+$/.test(url) ? url : undefined;
}

const xml = (text: string) => text.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
const ms = (t: { seconds: number; nanos: number } | null) => (t ? t.seconds * 1000 + Math.floor(t.nanos / 1e6) : null);

/** A test report (internal.bin) as one JUnit document: a suite per parent name, at its earliest start. */
export function reportAsJUnit(report: TestReport): string {
  const suites = new Map<string, { at: number | null; cases: string[] }>();
  for (const run of report.testResults.flatMap((result) => result.testCaseRuns)) {
    let suite = suites.get(run.parentName);
    if (!suite) suites.set(run.parentName, (suite = { at: null, cases: [] }));
    const started = ms(run.startedAt);
    if (started !== null && (suite.at === null || started < suite.at)) suite.at = started;
    const finished = ms(run.finishedAt);
    const time = started !== null && finished !== null && finished >= started ? ` time="${(finished - started) / 1000}"` : "";
    const attrs = `name="${xml(run.name)}" classname="${xml(run.classname)}"${run.file ? ` file="${xml(run.file)}"` : ""}${run.id ? ` id="${xml(run.id)}"` : ""}${time}`;
    if (run.status === RUN_STATUS.success) suite.cases.push(`<testcase ${attrs}/>`);
    else if (run.status === RUN_STATUS.failure) {
      const message = run.testOutput?.message || run.statusOutputMessage;
      suite.cases.push(`<testcase ${attrs}><failure message="${xml(message)}">${xml(run.testOutput?.text ?? "")}</failure></testcase>`);
    } else suite.cases.push(`<testcase ${attrs}><skipped/></testcase>`);
  }
  const body = [...suites].map(([name, s]) => `<testsuite name="${xml(name)}"${s.at === null ? "" : ` timestamp="${new Date(s.at).toISOString()}"`}>${s.cases.join("")}</testsuite>`);
  return `<?xml version="1.0" encoding="UTF-8"?><testsuites>${body.join("")}</testsuites>`;
}

// ---- getQuarantineConfig ------------------------------------------------------------------------

/** A test as the client describes it (bundle/src/types.rs, Test). */
export type TestIdentifier = { name: string; parentName: string; className?: string | null | undefined; file?: string | null | undefined; id: string; variant?: string | null | undefined };

/**
 * Which of the client's failed tests are quarantined. The client keeps a failure whose `id` is
 * among `testIds` (cli/src/context_quarantine.rs), and that id is its own: derived as Greenline
 * derives test ids, or, for a testcase with an id attribute, that attribute as written. So each
 * test is looked up by the id Greenline derives from its fields and by the client's id, and is
 * answered by the client's id. Quarantine is never off for a repository: a test set to
 * "always" is quarantined even with autoQuarantine off, so `isDisabled` is false.
 */
export async function getQuarantineConfig(services: Services, principal: Principal, input: { repo: RepoRef; orgUrlSlug: string; testIdentifiers: TestIdentifier[] }) {
  checkSlug(principal, input.orgUrlSlug);
  const repo = await repositoryInScope(services, principal, { repo: input.repo, org_url_slug: input.orgUrlSlug });
  if (!repo || input.testIdentifiers.length === 0) return { isDisabled: false, testIds: [] as string[] };
  const fullName = `${repo.host}/${repo.owner}/${repo.name}`;
  const candidates = input.testIdentifiers.map((t) => {
    const fields = { name: t.name, parent: t.parentName, classname: t.className ?? "", file: t.file ?? "" };
    const variant = t.variant ?? "";
    const ids = new Set([testCaseId(principal.organizationSlug, fullName, fields, variant), testCaseId(principal.organizationSlug, fullName, fields, variant, t.id)]);
    if (/^[0-9a-f-]{36}$/i.test(t.id)) ids.add(t.id.toLowerCase());
    return { clientId: t.id, ids: [...ids] };
  });
  const quarantined = new Set(await services.db.read((tx) => findQuarantinedTestIds(tx, repo.id, [...new Set(candidates.flatMap((c) => c.ids))])));
  const testIds = new Set<string>();
  for (const c of candidates) if (c.ids.some((id) => quarantined.has(id))) testIds.add(c.clientId);
  return { isDisabled: false, testIds: [...testIds] };
}
