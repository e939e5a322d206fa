import { createHash } from "node:crypto";
import { DAY_MS } from "../domain/time.js";
import type { Principal } from "../auth/tokens.js";
import type { RepoRef } from "../ports/code-host.js";
import { DEFAULT_FLAKY_SETTINGS, ticketUrlOf, type FlakySettings, type QuarantineSetting, type TestStatus } from "../domain/flaky/detection.js";
import { testCaseId, type TestIdentity } from "../domain/flaky/identity.js";
import { readFailure } from "../domain/flaky/failures.js";
import { isNewSinceQuarantine } from "../domain/flaky/verdict.js";
import type { TestCase } from "../domain/flaky/test-case.js";
import {
  countPullRequestsImpacted,
  countRecentRuns,
  countRunsPerDay,
  findQuarantinedTests,
  findSettingsSource,
  saveSettingsSource,
  lockRepositoryTests,
  type SettingsSource,
  findTestCaseById,
  findTestCases,
  listFailingTestKeys,
  listFailureSignatures,
  listPullRequestsImpacted,
  listQuarantinedTestKeys,
  listTestKeysByStatus,
  setTicketUrl,
} from "../store/flaky-store.js";
import type { Sql } from "../store/sql.js";
import { AppError, invalidArgument, notFound } from "../app/errors.js";
import { CONFIG_FILE } from "./config-file.js";
import { checkPageToken, emptyPage, paginate, type PageQuery } from "../app/pages.js";
import { changeFlakySettings, loadFlakySettings, overrideQuarantine, type FlakySettingsChange } from "./status.js";
import { findRepository, repoNotFound, repositoryKey, type RepositoryRow } from "../app/repositories.js";
import { recordAudit } from "../app/audit.js";
import type { Services } from "../app/services.js";

type Scope = { repo: RepoRef; org_url_slug: string };

const MAX_WINDOW_MS = 7 * DAY_MS;
/** How many failure kinds a test case shows. */
const MOST_COMMON = 5;

/**
 * The repository a flaky-test request is about, or null when the organization has none by that
 * name (nothing uploaded yet: empty answers). Another organization's repository is answered as
 * one nobody has: telling them apart would let any token holder learn which repositories other
 * organizations use. A slug other than the token's organization answers not_found.
 */
export async function repositoryInScope(services: Services, principal: Principal, input: Scope): Promise<RepositoryRow | null> {
  if (input.org_url_slug.toLowerCase() !== principal.organizationSlug) throw notFound(`organization "${input.org_url_slug}" not found`);
  return services.db.read((tx) => findRepository(tx, principal, input.repo));
}

// ---- Test case records ------------------------------------------------------------------------

type Figures = {
  runs7: number;
  fails7: number;
  runs24: number;
  fails24: number;
  prs: number;
  failures: { summary: string; occurrence_count: number; last_occurrence: string; last_failure_text: string | null; last_job_url: string | null }[];
  /** The latest of its failures (ms), any signature; null: none. */
  lastFailureAt: number | null;
};

/** The computed fields of test cases: failure rates, PRs impacted, most common failures. */
async function figuresOf(sql: Sql, keys: number[], now: Date): Promise<Map<number, Figures>> {
  const figures = new Map<number, Figures>(keys.map((k) => [k, { runs7: 0, fails7: 0, runs24: 0, fails24: 0, prs: 0, failures: [], lastFailureAt: null }]));
  if (keys.length === 0) return figures;
  const weekAgo = now.getTime() - 7 * DAY_MS;
  const dayAgo = now.getTime() - DAY_MS;
  for (const { testCaseKey, ...counts } of await countRecentRuns(sql, keys, { weekAgo, dayAgo, now: now.getTime() })) Object.assign(figures.get(testCaseKey)!, counts);
  for (const { testCaseKey, pullRequests } of await countPullRequestsImpacted(sql, keys, weekAgo, now.getTime())) figures.get(testCaseKey)!.prs = pullRequests;
  for (const { testCaseKey, summary, count, lastAt, lastText, lastJobUrl } of await listFailureSignatures(sql, keys)) {
    const figure = figures.get(testCaseKey)!;
    figure.lastFailureAt = Math.max(figure.lastFailureAt ?? lastAt, lastAt);
    const list = figure.failures;
    if (list.length < MOST_COMMON) list.push({ summary, occurrence_count: count, last_occurrence: new Date(lastAt).toISOString(), last_failure_text: lastText, last_job_url: lastJobUrl });
  }
  return figures;
}

const rate = (fails: number, runs: number) => (runs === 0 ? 0 : fails / runs);

function repositoryUrl(repo: RepositoryRow): string {
  return `https://${repo.host}/${repo.owner}/${repo.name}`;
}

/** Test cases in the shape of SPEC.md, in the order of `keys`. */
async function testCaseRecords(services: Services, repo: RepositoryRow, keys: number[]) {
  return (await keyedTestCaseRecords(services, repo, keys)).map(({ record }) => record);
}

/** testCaseRecords, each with its key. */
async function keyedTestCaseRecords(services: Services, repo: RepositoryRow, keys: number[]) {
  const now = services.now();
  const [rows, figures] = await Promise.all([services.db.read((tx) => findTestCases(tx, keys)), services.db.sqlRead((sql) => figuresOf(sql, keys, now))]);
  const byKey = new Map(rows.map((r) => [r.key, r]));
  return keys.flatMap((key) => {
    const t = byKey.get(key);
    if (!t) return [];
    const f = figures.get(key)!;
    const repoUrl = repositoryUrl(repo);
    return [
      {
        key,
        record: {
          id: t.id,
          repository: { html_url: repoUrl },
          html_url: t.file ? `${repoUrl}/blob/HEAD/${t.file.replace(/^(\.\/|\/)+/, "")}` : repoUrl,
          name: t.name,
          variant: t.variant,
          status: { value: t.status, reason: t.statusReason, timestamp: t.statusAt.toISOString() },
          most_common_failures: f.failures,
          failure_rate_last_7d: rate(f.fails7, f.runs7),
          failure_rate_last_24h: rate(f.fails24, f.runs24),
          codeowners: t.codeowners,
          pull_requests_impacted_last_7d: f.prs,
          quarantined: t.quarantined,
          quarantine_setting: t.quarantineSetting,
          quarantine_reason: t.quarantineReason,
          file_path: t.file,
          parent: t.parent,
          classname: t.classname,
          last_failure_at: f.lastFailureAt === null ? null : new Date(f.lastFailureAt).toISOString(),
          // Trunk documents ticket as an object when one is linked: left out, never null, otherwise.
          ...(t.ticketUrl ? { ticket: { html_url: t.ticketUrl } } : {}),
        },
      },
    ];
  });
}

// ---- Operations -------------------------------------------------------------------------------

/** list-failing-tests' filters and order (all optional). */
export type FailingTestsQuery = { search?: string | undefined; status?: TestStatus | undefined; owner?: string | undefined; sort?: FailingTestsSort | undefined };
export type FailingTestsSort = "failure_rate" | "pull_requests_impacted" | "last_failure" | "name";

type TestRecord = Awaited<ReturnType<typeof testCaseRecords>>[number];

/** Whether a test passes the query's filters. */
function matches(t: TestRecord, query: FailingTestsQuery): boolean {
  if (query.status && t.status.value !== query.status) return false;
  if (query.owner && !t.codeowners.some((o) => o.toLowerCase() === query.owner!.toLowerCase())) return false;
  if (query.search) {
    const needle = query.search.toLowerCase();
    if (![t.name, t.classname, t.file_path, t.parent].some((field) => field.toLowerCase().includes(needle))) return false;
  }
  return true;
}

const BY: Record<FailingTestsSort, (a: TestRecord, b: TestRecord) => number> = {
  failure_rate: (a, b) => b.failure_rate_last_7d - a.failure_rate_last_7d || b.failure_rate_last_24h - a.failure_rate_last_24h,
  pull_requests_impacted: (a, b) => b.pull_requests_impacted_last_7d - a.pull_requests_impacted_last_7d,
  last_failure: (a, b) => (b.last_failure_at ?? "").localeCompare(a.last_failure_at ?? ""),
  name: (a, b) => a.name.localeCompare(b.name) || a.classname.localeCompare(b.classname),
};

/**
 * Trunk's list-failing-tests: the tests that failed in [start_time, end_time), in a stable order
 * (keyset pages). Filtered (search, status, owner) or sorted, every failing test's record is
 * built, filtered and sorted, and the pages are cut by place in that order (ties by key).
 */
export async function listFailingTests(services: Services, principal: Principal, input: Scope & { start_time: Date; end_time: Date; page_query: PageQuery } & FailingTestsQuery) {
  if (input.start_time > input.end_time) throw invalidArgument("start_time", "must not be after end_time");
  if (input.end_time.getTime() - input.start_time.getTime() > MAX_WINDOW_MS) throw invalidArgument("end_time", "must be within 7 days of start_time");
  checkPageToken(input.page_query);
  const repo = await repositoryInScope(services, principal, input);
  if (!repo) return { tests: [], page: emptyPage(input.page_query) };
  const failing = await services.db.sqlRead((sql) => listFailingTestKeys(sql, repo.id, input.start_time, input.end_time));
  const keys = failing.sort((a, b) => a - b);
  if (!input.search && !input.status && !input.owner && !input.sort) {
    const { page, info } = paginate(keys, input.page_query);
    return { tests: await testCaseRecords(services, repo, page), page: info };
  }
  const kept = (await keyedTestCaseRecords(services, repo, keys)).filter(({ record }) => matches(record, input));
  // A token names its list (the filters and the order): one of another list is refused.
  const scope = createHash("sha256")
    .update(JSON.stringify([input.search ?? "", input.status ?? "", (input.owner ?? "").toLowerCase(), input.sort ?? ""]))
    .digest("base64url")
    .slice(0, 12);
  if (!input.sort) {
    // Filtered only: keyset pages by key, as unfiltered ones.
    const { page, info } = paginate(
      kept.map(({ key }) => key),
      input.page_query,
      scope,
    );
    const byKey = new Map(kept.map(({ key, record }) => [key, record]));
    return { tests: page.map((key) => byKey.get(key)!), page: info };
  }
  const records = kept.map(({ record }) => record).sort(BY[input.sort]);
  // Sorted: pages by place in the order, the places being the keys paginate cuts.
  const { page, info } = paginate(
    records.map((_, place) => place),
    input.page_query,
    scope,
  );
  return { tests: page.map((place) => records[place]!), page: info };
}

export async function listQuarantinedTests(services: Services, principal: Principal, input: Scope & { page_query: PageQuery }) {
  checkPageToken(input.page_query);
  const repo = await repositoryInScope(services, principal, input);
  if (!repo) return { quarantined_tests: [], page: emptyPage(input.page_query) };
  const all = await services.db.read((tx) => listQuarantinedTestKeys(tx, repo.id));
  const { page, info } = paginate(all, input.page_query);
  const rows = await services.db.read((tx) => findTestCases(tx, page));
  return {
    quarantined_tests: rows.map((t) => ({
      name: t.name,
      parent: t.parent,
      file: t.file,
      classname: t.classname,
      status: t.status.toUpperCase(),
      codeowners: t.codeowners,
      quarantine_setting: t.quarantineSetting === "always" ? "ALWAYS_QUARANTINE" : "AUTO_QUARANTINE",
      quarantined_at: (t.quarantinedAt ?? t.statusAt).toISOString(),
      status_last_updated_at: t.statusAt.toISOString(),
      test_case_id: t.id,
      variant: t.variant,
      quarantine_reason: t.quarantineReason,
      status_reason: t.statusReason,
    })),
    page: info,
  };
}

/** Trunk's list-unhealthy-tests: the tests flaky or broken now (or only those of `status`), in a stable order. */
export async function listUnhealthyTests(services: Services, principal: Principal, input: Scope & { page_query: PageQuery; status?: "flaky" | "broken" }) {
  checkPageToken(input.page_query);
  const repo = await repositoryInScope(services, principal, input);
  if (!repo) return { unhealthy_tests: [], page: emptyPage(input.page_query) };
  const statuses = input.status ? [input.status] : (["flaky", "broken"] as const);
  const all = await services.db.read((tx) => listTestKeysByStatus(tx, repo.id, statuses));
  const { page, info } = paginate(all, input.page_query);
  const rows = await services.db.read((tx) => findTestCases(tx, page));
  return {
    unhealthy_tests: rows.map((t) => ({
      name: t.name,
      parent: t.parent,
      file: t.file,
      classname: t.classname,
      status: t.status.toUpperCase(),
      codeowners: t.codeowners,
      quarantined: t.quarantined,
      status_last_updated_at: t.statusAt.toISOString(),
      test_case_id: t.id,
      variant: t.variant,
    })),
    page: info,
  };
}

async function findTestCase(services: Services, principal: Principal, input: Scope, testId: string): Promise<{ repo: RepositoryRow; test: TestCase }> {
  const repo = await repositoryInScope(services, principal, input);
  const test = repo && (await services.db.read((tx) => findTestCaseById(tx, repo.id, testId.toLowerCase())));
  if (!repo || !test) throw notFound(`test case ${testId} not found`);
  return { repo, test };
}

/** How many days of history a test's details carry (its chart), and how many impacted PRs at most. */
export const HISTORY_DAYS = 30;
const MAX_PULL_REQUESTS = 50;

/**
 * A test's history: its runs and failed runs on each UTC day of the last HISTORY_DAYS (oldest
 * first, days without runs as zeros), and the pull requests it failed on in the last 7 days.
 */
async function historyOf(services: Services, repo: RepositoryRow, key: number) {
  const now = services.now().getTime();
  const firstDay = Math.floor(now / DAY_MS) * DAY_MS - (HISTORY_DAYS - 1) * DAY_MS;
  const [perDay, prs] = await services.db.sqlRead((sql) => Promise.all([countRunsPerDay(sql, key, firstDay, now), listPullRequestsImpacted(sql, key, now - 7 * DAY_MS, now, MAX_PULL_REQUESTS)]));
  const byDay = new Map(perDay.map((d) => [d.day, d]));
  return {
    days: Array.from({ length: HISTORY_DAYS }, (_, i) => {
      const day = firstDay + i * DAY_MS;
      const found = byDay.get(day);
      return { date: new Date(day).toISOString().slice(0, 10), runs: found?.runs ?? 0, failures: found?.failures ?? 0 };
    }),
    pull_requests_impacted: prs.map((p) => ({ number: p.prNumber, html_url: `${repositoryUrl(repo)}/pull/${p.prNumber}`, failures: p.failures, last_failure: new Date(p.lastAt).toISOString() })),
  };
}

export async function getTestDetails(services: Services, principal: Principal, input: Scope & { test_id: string }) {
  const { repo, test } = await findTestCase(services, principal, input, input.test_id);
  const [[record], history] = await Promise.all([testCaseRecords(services, repo, [test.key]), historyOf(services, repo, test.key)]);
  return { test: record!, history };
}

/** Sets a test's quarantine override (always / never) or returns it to automatic, with an optional reason. */
export async function setQuarantineSetting(services: Services, principal: Principal, input: Scope & { test_id: string; setting: QuarantineSetting; reason?: string | undefined }) {
  const { repo, test } = await findTestCase(services, principal, input, input.test_id);
  const reason = input.reason ? input.reason : null;
  await services.db.sqlTransaction(
    async (sql) => {
      await overrideQuarantine(sql, repo.id, test.key, input.setting, reason, services.now());
      await recordAudit(services, sql, principal, { action: "test.quarantine_overridden", repository: repositoryKey(repo), reason, details: { testId: input.test_id, name: test.name, setting: input.setting } });
    },
    { boundedLockWait: true },
  );
  const [record] = await testCaseRecords(services, repo, [test.key]);
  return { test: record! };
}

const HTTP_LINK = /^https?:\/\//i;
const MAX_LINK = 2048;

/**
 * A ticket's link from Trunk's external_ticket_id: the id itself when it is an http(s) link,
 * else a key (KAN-123) put into the repository's ticketUrlTemplate. Greenline has no ticketing
 * integration to look a key up in (docs/decisions.md).
 */
async function ticketLinkOf(services: Services, repo: RepositoryRow, id: string): Promise<string> {
  if (HTTP_LINK.test(id)) {
    if (!URL.canParse(id)) throw invalidArgument("external_ticket_id", "is not a valid http(s) link");
    return id;
  }
  const { ticketUrlTemplate } = await services.db.sqlRead((sql) => loadFlakySettings(sql, repo.id));
  if (!ticketUrlTemplate) {
    throw invalidArgument(
      "external_ticket_id",
      `"${id}" is a ticket key, and ${repo.owner}/${repo.name} sets no ticketUrlTemplate to link keys by (set one with flaky-tests/update-settings, or send the ticket's http(s) link)`,
    );
  }
  const link = ticketUrlOf(ticketUrlTemplate, id);
  if (link.length > MAX_LINK) throw invalidArgument("external_ticket_id", `makes a ticket link longer than ${MAX_LINK} characters`);
  return link;
}

/**
 * Links a ticket to a test case (a null ticket_url unlinks): Greenline's body (ticket_url) or
 * Trunk's (external_ticket_id, no org_url_slug: the token's organization).
 */
export async function linkTicket(
  services: Services,
  principal: Principal,
  input: { repo: RepoRef; org_url_slug?: string | undefined; test_case_id: string; ticket_url?: string | null | undefined; external_ticket_id?: string | undefined },
) {
  const scope = { repo: input.repo, org_url_slug: input.org_url_slug ?? principal.organizationSlug };
  const { repo, test } = await findTestCase(services, principal, scope, input.test_case_id);
  const link = input.external_ticket_id === undefined ? (input.ticket_url ?? null) : await ticketLinkOf(services, repo, input.external_ticket_id);
  await services.db.transaction(async (tx) => {
    await setTicketUrl(tx, test.key, link);
    await recordAudit(services, tx, principal, { action: "test.ticket_linked", repository: repositoryKey(repo), details: { testId: input.test_case_id, name: test.name, ticketUrl: link } });
  });
  const [record] = await testCaseRecords(services, repo, [test.key]);
  return { test: record! };
}

/** A failure as a report gives it, for check-quarantine. */
type GivenFailure = { type?: string | undefined; message?: string | undefined; text?: string | undefined };

/**
 * Which of the given tests are quarantined, for CI deciding whether a failing job may pass.
 * Tests are named by id or by identity (the id is derived as at upload). A test quarantined by
 * detection is quarantined for the ways it failed when it was quarantined: given its failure, one
 * failing a way first seen after that (a flaky test that broke) is not, and is named in
 * new_failure_test_ids (domain/flaky/verdict.ts).
 */
export async function checkQuarantine(
  services: Services,
  principal: Principal,
  input: Scope & { test_ids: string[]; tests: (TestIdentity & { id?: string | undefined; failure?: GivenFailure | undefined })[]; variant: string },
) {
  const repo = await repositoryInScope(services, principal, input);
  if (!repo) return { quarantining_enabled: true, quarantined_test_ids: [] as string[], new_failure_test_ids: [] as string[] };
  const fullName = `${repo.host}/${repo.owner}/${repo.name}`;
  const shapes = new Map<string, string>();
  const identified = input.tests.map((t) => {
    const id = testCaseId(principal.organizationSlug, fullName, t, input.variant, t.id ?? "");
    if (t.failure) shapes.set(id, readFailure({ message: t.failure.message ?? null, type: t.failure.type ?? null, text: t.failure.text ?? null, file: t.file, classname: t.classname }).shape);
    return id;
  });
  const ids = [...new Set([...input.test_ids.map((id) => id.toLowerCase()), ...identified])];
  const found = ids.length === 0 ? [] : await services.db.read((tx) => findQuarantinedTests(tx, repo.id, ids));
  const settings = await services.db.sqlRead((sql) => loadFlakySettings(sql, repo.id));
  const newFailures = new Set(found.filter((t) => t.quarantineSetting === "auto" && isNewSinceQuarantine(shapes.get(t.id) ?? null, t.known, t.quarantinedAt)).map((t) => t.id));
  const quarantined = new Set(found.map((t) => t.id).filter((id) => !newFailures.has(id)));
  return {
    quarantining_enabled: settings.autoQuarantine,
    quarantined_test_ids: ids.filter((id) => quarantined.has(id)),
    new_failure_test_ids: ids.filter((id) => newFailures.has(id)),
  };
}

export async function getFlakySettings(services: Services, principal: Principal, input: Scope): Promise<{ settings: FlakySettings; config_file?: ConfigFileState }> {
  const repo = await repositoryInScope(services, principal, input);
  if (!repo) return { settings: DEFAULT_FLAKY_SETTINGS };
  return services.db.sqlRead(async (sql) => ({ settings: await loadFlakySettings(sql, repo.id), ...configFileOf(await findSettingsSource(sql, repo.id)) }));
}

/** The repository's config file as last read, for get-settings and update-settings' answers (absent: never read). */
type ConfigFileState = { path: string; commit: string; fields: string[]; error: string | null };

function configFileOf(source: SettingsSource): { config_file?: ConfigFileState } {
  if (source.fileSha === null) return {};
  return { config_file: { path: CONFIG_FILE, commit: source.fileSha, fields: source.fileFields ?? [], error: source.fileError } };
}

/**
 * Changes a repository's detection settings and re-judges its tests under them. A setting the
 * repository's config file sets is the file's: changing it here is refused, naming it.
 */
export async function updateFlakySettings(services: Services, principal: Principal, input: Scope & { settings: FlakySettingsChange }) {
  const repo = await repositoryInScope(services, principal, input);
  if (!repo) throw repoNotFound(input.repo);
  const now = services.now();
  return services.db.sqlTransaction(
    async (sql) => {
      await lockRepositoryTests(sql, repo.id);
      const source = await findSettingsSource(sql, repo.id);
      const owned = Object.keys(input.settings).filter((name) => source.fileFields?.includes(name));
      if (owned.length > 0) {
        throw new AppError(
          "invalid_argument",
          `${owned.map((name) => `settings.${name}`).join(", ")}: set by the repository's ${CONFIG_FILE} on the default branch, and changed there`,
          owned.map((name) => ({ path: `settings.${name}`, message: `set by ${CONFIG_FILE} on the default branch (commit ${source.fileSha!.slice(0, 12)}): change it in the file` })),
        );
      }
      const settings = await changeFlakySettings(sql, repo.id, input.settings, now);
      await recordAudit(services, sql, principal, { action: "flaky.settings_updated", repository: repositoryKey(repo), details: { changes: input.settings } });
      // A config file refused for not fitting the API's settings applies once they let it.
      const pending = source.filePending;
      if (pending && { ...settings, ...pending }.flakyRate <= { ...settings, ...pending }.brokenRate) {
        const applied = await changeFlakySettings(sql, repo.id, pending, now);
        const fileSource = { fileSha: source.fileSha, fileFields: Object.keys(pending).sort(), fileError: null, filePending: null };
        await saveSettingsSource(sql, repo.id, fileSource, applied, now);
        return { settings: applied, ...configFileOf(fileSource) };
      }
      return { settings, ...configFileOf(source) };
    },
    { boundedLockWait: true },
  );
}
