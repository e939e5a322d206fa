import { Router } from "express";
import { listRepositories } from "../../app/repositories.js";
import { AppError, notFound } from "../../app/errors.js";
import { getFlakySettings, getTestDetails, listFailingTests, listQuarantinedTests, repositoryInScope } from "../../flaky/queries.js";
import { backtestFlakyPolicy } from "../../flaky/backtest.js";
import { HTTP_STATUS, validationError } from "../../api/errors.js";
import type { RepoRef } from "../../ports/code-host.js";
import { errorPage } from "../layout.js";
import { testPath, testsPath } from "../pages/format.js";
import { DEFAULT_RANGE, DETECTION_FIELDS, type DetectionForm, detectionUpdate, FAILING_SORTS, FAILING_STATUSES, RANGES, repoTestsPage, testPage, testsIndexPage } from "../pages/tests.js";
import { ZBacktestFlakyPolicyRequest, ZFailingTestsQuery } from "../../api/flaky/test-schemas.js";
import { type PageResponse, type RouteContext, repoOf, send, urlencoded } from "./context.js";
import { perform } from "./perform.js";

const QUARANTINE_SETTINGS = new Set(["always", "never", "auto"]);

/**
 * The flaky-test pages: the organization's repositories (/tests), a repository's failing and
 * quarantined tests (/tests/<host>/<owner>/<repo>), one test (…/<test id>), and its quarantine
 * override (POST /actions/test).
 */
export function testsRoutes(context: RouteContext): Router {
  const { services, assets, originOf, signedIn, csrf } = context;
  const router = Router();

  router.get("/tests", signedIn, async (_req, res: PageResponse) => {
    const viewer = res.locals.viewer!;
    send(res, 200, testsIndexPage(assets, viewer, await listRepositories(services, viewer.principal)));
  });

  /** A repository's tests page, from its query's parameters (range, filters, pages), with the detection panel's state. */
  async function repoPage(viewer: NonNullable<PageResponse["locals"]["viewer"]>, repo: RepoRef, query: Record<string, unknown>, form?: DetectionForm) {
    const { principal } = viewer;
    // Each parameter once, as text (a bad one answers 400 naming it, never a silent default).
    const text = (name: string) => {
      const value = query[name];
      if (value === undefined) return "";
      if (typeof value !== "string") throw new AppError("invalid_argument", `${name}: must be given once, as text`);
      return value.trim();
    };
    const range = text("range") || DEFAULT_RANGE;
    if (!Object.hasOwn(RANGES, range)) throw new AppError("invalid_argument", `range: must be one of ${Object.keys(RANGES).join(", ")}`);
    const scope = { repo, org_url_slug: principal.organizationSlug };
    // Another organization's repository is not found, exactly like a missing one (the API's own check).
    if (!(await repositoryInScope(services, principal, scope))) throw notFound("no such repository");
    // [end - range, end): up to and including this millisecond.
    const end = services.now().getTime() + 1;
    const pageQuery = (name: string) => ({ page_size: 100, page_token: text(name) });
    // The filters and order, held to the API's rules.
    const filters = { search: text("search"), status: text("status").toLowerCase(), owner: text("owner"), sort: text("sort") };
    if (!Object.hasOwn(FAILING_STATUSES, filters.status)) throw new AppError("invalid_argument", `status: must be one of ${Object.keys(FAILING_STATUSES).filter(Boolean).join(", ")}`);
    if (!Object.hasOwn(FAILING_SORTS, filters.sort)) throw new AppError("invalid_argument", `sort: must be one of ${Object.keys(FAILING_SORTS).filter(Boolean).join(", ")}`);
    const parsed = ZFailingTestsQuery.safeParse({ search: filters.search || undefined, status: filters.status || undefined, owner: filters.owner || undefined, sort: filters.sort || undefined });
    if (!parsed.success) throw new AppError("invalid_argument", parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; "));
    const [failing, quarantined, settings] = await Promise.all([
      listFailingTests(services, principal, { ...scope, ...parsed.data, start_time: new Date(end - RANGES[range]!.ms), end_time: new Date(end), page_query: pageQuery("failing_page") }),
      listQuarantinedTests(services, principal, { ...scope, page_query: pageQuery("quarantined_page") }),
      getFlakySettings(services, principal, scope),
    ]);
    // After the settings are saved, the browser lands here (POST, redirect, GET): the panel says so.
    const saved = !form && query.saved === "settings" ? { values: {}, notice: { kind: "ok" as const, text: "Detection settings saved; the tests were judged again under them." } } : undefined;
    return repoTestsPage(assets, viewer, repo, range, filters, failing, quarantined, { read: settings, form: form ?? saved });
  }

  router.get("/tests/:host/:owner/:repo", signedIn, async (req, res: PageResponse) => {
    send(res, 200, await repoPage(res.locals.viewer!, repoOf(req.params), req.query));
  });

  /** The detection panel's form: try the settings on the last 30 days (backtest-policy), or save them (update-settings). */
  router.post("/actions/test-settings", urlencoded, signedIn, csrf, async (req, res: PageResponse) => {
    const viewer = res.locals.viewer!;
    const form = req.body as Record<string, unknown>;
    const repo = repoOf(form);
    const scope = { repo, org_url_slug: viewer.principal.organizationSlug };
    const settings = detectionUpdate(form);
    const values = Object.fromEntries(DETECTION_FIELDS.map((f) => [f.name, typeof form[f.name] === "string" ? String(form[f.name]) : ""]));
    if (form.do === "backtest") {
      const parsed = ZBacktestFlakyPolicyRequest.safeParse({ ...scope, since_days: 30, settings });
      if (!parsed.success) {
        const error = validationError(parsed.error.issues);
        return send(
          res,
          400,
          await repoPage(viewer, repo, {}, { values, notice: { kind: "error", text: `${error.message}${error.details.length ? `: ${error.details.map((d) => `${d.path} ${d.message}`).join("; ")}` : ""}` } }),
        );
      }
      try {
        const { answer } = await backtestFlakyPolicy(services, viewer.principal, parsed.data);
        const text = "Nothing was changed: this is what the last 30 days would have been with these settings. Save them to use them.";
        return send(res, 200, await repoPage(viewer, repo, {}, { values, notice: { kind: "ok", text }, backtest: answer }));
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        const status = HTTP_STATUS[error.code];
        if (status === 404) return send(res, 404, errorPage(assets, viewer, 404, error.message));
        return send(res, status, await repoPage(viewer, repo, {}, { values, notice: { kind: "error", text: error.message } }));
      }
    }
    const notice = await perform(context, viewer.principal, "updateFlakySettings", { ...scope, settings }, originOf(req), "Detection settings saved.");
    if (notice.kind === "ok") return res.redirect(303, `${testsPath(repo)}?saved=settings`);
    if (notice.status === 403 || notice.status === 404) return send(res, notice.status, errorPage(assets, viewer, notice.status, notice.text));
    send(res, notice.status, await repoPage(viewer, repo, {}, { values, notice }));
  });

  router.get("/tests/:host/:owner/:repo/:testId", signedIn, async (req, res: PageResponse) => {
    const viewer = res.locals.viewer!;
    const repo = repoOf(req.params);
    const details = await getTestDetails(services, viewer.principal, { repo, org_url_slug: viewer.principal.organizationSlug, test_id: String(req.params.testId) });
    // After an override is saved, the browser lands here (POST, redirect, GET): the page says so.
    const saved = typeof req.query.saved === "string" && QUARANTINE_SETTINGS.has(req.query.saved) ? req.query.saved : undefined;
    send(res, 200, testPage(assets, viewer, repo, details, saved ? { kind: "ok", text: `Quarantine setting saved: ${saved}.` } : undefined));
  });

  router.post("/actions/test", urlencoded, signedIn, csrf, async (req, res: PageResponse) => {
    const viewer = res.locals.viewer!;
    const form = req.body as Record<string, unknown>;
    const repo = repoOf(form);
    const scope = { repo, org_url_slug: viewer.principal.organizationSlug };
    const body = { ...scope, test_id: form.test_id, setting: form.setting, reason: form.reason };
    const setting = typeof form.setting === "string" ? form.setting : "";
    const notice = await perform(context, viewer.principal, "setQuarantineSetting", body, originOf(req), `Quarantine setting saved: ${setting}.`);
    const status = notice.kind === "ok" ? 200 : notice.status;
    if (status === 403 || status === 404) return send(res, status, errorPage(assets, viewer, status, notice.text));
    if (notice.kind === "ok") {
      // The test's own address (reloadable, shareable), not /actions/test.
      return res.redirect(303, `${testPath(repo, String(form.test_id ?? ""))}?saved=${encodeURIComponent(setting)}`);
    }
    const details = await getTestDetails(services, viewer.principal, { ...scope, test_id: String(form.test_id ?? "") });
    send(res, status, testPage(assets, viewer, repo, details, notice));
  });

  return router;
}
