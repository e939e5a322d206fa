/**
 * The expand/contract rule for PostgreSQL migrations (docs/operations.md, "Upgrades"): while a
 * release's replicas start, the previous release's replicas still run on the same database,
 * so a migration may only add what the previous release can ignore (expand). Removing or
 * tightening (contract) waits for a later release, and only for what the release before it no
 * longer uses; renaming or retyping a column is never one step (add the new one, copy, switch
 * the code, drop the old one a release later).
 *
 * SQLite is embedded in one process (no replicas share its file), so its migrations may rebuild
 * tables as Prisma writes them; both backends' migrations express the same change.
 */

/** A migration's first lines may mark it a contract step: `-- greenline:contract <why it is safe now>`. */
const CONTRACT_MARKER = /^--\s*greenline:contract\b[ \t]*(.*)$/m;

export type Finding = {
  /** "contract": allowed only in a migration marked as a contract step; "refused": never. */
  kind: "contract" | "refused";
  statement: string;
  why: string;
};

/** A table (column null) or column a contract step removes. */
export type Removal = { table: string; column: string | null };

export type MigrationReview = { contract: boolean; contractReason: string; findings: Finding[]; removals: Removal[] };

/** The statements of a migration, comments removed; a `$$ … $$` body and a quoted string stay whole. */
export function splitStatements(sql: string): string[] {
  const statements: string[] = [];
  let current = "";
  let i = 0;
  while (i < sql.length) {
    const rest = sql.slice(i);
    if (rest.startsWith("--")) {
      const end = sql.indexOf("\n", i);
      i = end === -1 ? sql.length : end;
    } else if (rest.startsWith("$$")) {
      const end = sql.indexOf("$$", i + 2);
      const stop = end === -1 ? sql.length : end + 2;
      current += sql.slice(i, stop);
      i = stop;
    } else if (rest.startsWith("'")) {
      let end = i + 1;
      while (end < sql.length && !(sql[end] === "'" && sql[end + 1] !== "'")) end += sql[end] === "'" ? 2 : 1;
      current += sql.slice(i, end + 1);
      i = end + 1;
    } else if (sql[i] === ";") {
      if (current.trim() !== "") statements.push(current.replace(/\s+/g, " ").trim());
      current = "";
      i++;
    } else {
      current += sql[i];
      i++;
    }
  }
  if (current.trim() !== "") statements.push(current.replace(/\s+/g, " ").trim());
  return statements;
}

/** Splits at the commas outside parentheses (an ALTER TABLE's actions). */
function splitActions(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === "(") depth++;
    else if (text[i] === ")") depth--;
    else if (text[i] === "," && depth === 0) {
      parts.push(text.slice(start, i).trim());
      start = i + 1;
    }
  }
  parts.push(text.slice(start).trim());
  return parts;
}

const NAME = `"([^"]+)"`;
const quotedNames = (text: string) => [...text.matchAll(/"([^"]+)"/g)].map((m) => m[1]!);

/** Reviews one PostgreSQL migration against the rule. */
export function reviewMigration(sql: string): MigrationReview {
  const marker = CONTRACT_MARKER.exec(sql);
  const findings: Finding[] = [];
  const removals: Removal[] = [];
  // What this migration itself creates: the previous release cannot be using it yet.
  const newTables = new Set<string>();
  const newColumns = new Set<string>();
  const existing = (table: string, columns: string[]) => !newTables.has(table) && columns.every((column) => !newColumns.has(`${table}.${column}`));
  const contract = (statement: string, why: string) => findings.push({ kind: "contract", statement, why });
  const refuse = (statement: string, why: string) => findings.push({ kind: "refused", statement, why });

  for (const statement of splitStatements(sql)) {
    let m: RegExpExecArray | null;
    if ((m = new RegExp(`^CREATE TABLE (?:IF NOT EXISTS )?${NAME}`, "i").exec(statement))) {
      newTables.add(m[1]!);
    } else if ((m = new RegExp(`^DROP TABLE (?:IF EXISTS )?${NAME}`, "i").exec(statement))) {
      contract(statement, "drops a table");
      removals.push({ table: m[1]!, column: null });
    } else if (/^DROP /i.test(statement)) {
      contract(statement, "drops a schema object (an index may be what an older replica's ON CONFLICT needs)");
    } else if (/^(TRUNCATE|DELETE) /i.test(statement)) {
      contract(statement, "deletes rows an older replica may still read");
    } else if ((m = new RegExp(`^CREATE UNIQUE INDEX (?:CONCURRENTLY )?(?:IF NOT EXISTS )?${NAME} ON (?:ONLY )?${NAME} ?\\((.*)\\)`, "i").exec(statement))) {
      if (existing(m[2]!, quotedNames(m[3]!))) contract(statement, "makes existing columns unique: an older replica's writes may be refused");
    } else if (/^ALTER (TYPE|DOMAIN) /i.test(statement) && /\b(RENAME|DROP)\b/i.test(statement)) {
      refuse(statement, "renames or removes part of a type an older replica reads");
    } else if ((m = new RegExp(`^ALTER TABLE (?:IF EXISTS )?(?:ONLY )?${NAME} (.*)$`, "i").exec(statement))) {
      const table = m[1]!;
      for (const action of splitActions(m[2]!)) reviewAction(table, action);
    }
  }

  function reviewAction(table: string, action: string) {
    const statement = `ALTER TABLE "${table}" ${action}`;
    let m: RegExpExecArray | null;
    if ((m = new RegExp(`^ADD (?:COLUMN )?(?:IF NOT EXISTS )?${NAME} (.*)$`, "i").exec(action))) {
      newColumns.add(`${table}.${m[1]}`);
      // An older replica's INSERT does not name the column: it needs a default.
      if (!newTables.has(table) && /\bNOT NULL\b/i.test(m[2]!) && !/\bDEFAULT\b/i.test(m[2]!) && !/\bGENERATED\b/i.test(m[2]!)) {
        refuse(statement, "adds a NOT NULL column without a default: an older replica's inserts fail");
      }
    } else if (/^RENAME (CONSTRAINT|INDEX) /i.test(action)) {
      // Names of constraints: no query of ours names them.
    } else if (/^RENAME /i.test(action)) {
      refuse(statement, "renames a table or column an older replica uses (add the new one, copy, drop the old one a release later)");
    } else if ((m = new RegExp(`^DROP (?:COLUMN )?(?:IF EXISTS )?${NAME}`, "i").exec(action)) && !/^DROP CONSTRAINT/i.test(action)) {
      contract(statement, "drops a column");
      removals.push({ table, column: m[1]! });
    } else if (/^DROP CONSTRAINT /i.test(action)) {
      contract(statement, "drops a constraint (a unique one may be what an older replica's ON CONFLICT needs)");
    } else if ((m = new RegExp(`^ALTER (?:COLUMN )?${NAME} (?:SET DATA )?TYPE `, "i").exec(action))) {
      refuse(statement, "changes a column's type under an older replica (add a column of the new type, copy, drop the old one a release later)");
    } else if ((m = new RegExp(`^ALTER (?:COLUMN )?${NAME} SET NOT NULL`, "i").exec(action))) {
      if (existing(table, [m[1]!])) contract(statement, "makes a column required: an older replica's writes may leave it empty");
    } else if ((m = new RegExp(`^ALTER (?:COLUMN )?${NAME} DROP DEFAULT`, "i").exec(action))) {
      if (existing(table, [m[1]!])) contract(statement, "drops a default an older replica's inserts rely on");
    } else if (/^ADD CONSTRAINT /i.test(action)) {
      const columns = /(?:FOREIGN KEY|UNIQUE|PRIMARY KEY) ?\(([^)]*)\)/i.exec(action);
      // A constraint on columns this migration adds holds for every older replica's row (it leaves them NULL).
      if (!columns || existing(table, quotedNames(columns[1]!))) contract(statement, "constrains existing columns: an older replica's writes may be refused");
    }
  }

  return { contract: marker !== null, contractReason: marker?.[1]?.trim() ?? "", findings, removals };
}

/** A release's code, as far as a contract step must know: its Prisma schema and its sources mentioning a text. */
export type CodeTree = { name: string; prismaSchema: string; filesMentioning(text: string): string[] };

/** The database name of each model's table and columns, from a Prisma schema (@map/@@map honoured). */
export function tablesOfPrismaSchema(schema: string): Map<string, Set<string>> {
  const tables = new Map<string, Set<string>>();
  for (const model of schema.matchAll(/^model (\w+) \{([\s\S]*?)^\}/gm)) {
    const body = model[2]!;
    const table = /@@map\("([^"]+)"\)/.exec(body)?.[1] ?? model[1]!;
    const columns = new Set<string>();
    for (const line of body.split("\n")) {
      const field = /^\s*(\w+)\s+(\w+)(\[\])?(\?)?(.*)$/.exec(line);
      if (!field || line.trim().startsWith("//") || line.trim().startsWith("@@")) continue;
      // A relation field (its type another model) has no column of its own.
      if (/^[A-Z]/.test(field[2]!) && !["String", "Int", "BigInt", "Float", "Decimal", "Boolean", "DateTime", "Json", "Bytes"].includes(field[2]!)) continue;
      columns.add(/@map\("([^"]+)"\)/.exec(field[5]!)?.[1] ?? field[1]!);
    }
    tables.set(table, columns);
  }
  return tables;
}

/**
 * Why a contract step may not run yet: for each table or column it removes, each code tree
 * (the previous release's, whose replicas still run while it is applied, and this code's)
 * that still has it in its Prisma schema (Prisma's client names every column of a model it
 * reads) or names it, quoted as SQL quotes it, in a source file.
 */
export function stillUsed(removals: Removal[], trees: CodeTree[]): string[] {
  const problems: string[] = [];
  for (const tree of trees) {
    const tables = tablesOfPrismaSchema(tree.prismaSchema);
    for (const { table, column } of removals) {
      const what = column === null ? `table "${table}"` : `column "${table}"."${column}"`;
      if (column === null ? tables.has(table) : tables.get(table)?.has(column)) problems.push(`${tree.name} still has ${what} in its Prisma schema`);
      const files = tree.filesMentioning(`"${column ?? table}"`);
      if (files.length > 0) problems.push(`${tree.name} names ${what} in ${files.join(", ")}`);
    }
  }
  return problems;
}
