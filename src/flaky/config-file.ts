import type { Services } from "../app/services.js";
import { FileTooLargeError, type RepoRef, repositoryKey } from "../ports/code-host.js";
import { findSettingsSource, lockRepositoryTests, saveSettingsSource } from "../store/flaky-store.js";
import { repositoryByKey } from "../store/repositories.js";
import { changeFlakySettings, loadFlakySettings } from "./status.js";
import { parseDocument } from "yaml";
import { z } from "zod";
import { FLAKY_SETTING_FIELDS, type FlakySettings, ZTicketUrlTemplate } from "../domain/flaky/detection.js";

/**
 * The repository's config file: `.greenline.yml` at the root of its default branch. Its
 * `flakyTests` mapping sets detection and quarantine settings by the names the API uses
 * (flaky-tests/update-settings), each held to the same rule:
 *
 *     flakyTests:
 *       flakyRate: 0.2
 *       autoQuarantine: true
 *       recoveryDays: 14
 *
 * The settings it sets belong to it: the API and the dashboard refuse to change them (400 naming
 * the field), and the others stay theirs.
 */
export const CONFIG_FILE = ".greenline.yml";

/** The largest config file read (bytes): a settings file is a few lines. */
export const CONFIG_FILE_MAX_BYTES = 64 * 1024;

export type FileSettings = Partial<Omit<FlakySettings, "ticketUrlTemplate">> & { ticketUrlTemplate?: string };

const ZConfigFile = z
  .object({
    flakyTests: z
      .object({
        ...FLAKY_SETTING_FIELDS,
        // The API's rule for it.
        ticketUrlTemplate: ZTicketUrlTemplate,
      })
      .partial()
      .strict()
      .nullable(),
  })
  .partial()
  .strict();

export type ConfigFileReading = { ok: true; settings: FileSettings } | { ok: false; error: string };

/**
 * Reads a config file's text: the settings it sets, or what is wrong with it, naming the field
 * and the rule (`flakyTests.flakyRate: must be at most 1`). An empty file, or one without
 * `flakyTests`, sets nothing.
 */
export function readConfigFile(text: string): ConfigFileReading {
  if (new TextEncoder().encode(text).length > CONFIG_FILE_MAX_BYTES) return { ok: false, error: `${CONFIG_FILE}: larger than ${CONFIG_FILE_MAX_BYTES / 1024} KiB` };
  // No aliases expanded past a few (a billion-laughs file stops here), one document only.
  const document = parseDocument(text, { uniqueKeys: true, prettyErrors: false });
  if (document.errors.length > 0) {
    const first = document.errors[0]!;
    const where = first.linePos?.[0] ? ` at line ${first.linePos[0].line}, column ${first.linePos[0].col}` : "";
    return { ok: false, error: `${CONFIG_FILE}: not YAML${where}: ${first.message.split("\n")[0]}` };
  }
  let value: unknown;
  try {
    value = document.toJS({ maxAliasCount: 10 });
  } catch (error) {
    return { ok: false, error: `${CONFIG_FILE}: ${(error as Error).message.split("\n")[0]}` };
  }
  if (value === null || value === undefined) return { ok: true, settings: {} };
  const parsed = ZConfigFile.safeParse(value);
  if (!parsed.success) {
    return {
      ok: false,
      error: parsed.error.issues
        .map((issue) => {
          const path = issue.path.join(".");
          const keys = issue.code === "unrecognized_keys" ? issue.keys.map((k) => (path ? `${path}.${k}` : k)).join(", ") : "";
          return issue.code === "unrecognized_keys"
            ? `${keys}: not a setting (${CONFIG_FILE} takes flakyTests: ${Object.keys(FLAKY_SETTING_FIELDS).join(", ")}, ticketUrlTemplate)`
            : `${path || "(the file)"}: ${issue.message}`;
        })
        .join("; "),
    };
  }
  const settings = parsed.data.flakyTests ?? {};
  if (settings.flakyRate !== undefined && settings.brokenRate !== undefined && settings.flakyRate > settings.brokenRate) {
    return { ok: false, error: "flakyTests.flakyRate: must not exceed brokenRate" };
  }
  return { ok: true, settings: settings as FileSettings };
}

export type ConfigFileOutcome = "applied" | "unchanged" | "refused" | "no_file" | "unknown_repository" | "no_branch";

/**
 * Reads the repository's config file (.greenline.yml) at the head of its default branch and
 * applies its flaky-test settings: the settings it sets become the repository's, and belong to
 * the file (update-settings refuses to change them); tests are re-judged when a value changed.
 * A file that is not valid changes nothing, and its error is kept for get-settings to show; no
 * file hands every setting back to the API. Read at the branch's head, not at the commit a
 * webhook named: a late or reordered push never applies an older file, and a lost one is made
 * up by the next. Only repositories Greenline knows (one that uploaded results) are read.
 */
export async function applyConfigFile(services: Services, repo: RepoRef, defaultBranch: string): Promise<ConfigFileOutcome> {
  const repository = await services.db.read((tx) => repositoryByKey(tx, repositoryKey(repo)));
  if (!repository) return "unknown_repository";
  const head = await services.codeHost.getBranchHead(repo, defaultBranch);
  if (head === null) return "no_branch";
  let reading: ReturnType<typeof readConfigFile> | null;
  try {
    const text = await services.codeHost.readFile(repo, CONFIG_FILE, head, CONFIG_FILE_MAX_BYTES);
    reading = text === null ? null : readConfigFile(text);
  } catch (error) {
    if (!(error instanceof FileTooLargeError)) throw error;
    reading = { ok: false, error: `${CONFIG_FILE}: larger than ${CONFIG_FILE_MAX_BYTES / 1024} KiB` };
  }
  const now = services.now();
  return services.db.sqlTransaction(async (sql) => {
    await lockRepositoryTests(sql, repository.id);
    const current = await loadFlakySettings(sql, repository.id);
    const before = await findSettingsSource(sql, repository.id);
    if (reading === null) {
      await saveSettingsSource(sql, repository.id, { fileSha: head, fileFields: null, fileError: null, filePending: null }, current, now);
      return "no_file";
    }
    if (!reading.ok) {
      // The last valid file's settings stay its own until a valid one (or none) replaces it.
      await saveSettingsSource(sql, repository.id, { fileSha: head, fileFields: before.fileFields, fileError: reading.error, filePending: null }, current, now);
      services.log?.warn({ repo: repository.key, commit: head, error: reading.error }, `${CONFIG_FILE} is not valid; the repository's settings are unchanged`);
      return "refused";
    }
    const merged = { ...current, ...reading.settings };
    if (merged.flakyRate > merged.brokenRate) {
      const error = `flakyTests.flakyRate: must not exceed brokenRate (${merged.flakyRate} > ${merged.brokenRate}${reading.settings.brokenRate === undefined ? ", the repository's own" : ""})`;
      // Kept, to apply when an update-settings makes them fit (updateFlakySettings), not only at the next push.
      await saveSettingsSource(sql, repository.id, { fileSha: head, fileFields: before.fileFields, fileError: error, filePending: reading.settings }, current, now);
      return "refused";
    }
    const changed = Object.entries(reading.settings).some(([name, value]) => current[name as keyof typeof current] !== value);
    if (changed) await changeFlakySettings(sql, repository.id, reading.settings, now);
    await saveSettingsSource(sql, repository.id, { fileSha: head, fileFields: Object.keys(reading.settings).sort(), fileError: null, filePending: null }, current, now);
    return changed ? "applied" : "unchanged";
  });
}
