import { z } from "zod";
import { ERROR_CODES } from "../../app/errors.js";
import { storableText } from "../../domain/storable.js";

/**
 * What every area's schemas share: the rule of free text, names and repositories, pull request
 * numbers and commits, links and times, and the empty and error answers. Each area's schemas
 * sit beside its operations (queues/, flaky/, outbound/); the same schemas validate requests and
 * generate the OpenAPI document (openapi.ts).
 */

/** An enum that accepts lowercase and UPPERCASE on input and always yields lowercase. */
export function caseInsensitiveEnum<const T extends readonly [string, ...string[]]>(values: T) {
  const accepted = [...values, ...values.map((v) => v.toUpperCase())] as [string, ...string[]];
  return z.enum(accepted).transform((v) => v.toLowerCase() as T[number]);
}

/** The rule of every free-text request field (domain/storable.ts). */
export { storableText };

/**
 * Lengths are checked before surrounding whitespace is trimmed, so the document's maxLength and
 * pattern say exactly what is accepted; trimming is stated in each name's description.
 */
export const TRIMMED = "surrounding whitespace is trimmed";
export const ZName = z.string().max(255).regex(/\S/, "must not be blank").trim().check(storableText).describe(`not blank; ${TRIMMED}`);

export const ZRepo = z.object({
  host: ZName.describe(`repository host name, e.g. github.com; ${TRIMMED}`),
  owner: ZName.describe(`repository owner or organization; ${TRIMMED}`),
  name: ZName.describe(`repository name; ${TRIMMED}`),
});
export type TRepo = z.output<typeof ZRepo>;

/** PR numbers come as integers or, from some CI scripts, as numeric strings: both bounded alike. */
const ZPrNumberValue = z.number().int().min(1).max(2147483647);
export const ZPrNumber = z
  .union(
    [
      ZPrNumberValue,
      z
        .string()
        .regex(/^\d{1,10}$/)
        .transform(Number)
        .pipe(ZPrNumberValue),
    ],
    {
      error: "must be an integer from 1 to 2147483647, or its digits as a string",
    },
  )
  .describe("an integer from 1 to 2147483647, or its decimal digits as a string (the same bounds)");

export const ZPr = z.object({ number: ZPrNumber });
export const ZSha = z.string().regex(/^[0-9a-fA-F]{7,64}$/, "must be a commit sha (hex)");

/** The length is checked before the URL parser trims surrounding whitespace, as the document's maxLength says. */
export const ZLink = z
  .string()
  .max(2048)
  .url({ protocol: /^https?$/ })
  .check(storableText);
export const ZDateTime = z.iso.datetime({ offset: true }).transform((s) => new Date(s));

export const ZEmptyResponse = z.strictObject({}).strict();

export const ZErrorResponse = z.strictObject({
  error: z.strictObject({
    code: z.enum(ERROR_CODES),
    message: z.string(),
    details: z.array(z.strictObject({ path: z.string(), message: z.string() })),
  }),
});

/** Trunk's paging (the flaky-test lists, the audit log): page_query in, page out. */
export const ZPageQuery = z.object({
  page_size: z.number().int().min(1).max(100),
  page_token: z.string().max(1024).check(storableText).default("").describe("a page token this server issued in an earlier answer's page; empty for the first page"),
});

export const ZPageInfo = z.strictObject({
  total_rows: z.number().int(),
  total_pages: z.number().int(),
  next_page_token: z.string(),
  prev_page_token: z.string(),
  last_page_token: z.string(),
  page_index: z.number().int(),
});
