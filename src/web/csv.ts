/** A CSV cell's value: text, a number, or nothing (an empty cell). */
export type CsvValue = string | number | null;

/**
 * One cell as RFC 4180 writes it: quoted when it holds a comma, a quote, a line break or
 * leading/trailing spaces, quotes doubled. Text a spreadsheet would run as a formula (starting
 * with =, +, -, @, a tab or a carriage return: OWASP's "CSV injection") gets a leading ' first,
 * so a PR title or a reason code cannot become a formula; numbers are written as numbers.
 */
export function csvCell(value: CsvValue): string {
  if (value === null) return "";
  if (typeof value === "number") return Number.isFinite(value) ? String(value) : "";
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]|^\s|\s$/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}

/** A CSV document: a header row then the rows, each line ended by CRLF (RFC 4180). */
export function csvOf(header: readonly string[], rows: readonly (readonly CsvValue[])[]): string {
  return [header, ...rows].map((row) => `${row.map(csvCell).join(",")}\r\n`).join("");
}
