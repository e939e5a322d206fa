/** A required check's verdict in people's words (the CLI's doctor and the dashboard's panel). */
export const CHECK_VERDICT_WORDS: Readonly<Record<string, string>> = {
  reports: "reports",
  passes_without_running: "passes without running",
  never: "never reports",
  maybe: "may not report",
  unknown: "cannot tell",
  pull_request_head: "taken from each pull request's head",
};
