import type { Principal } from "../auth/tokens.js";
import type { RepoRef } from "../ports/code-host.js";
import { DEFAULT_FLAKY_SETTINGS, ZFlakySettings, type FlakySettings, type QuarantineSetting } from "../domain/flaky/detection.js";
import { testCaseId, type TestIdentity } from "../domain/flaky/identity.js";
import type { TestCase } from "../generated/sqlite/client.js";
import type { Sql } from "../store/sql.js";
import { invalidArgument, notFound } from "./errors.js";
import { applyDetection, loadFlakySettings, lockRepositoryTests, STATUS_COLUMNS, statusRow } from "./flaky-status.js";
import { findRepository, repoNotFound, type RepositoryRow } from "./repositories.js";
import type { Services } from "./services.js";

export type PageQuery = { page_size: number; page_token: string };

export type PageInfo = {
  total_rows: number;
  total_pages: number;
  next_page_token: string;
  prev_page_token: string;
  last_page_token: string;
  page_index: number;
};

type Scope = { repo: RepoRef; org_url_slug: string };

const DAY_MS = 24 * 60 * 60 * 1000;
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

// ---- Pagination -------------------------------------------------------------------------------

/**
 * Page tokens are opaque to clients: base64url of a cursor. Pages are cut by key (keyset), not by
 * offset, so rows arriving while a client pages never repeat or skip a row it has not seen:
 * "next" continues after the last key shown, "prev" ends before the first, "last" is the end.
 */
type Cursor = { p: number; after?: number; before?: number; last?: true };

function encodeCursor(cursor: Cursor): string {
  return Buffer.from(JSON.stringify(cursor)).toString("base64url");
}

function decodeCursor(token: string): Cursor | null {
  if (token === "") return null;
  try {
    const c = JSON.parse(Buffer.from(token, "base64url").toString("utf8")) as Record<string, unknown>;
    const int = (v: unknown) => Number.isSafeInteger(v) && (v as number) >= 0;
    const kinds = [c.after !== undefined, c.before !== undefined, c.last !== undefined].filter(Boolean).length;
    if (int(c.p) && kinds === 1 && (c.after === undefined || int(c.after)) && (c.before === undefined || int(c.before)) && (c.last === undefined || c.last === true)) {
      return c as Cursor;
    }
  } catch {
    // fall through
  }
  throw invalidArgument("page_query.page_token", "is not a page token this server issued");
}

/** Cuts one page out of keys sorted ascending. */
export function paginate(keys: readonly number[], query: PageQuery): { page: number[]; info: PageInfo } {
  const cursor = decodeCursor(query.page_token);
  const size = query.page_size;
  const totalPages = Math.ceil(keys.length / size);
  const firstAtOrAbove = (k: number) => {
    let lo = 0;
    let hi = keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (keys[mid]! < k) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  let start = 0;
  let index = 0;
  if (cursor?.last) {
    start = Math.max(0, (totalPages - 1) * size);
    index = Math.max(0, totalPages - 1);
  } else if (cursor?.after !== undefined) {
    start = firstAtOrAbove(cursor.after + 1);
    index = cursor.p;
  } else if (cursor?.before !== undefined) {
    const end = firstAtOrAbove(cursor.before);
    start = Math.max(0, end - size);
    index = start === 0 ? 0 : cursor.p;
  }
  const page = keys.slice(start, start + size);
  const info: PageInfo = {
    total_rows: keys.length,
    total_pages: totalPages,
    next_page_token: page.length > 0 && start + size < keys.length ? encodeCursor({ p: index + 1, after: page.at(-1)! }) : "",
    prev_page_token: start > 0 && page.length > 0 ? encodeCursor({ p: Math.max(0, index - 1), before: page[0]! }) : "",
    last_page_token: totalPages > 0 ? encodeCursor({ p: totalPages - 1, last: true }) : "",
    page_index: index,
  };
  return { page, info };
}

export function emptyPage(query: PageQuery): PageInfo {
  return paginate([], query).info;
}

// ---- Test case records ------------------------------------------------------------------------

type Figures = { runs7: number; fails7: number; runs24: number; fails24: number; prs: number; failures: { summary: string; occurrence_count: number; last_occurrence: string }[] };

/** The computed fields of test cases: failure rates, PRs impacted, most common failures. */
async function figuresOf(sql: Sql, keys: number[], now: Date): Promise<Map<number, Figures>> {
  const figures = new Map<number, Figures>(keys.map((k) => [k, { runs7: 0, fails7: 0, runs24: 0, fails24: 0, prs: 0, failures: [] }]));
  if (keys.length === 0) return figures;
  const weekAgo = now.getTime() - 7 * DAY_MS;
  const dayAgo = now.getTime() - DAY_MS;
  const [inResults, resultKeys] = sql.anyOf(`"testCaseKey"`, keys);
  const rates = await sql.all<Record<string, unknown>>(
    `SELECT "testCaseKey" AS k, COUNT(*) AS runs7, SUM(CASE WHEN "failed" THEN 1 ELSE 0 END) AS fails7,
            SUM(CASE WHEN "at" >= ? THEN 1 ELSE 0 END) AS runs24, SUM(CASE WHEN "at" >= ? AND "failed" THEN 1 ELSE 0 END) AS fails24
       FROM "TestResult" WHERE ${inResults} AND "at" >= ? AND "at" <= ? GROUP BY "testCaseKey"`,
    [dayAgo, dayAgo, resultKeys, weekAgo, now.getTime()],
  );
  for (const r of rates) Object.assign(figures.get(Number(r.k))!, { runs7: Number(r.runs7), fails7: Number(r.fails7), runs24: Number(r.runs24), fails24: Number(r.fails24) });
  const prs = await sql.all<{ k: unknown; n: unknown }>(
    `SELECT "testCaseKey" AS k, COUNT(DISTINCT "prNumber") AS n FROM "TestFailure"
       WHERE ${inResults} AND "at" >= ? AND "at" <= ? AND "prNumber" IS NOT NULL GROUP BY "testCaseKey"`,
    [resultKeys, weekAgo, now.getTime()],
  );
  for (const r of prs) figures.get(Number(r.k))!.prs = Number(r.n);
  const kinds = await sql.all<{ k: unknown; summary: string; count: unknown; lastAt: unknown }>(
    `SELECT "testCaseKey" AS k, "summary", "count", "lastAt" FROM "FailureSignature" WHERE ${inResults}
       ORDER BY "testCaseKey", "count" DESC, "lastAt" DESC`,
    [resultKeys],
  );
  for (const r of kinds) {
    const list = figures.get(Number(r.k))!.failures;
    if (list.length < MOST_COMMON) list.push({ summary: r.summary, occurrence_count: Number(r.count), last_occurrence: new Date(Number(r.lastAt)).toISOString() });
  }
  return figures;
}

const rate = (fails: number, runs: number) => (runs === 0 ? 0 : fails / runs);

function repositoryUrl(repo: RepositoryRow): string {
  return `https://${repo.host}/${repo.owner}/${repo.name}`;
}

/** Test cases in the shape of SPEC.md, in the order of `keys`. */
async function testCaseRecords(services: Services, repo: RepositoryRow, keys: number[]) {
  const now = services.now();
  const [rows, figures] = await Promise.all([
    services.db.read((tx) => tx.testCase.findMany({ where: { key: { in: keys } } })),
    services.db.sqlRead((sql) => figuresOf(sql, keys, now)),
  ]);
  const byKey = new Map(rows.map((r) => [r.key, r]));
  return keys.flatMap((key) => {
    const t = byKey.get(key);
    if (!t) return [];
    const f = figures.get(key)!;
    const repoUrl = repositoryUrl(repo);
    return [
      {
        id: t.id,
        repository: { html_url: repoUrl },
        html_url: t.file ? `${repoUrl}/blob/HEAD/${t.file.replace(/^(\.\/|\/)+/, "")}` : repoUrl,
        name: t.name,
        variant: t.variant,
        status: { value: t.status, reason: t.statusReason, timestamp: t.statusAt.toISOString() },
        most_common_failures: f.failures,
        failure_rate_last_7d: rate(f.fails7, f.runs7),
        failure_rate_last_24h: rate(f.fails24, f.runs24),
        codeowners: JSON.parse(t.codeowners) as string[],
        pull_requests_impacted_last_7d: f.prs,
        quarantined: t.quarantined,
        quarantine_setting: t.quarantineSetting,
        file_path: t.file,
        parent: t.parent,
        classname: t.classname,
        ticket: t.ticketUrl ? { html_url: t.ticketUrl } : null,
      },
    ];
  });
}

// ---- Operations -------------------------------------------------------------------------------

export async function listFailingTests(services: Services, principal: Principal, input: Scope & { start_time: Date; end_time: Date; page_query: PageQuery }) {
  if (input.start_time > input.end_time) throw invalidArgument("start_time", "must not be after end_time");
  if (input.end_time.getTime() - input.start_time.getTime() > MAX_WINDOW_MS) throw invalidArgument("end_time", "must be within 7 days of start_time");
  decodeCursor(input.page_query.page_token);
  const repo = await repositoryInScope(services, principal, input);
  if (!repo) return { tests: [], page: emptyPage(input.page_query) };
  const rows = await services.db.sqlRead((sql) =>
    sql.all<{ k: unknown }>(`SELECT DISTINCT "testCaseKey" AS k FROM "TestFailure" WHERE "repositoryId" = ? AND "at" >= ? AND "at" < ?`, [
      repo.id,
      input.start_time.getTime(),
      input.end_time.getTime(),
    ]),
  );
  const keys = rows.map((r) => Number(r.k)).sort((a, b) => a - b);
  const { page, info } = paginate(keys, input.page_query);
  return { tests: await testCaseRecords(services, repo, page), page: info };
}

export async function listQuarantinedTests(services: Services, principal: Principal, input: Scope & { page_query: PageQuery }) {
  decodeCursor(input.page_query.page_token);
  const repo = await repositoryInScope(services, principal, input);
  if (!repo) return { quarantined_tests: [], page: emptyPage(input.page_query) };
  const all = await services.db.read((tx) =>
    tx.testCase.findMany({ where: { repositoryId: repo.id, quarantined: true }, select: { key: true }, orderBy: { key: "asc" } }),
  );
  const { page, info } = paginate(
    all.map((r) => r.key),
    input.page_query,
  );
  const rows = await services.db.read((tx) => tx.testCase.findMany({ where: { key: { in: page } }, orderBy: { key: "asc" } }));
  return {
    quarantined_tests: rows.map((t) => ({
      name: t.name,
      parent: t.parent,
      file: t.file,
      classname: t.classname,
      status: t.status.toUpperCase(),
      codeowners: JSON.parse(t.codeowners) as string[],
      quarantine_setting: t.quarantineSetting === "always" ? "ALWAYS_QUARANTINE" : "AUTO_QUARANTINE",
      quarantined_at: (t.quarantinedAt ?? t.statusAt).toISOString(),
      status_last_updated_at: t.statusAt.toISOString(),
      test_case_id: t.id,
      variant: t.variant,
    })),
    page: info,
  };
}

async function findTestCase(services: Services, principal: Principal, input: Scope, testId: string): Promise<{ repo: RepositoryRow; test: TestCase }> {
  const repo = await repositoryInScope(services, principal, input);
  const test = repo && (await services.db.read((tx) => tx.testCase.findUnique({ where: { repositoryId_id: { repositoryId: repo.id, id: testId.toLowerCase() } } })));
  if (!repo || !test) throw notFound(`test case ${testId} not found`);
  return { repo, test };
}

export async function getTestDetails(services: Services, principal: Principal, input: Scope & { test_id: string }) {
  const { repo, test } = await findTestCase(services, principal, input, input.test_id);
  const [record] = await testCaseRecords(services, repo, [test.key]);
  return { test: record! };
}

/** Sets a test's quarantine override (always / never) or returns it to automatic. */
export async function setQuarantineSetting(services: Services, principal: Principal, input: Scope & { test_id: string; setting: QuarantineSetting }) {
  const { repo, test } = await findTestCase(services, principal, input, input.test_id);
  await services.db.sqlTransaction(async (sql) => {
    await lockRepositoryTests(sql, repo.id);
    await sql.run(`UPDATE "TestCase" SET "quarantineSetting" = ? WHERE "key" = ?`, [input.setting, test.key]);
    const [row] = await sql.all<Record<string, unknown>>(`SELECT ${STATUS_COLUMNS} FROM "TestCase" WHERE "key" = ?`, [test.key]);
    await applyDetection(sql, await loadFlakySettings(sql, repo.id), [statusRow(row!)], new Map(), services.now());
  });
  const [record] = await testCaseRecords(services, repo, [test.key]);
  return { test: record! };
}

/** Links a ticket to a test case (null unlinks). */
export async function linkTicket(services: Services, principal: Principal, input: Scope & { test_case_id: string; ticket_url: string | null }) {
  const { repo, test } = await findTestCase(services, principal, input, input.test_case_id);
  await services.db.transaction((tx) => tx.testCase.update({ where: { key: test.key }, data: { ticketUrl: input.ticket_url } }));
  const [record] = await testCaseRecords(services, repo, [test.key]);
  return { test: record! };
}

/**
 * Which of the given tests are quarantined, for CI deciding whether a failing job may pass.
 * Tests are named by id or by identity (the id is derived as at upload).
 */
export async function checkQuarantine(
  services: Services,
  principal: Principal,
  input: Scope & { test_ids: string[]; tests: (TestIdentity & { id?: string | undefined })[]; variant: string },
) {
  const repo = await repositoryInScope(services, principal, input);
  if (!repo) return { quarantining_enabled: true, quarantined_test_ids: [] as string[] };
  const fullName = `${repo.host}/${repo.owner}/${repo.name}`;
  const ids = [...new Set([...input.test_ids.map((id) => id.toLowerCase()), ...input.tests.map((t) => testCaseId(principal.organizationSlug, fullName, t, input.variant, t.id ?? ""))])];
  const rows = ids.length === 0 ? [] : await services.db.read((tx) => tx.testCase.findMany({ where: { repositoryId: repo.id, id: { in: ids }, quarantined: true }, select: { id: true } }));
  const settings = await services.db.sqlRead((sql) => loadFlakySettings(sql, repo.id));
  const quarantined = new Set(rows.map((r) => r.id));
  return { quarantining_enabled: settings.autoQuarantine, quarantined_test_ids: ids.filter((id) => quarantined.has(id)) };
}

export async function getFlakySettings(services: Services, principal: Principal, input: Scope): Promise<{ settings: FlakySettings }> {
  const repo = await repositoryInScope(services, principal, input);
  if (!repo) return { settings: DEFAULT_FLAKY_SETTINGS };
  return { settings: await services.db.sqlRead((sql) => loadFlakySettings(sql, repo.id)) };
}

/** Changes a repository's detection settings and re-judges its tests under them. */
export async function updateFlakySettings(services: Services, principal: Principal, input: Scope & { settings: Partial<FlakySettings> }) {
  const repo = await repositoryInScope(services, principal, input);
  if (!repo) throw repoNotFound(input.repo);
  const now = services.now();
  return services.db.sqlTransaction(async (sql) => {
    // Read, merge, write: under the lock, or concurrent changes of other fields would be lost.
    await lockRepositoryTests(sql, repo.id);
    const merged = { ...(await loadFlakySettings(sql, repo.id)), ...input.settings };
    if (merged.flakyRate > merged.brokenRate) throw invalidArgument("settings.flakyRate", "must not exceed brokenRate");
    const settings = ZFlakySettings.parse(merged);
    const text = JSON.stringify(settings);
    await sql.run(
      `INSERT INTO "FlakySettings" ("repositoryId", "settings", "updatedAt") VALUES (?, ?, ?)
         ON CONFLICT ("repositoryId") DO UPDATE SET "settings" = excluded."settings", "updatedAt" = excluded."updatedAt"`,
      [repo.id, text, now],
    );
    // Every test that has failed or is quarantined may change status under the new thresholds.
    const rows = await sql.all<Record<string, unknown>>(
      `SELECT ${STATUS_COLUMNS} FROM "TestCase" t WHERE t."repositoryId" = ?
         AND (t."status" <> 'healthy' OR t."quarantined" = ? OR t."quarantineSetting" <> 'auto'
              OR EXISTS (SELECT 1 FROM "TestFailure" f WHERE f."testCaseKey" = t."key" AND f."at" >= ?))`,
      [repo.id, true, now.getTime() - settings.windowDays * DAY_MS],
    );
    await applyDetection(sql, settings, rows.map(statusRow), new Map(), now);
    return { settings };
  });
}
