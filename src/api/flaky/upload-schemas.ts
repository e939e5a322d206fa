import { z } from "zod";
import { storableText, TRIMMED, ZLink, ZName, ZPrNumber, ZRepo, ZSha } from "../shared/schemas.js";

/** The schemas of uploadTestResults (operations.ts): one CI job's JUnit XML reports. */

const MAX_REPORTS = 1000;
/** The most parts one upload may come in (20 MiB each: 20 GiB, past any report). */
export const MAX_PARTS = 1000;
export const ZUploadTestResultsRequest = z.object({
  repo: ZRepo,
  org_url_slug: ZName,
  commit_sha: ZSha,
  branch: ZName,
  pr_number: ZPrNumber.optional(),
  job_url: ZLink.optional().describe("the CI job's http(s) link"),
  check_name: ZName.optional().describe(
    `the CI check (job) the results come from, as the code host names it (a commit status's context, a check run's name): the merge queue reads a failed check's failures from the uploads that name it (docs/flaky-queue.md); ${TRIMMED}`,
  ),
  check_run_id: z
    .number()
    .int()
    .min(1)
    .max(Number.MAX_SAFE_INTEGER)
    .optional()
    .describe("the check run of the CI job the results come from (in GitHub Actions, the job context's check_run_id): attributes them to that check exactly"),
  variant: z.string().max(255).trim().check(storableText).optional().describe(TRIMMED),
  junit_xml: z.array(z.string().min(1, "must not be empty").describe("one JUnit XML report")).min(1).max(MAX_REPORTS).describe("JUnit XML reports, one string each"),
  codeowners: z
    .string()
    .max(1024 * 1024)
    .check(storableText)
    .optional()
    .describe("the repository's CODEOWNERS file; when absent it is read from the code host at commit_sha"),
  part: z
    .object({
      id: z
        .string()
        .min(1)
        .max(128)
        .regex(/^[A-Za-z0-9._:-]+$/, "must be letters, digits, '.', '_', ':' or '-'")
        .describe("the client's id for the set of parts (one per upload: a UUID, or the CI job's id and attempt)"),
      index: z
        .number()
        .int()
        .min(0)
        .max(MAX_PARTS - 1)
        .describe("this part's place, from 0: less than part.count"),
      count: z.number().int().min(1).max(MAX_PARTS).describe(`how many parts the upload has (at most ${MAX_PARTS})`),
    })
    .strict()
    .optional()
    .describe(
      "one part of an upload too large for one request (the CLI splits larger reports): every part gives the same other fields; the parts are kept until the last is in, then stored as one upload whose id every part's answer names; a part sent again is received once; parts that stop coming are stored as they are 30 minutes after the first",
    ),
});
export const ZUploadTestResultsResponse = z.strictObject({
  upload_id: z.string(),
  test_cases: z.number().int().describe("distinct tests in the upload"),
  failures: z.number().int().describe("distinct tests that failed"),
  unnamed_test_cases: z.number().int().describe("testcases with neither name nor classname: not stored, as no test can be followed by them"),
  infrastructure_failure: z.boolean().describe("the upload reads as an infrastructure failure (most tests failed, or one failure across unrelated tests): its failures mark no test flaky or broken"),
  infrastructure_failure_reason: z.string().optional().describe("why, when infrastructure_failure"),
  run: z
    .strictObject({
      id: z.string().describe("the run's testRunId"),
      number: z.number().int().describe("the run's number in its queue (run-<n>)"),
      queue: z.string().describe("the queue's target branch"),
    })
    .optional()
    .describe("the merge-queue run that tested the commit (its testing branch at commit_sha), when there is one"),
  part: z
    .strictObject({
      id: z.string(),
      index: z.number().int(),
      count: z.number().int(),
      received: z.number().int().describe("the set's parts received so far"),
      complete: z.boolean().describe("false: the upload waits for the other parts (test_cases and failures are this part's testcases and failed ones); true: it is stored, and the figures are the whole upload's"),
    })
    .optional()
    .describe("for an upload sent in parts: this part and the set"),
  parts_missing: z.number().int().optional().describe("parts that never came: the upload was stored without them, 30 minutes after its first part"),
});
