import { z } from "zod";
import { FLAKY_SETTING_FIELDS, TICKET_KEY, ZTicketUrlTemplate } from "../../domain/flaky/detection.js";
import { TRIMMED, ZDateTime, ZLink, ZName, ZPageInfo, ZPageQuery, ZRepo, caseInsensitiveEnum, storableText } from "../shared/schemas.js";

/**
 * The schemas of the flaky-test operations (operations.ts) that list and read tests, check and
 * set quarantine, link tickets and change settings; uploads have upload-schemas.ts, Trunk's
 * analytics CLI bundle-schemas.ts. Paging is Trunk's: page_query in, page out.
 */

const ZTestCase = z.strictObject({
  id: z.uuid(),
  repository: z.strictObject({ html_url: z.string() }),
  html_url: z.string(),
  name: z.string(),
  variant: z.string(),
  status: z.strictObject({ value: z.enum(["healthy", "flaky", "broken"]), reason: z.string(), timestamp: z.iso.datetime() }),
  most_common_failures: z.array(
    z.strictObject({
      summary: z.string(),
      occurrence_count: z.number().int(),
      last_occurrence: z.iso.datetime(),
      last_failure_text: z.string().nullable().describe("the latest such failure as its report gave it (message, then trace), at most 4,000 characters; null when not kept (failures stored before it was)"),
      last_job_url: z.string().nullable().describe("the CI job of the latest such failure (the upload's job_url), when its upload gave one and is still kept"),
    }),
  ),
  failure_rate_last_7d: z.number(),
  failure_rate_last_24h: z.number(),
  codeowners: z.array(z.string()),
  pull_requests_impacted_last_7d: z.number().int(),
  quarantined: z.boolean(),
  quarantine_setting: z.enum(["auto", "always", "never"]),
  quarantine_reason: z.string().nullable().describe("why the quarantine setting was last set, when a reason was given"),
  file_path: z.string(),
  parent: z.string(),
  classname: z.string(),
  ticket: z.strictObject({ html_url: z.string() }).optional().describe("the linked ticket; absent when none is linked (Trunk documents an object, never null)"),
  last_failure_at: z.iso.datetime().nullable().describe("when it last failed (not in an upload read as an infrastructure failure); null when it never did"),
});

const ZTestScope = { repo: ZRepo, org_url_slug: ZName };

/** How list-failing-tests can order its tests (absent: a stable order, by when each was first seen). */
export const FAILING_TESTS_SORTS = ["failure_rate", "pull_requests_impacted", "last_failure", "name"] as const;
export const ZFailingTestsQuery = z.object({
  search: z.string().max(200).trim().check(storableText).optional().describe(`only tests whose name, class, file or suite contains this text (any case; empty: all); ${TRIMMED}`),
  status: caseInsensitiveEnum(["healthy", "flaky", "broken"] as const)
    .optional()
    .describe("only tests of this status"),
  owner: z.string().max(200).trim().check(storableText).optional().describe(`only tests this CODEOWNERS owner owns (\`@acme/payments\`, any case; empty: all); ${TRIMMED}`),
  sort: z
    .enum(FAILING_TESTS_SORTS)
    .optional()
    .describe(
      "failure_rate (7 days, then 24 hours), pull_requests_impacted, last_failure: highest or latest first; name: A to Z. Sorted pages are cut by place in the order at each request: a test whose figures change between two pages can move across them",
    ),
});
export const ZListFailingTestsRequest = z.object({
  repo: ZRepo,
  org_url_slug: ZName,
  start_time: ZDateTime,
  end_time: ZDateTime,
  page_query: ZPageQuery,
  ...ZFailingTestsQuery.shape,
});
export const ZListFailingTestsResponse = z.strictObject({ tests: z.array(ZTestCase), page: ZPageInfo });

export const ZListQuarantinedTestsRequest = z.object({ repo: ZRepo, org_url_slug: ZName, page_query: ZPageQuery });
export const ZListQuarantinedTestsResponse = z.strictObject({
  quarantined_tests: z.array(
    z.strictObject({
      name: z.string(),
      parent: z.string(),
      file: z.string(),
      classname: z.string(),
      status: z.enum(["HEALTHY", "FLAKY", "BROKEN"]),
      codeowners: z.array(z.string()),
      quarantine_setting: z.enum(["ALWAYS_QUARANTINE", "AUTO_QUARANTINE"]),
      quarantined_at: z.iso.datetime(),
      status_last_updated_at: z.iso.datetime(),
      test_case_id: z.uuid(),
      variant: z.string(),
      quarantine_reason: z.string().nullable().describe("why its quarantine setting was last set, when a person gave a reason"),
      status_reason: z.string().describe("the rule that gave its status, with its figures (why detection quarantined it)"),
    }),
  ),
  page: ZPageInfo,
});

export const ZListUnhealthyTestsRequest = z.object({
  repo: ZRepo,
  org_url_slug: ZName,
  page_query: ZPageQuery,
  status: caseInsensitiveEnum(["flaky", "broken"] as const)
    .optional()
    .describe("only tests of this status (FLAKY or BROKEN); omit for both"),
});
export const ZListUnhealthyTestsResponse = z.strictObject({
  unhealthy_tests: z.array(
    z.strictObject({
      name: z.string(),
      parent: z.string(),
      file: z.string(),
      classname: z.string(),
      status: z.enum(["FLAKY", "BROKEN"]),
      codeowners: z.array(z.string()),
      quarantined: z.boolean(),
      status_last_updated_at: z.iso.datetime(),
      test_case_id: z.uuid(),
      variant: z.string(),
    }),
  ),
  page: ZPageInfo,
});

export const ZGetTestDetailsRequest = z.object({ repo: ZRepo, org_url_slug: ZName, test_id: z.uuid() });
export const ZGetTestDetailsResponse = z.strictObject({
  test: ZTestCase,
  history: z.strictObject({
    days: z.array(z.strictObject({ date: z.iso.date(), runs: z.number().int(), failures: z.number().int() })).describe("runs and failed runs per UTC day, the last 30 days, oldest first"),
    pull_requests_impacted: z
      .array(z.strictObject({ number: z.number().int(), html_url: z.string(), failures: z.number().int(), last_failure: z.iso.datetime() }))
      .describe("pull requests the test failed on in the last 7 days, most recent first (at most 50)"),
  }),
});

export const ZCheckQuarantineRequest = z
  .object({
    ...ZTestScope,
    variant: z.string().max(255).trim().check(storableText).default("").describe(TRIMMED),
    test_ids: z.array(z.uuid()).max(10_000).default([]),
    tests: z
      .array(
        z.object({
          name: z.string().max(4096).check(storableText),
          classname: z.string().max(4096).check(storableText).default(""),
          file: z.string().max(4096).check(storableText).default(""),
          parent: z.string().max(4096).check(storableText).default(""),
          id: z.string().max(255).check(storableText).optional(),
          failure: z
            .object({
              type: z.string().max(4096).check(storableText).optional(),
              message: z.string().max(2_000).check(storableText).optional().describe("at most 2,000 characters, as a report's message is read (longer: send its start)"),
              text: z.string().max(4_000).check(storableText).optional().describe("at most 4,000 characters, as a report's failure text is read (longer: send its start)"),
            })
            .optional()
            .describe(
              "how the test failed, as its report says (the failure's type and message attributes and its text): a test quarantined automatically is quarantined for the ways it failed when it was quarantined; one failing another way is left out of quarantined_test_ids and named in new_failure_test_ids",
            ),
        }),
      )
      .max(10_000)
      .default([]),
  })
  .describe("tests named by id or by identity (name, classname, file, parent as in the JUnit report)");
export const ZCheckQuarantineResponse = z.strictObject({
  quarantining_enabled: z.boolean(),
  quarantined_test_ids: z.array(z.uuid()),
  new_failure_test_ids: z.array(z.uuid()).describe("tests quarantined automatically whose given failure is a way they first failed after their quarantine (a flaky test that broke): their failure counts"),
});

export const ZTestCaseResponse = z.strictObject({ test: ZTestCase });
export const ZSetQuarantineSettingRequest = z.object({
  ...ZTestScope,
  test_id: z.uuid(),
  setting: z
    .enum(["always", "never", "auto", "ALWAYS", "NEVER", "AUTO", "ALWAYS_QUARANTINE", "NEVER_QUARANTINE", "AUTO_QUARANTINE"])
    .transform((v) => v.toLowerCase().replace("_quarantine", "") as "always" | "never" | "auto")
    .describe("always or never quarantine this test, or auto (quarantined while flaky)"),
  reason: z.string().max(1000).trim().check(storableText).optional().describe("why (shown with the test; empty or absent clears the previous reason)"),
});
/**
 * Greenline's body ({repo, org_url_slug, test_case_id, ticket_url}) or Trunk's
 * ({repo, test_case_id, external_ticket_id}: docs.trunk.io, "Link a ticket to a test case").
 */
export const ZLinkTicketRequest = z
  .object({
    repo: ZRepo,
    org_url_slug: ZName.optional().describe("the token's organization when absent (Trunk's request has none)"),
    test_case_id: z.uuid(),
    ticket_url: ZLink.nullable().optional().describe("the ticket's http(s) link; null unlinks. Give it or external_ticket_id"),
    external_ticket_id: z
      .string()
      .max(2048)
      .regex(/\S/, "must not be blank")
      .trim()
      .check(storableText)
      .optional()
      .describe(`Trunk's field: the ticket's key (KAN-123), linked through the repository's ticketUrlTemplate (flaky-tests/update-settings), or the ticket's http(s) link. Give it or ticket_url; ${TRIMMED}`),
  })
  .superRefine((value, ctx) => {
    if (value.ticket_url === undefined && value.external_ticket_id === undefined) ctx.addIssue({ code: "custom", path: ["external_ticket_id"], message: "required (or ticket_url)" });
    if (value.ticket_url !== undefined && value.external_ticket_id !== undefined) ctx.addIssue({ code: "custom", path: ["ticket_url"], message: "give ticket_url or external_ticket_id, not both" });
  });

export const ZFlakySettingsRequest = z.object(ZTestScope);
export const ZUpdateFlakySettingsRequest = z.object({
  ...ZTestScope,
  settings: z
    .object({
      ...FLAKY_SETTING_FIELDS,
      ticketUrlTemplate: ZTicketUrlTemplate.nullable().describe(
        `a ticket's http(s) link with ${TICKET_KEY} where its key goes (https://acme.atlassian.net/browse/${TICKET_KEY}): link-ticket-to-test-case links external_ticket_id keys by it; null removes it`,
      ),
    })
    .partial()
    .strict(),
});
export const ZFlakySettingsResponse = z.strictObject({
  settings: z.strictObject({ ...FLAKY_SETTING_FIELDS, ticketUrlTemplate: z.string().optional().describe("absent when the repository sets none") }),
  config_file: z
    .strictObject({
      path: z.string(),
      commit: z.string().describe("the default branch's head it was last read at"),
      fields: z.array(z.string()).describe("the settings it sets: update-settings refuses to change them"),
      error: z.string().nullable().describe("why the file as last read was not applied (the settings it set before stay), naming the field and the rule; null when it was"),
    })
    .optional()
    .describe("the repository's .greenline.yml (its flakyTests settings), read from its default branch at each push to it; absent when never read (no push since the repository's first upload, or not on GitHub)"),
});

/** How far back a backtest replays (days). */
export const BACKTEST_DAYS_MAX = 90;
export const ZBacktestFlakyPolicyRequest = z.object({
  ...ZTestScope,
  since_days: z.number().int().min(1).max(BACKTEST_DAYS_MAX).default(30).describe(`the period replayed: the last this many days (default 30, at most ${BACKTEST_DAYS_MAX})`),
  settings: z.object(FLAKY_SETTING_FIELDS).partial().strict().default({}).describe("the settings to try, each in place of the repository's (flaky-tests/get-settings); absent fields keep the repository's"),
});
const ZBacktestOutcome = z.strictObject({
  tests_flaky: z.number().int().describe("tests flaky at some time in the period"),
  tests_broken: z.number().int().describe("tests broken at its end"),
  tests_quarantined: z.number().int().describe("tests quarantined at its end"),
  tests_ever_quarantined: z.number().int().describe("tests quarantined at some time in the period"),
  quarantines_started: z.number().int(),
  releases: z.number().int().describe("quarantines that ended in the period"),
  failures_excused: z.number().int().describe("failed runs of tests (no attempt passing) their quarantine excused"),
  queue_runs_failed: z.number().int().describe("merge-queue runs in which some test failed (no attempt passing)"),
  queue_runs_excused: z.number().int().describe("of those, runs whose every failure quarantine excused: ejections avoided"),
  regressions_excused: z.number().int().describe("failures excused that were a regression: in a streak of 8 or more failed runs off pull requests on more than one commit, or between its first and last failure"),
  regression_tests: z.number().int().describe("tests with such failures"),
});
const ZBacktestSettings = z.strictObject(FLAKY_SETTING_FIELDS);
const ZBacktestTests = z.strictObject({
  total: z.number().int(),
  tests: z.array(z.strictObject({ id: z.uuid(), name: z.string(), variant: z.string() })).describe("the first 50"),
});
export const ZBacktestFlakyPolicyResponse = z.strictObject({
  period: z.strictObject({ from: z.iso.datetime(), to: z.iso.datetime() }),
  current: z.strictObject({ settings: ZBacktestSettings, outcome: ZBacktestOutcome }),
  proposed: z.strictObject({ settings: ZBacktestSettings, outcome: ZBacktestOutcome }),
  changes: z.strictObject({
    newly_quarantined: ZBacktestTests.describe("tests the proposed settings quarantine at some time in the period and the current never do"),
    no_longer_quarantined: ZBacktestTests.describe("tests the current settings quarantine at some time in the period and the proposed never do"),
    ejections_avoided: z.number().int().describe("queue runs the proposed settings' quarantine excuses and the current's does not"),
    ejections_added: z.number().int().describe("queue runs the current settings' quarantine excuses and the proposed's does not"),
    regressions_hidden: ZBacktestTests.describe("tests with more regression failures excused under the proposed settings than the current"),
  }),
});
