/**
 * GitHub Actions expressions (`if:`), evaluated as far as the file alone allows: the contexts a
 * queue's testing commit fixes (the event, its ref, the draft PR) have values; everything else
 * (secrets, variables, outputs, labels, the actor) is unknown, and the answer is then
 * three-valued (Kleene logic: `unknown && false` is false, `unknown || true` is true).
 *
 * The rules followed are GitHub's: loose equality (operands of different types are compared as
 * numbers: null → 0, booleans → 0/1, strings parsed, NaN unequal), strings compared ignoring
 * case, `contains`/`startsWith`/`endsWith` ignoring case, falsy = false, 0, "", null, NaN.
 * Sources: docs.github.com "Evaluate expressions in workflows and actions" (operators,
 * functions, status check functions), noted in docs/preflight.md.
 */

/** A value the file alone does not settle. */
export class Unknown {
  readonly unknown = true;
}
export const UNKNOWN = new Unknown();
export type Value = string | number | boolean | null | readonly Value[] | { readonly [key: string]: Value } | typeof UNKNOWN;

const OPAQUE = Symbol("opaque");

/**
 * A value known to be one thing without being known as text (the repository's name when not
 * given): equal to itself, unknown against anything else, truthy.
 */
export function opaque(name: string): Value {
  return Object.freeze({ [OPAQUE]: name }) as unknown as Value;
}

function isOpaque(value: Value): boolean {
  return typeof value === "object" && value !== null && OPAQUE in value;
}

function containsUnknown(value: Value): boolean {
  if (value === UNKNOWN || isOpaque(value)) return true;
  if (typeof value !== "object" || value === null) return false;
  return (Array.isArray(value) ? value : Object.values(value)).some(containsUnknown);
}

/** What the status functions answer for the job being judged. */
export type StatusFunctions = { success: boolean | typeof UNKNOWN; failure: boolean | typeof UNKNOWN; cancelled: boolean };

export type ExpressionContext = {
  /** A context's value by its dotted path (`github.event_name`), or UNKNOWN. */
  lookup(path: readonly string[]): Value;
  status: StatusFunctions;
};

type Token = { kind: "str" | "num" | "id" | "op" | "punct"; text: string; value?: Value };

export class ExpressionError extends Error {}

function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < source.length) {
    const c = source[i]!;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (c === "'") {
      let text = "";
      i++;
      for (;;) {
        if (i >= source.length) throw new ExpressionError("unterminated string");
        if (source[i] === "'") {
          if (source[i + 1] === "'") {
            text += "'";
            i += 2;
            continue;
          }
          i++;
          break;
        }
        text += source[i++];
      }
      tokens.push({ kind: "str", text, value: text });
      continue;
    }
    const two = source.slice(i, i + 2);
    if (["==", "!=", "<=", ">=", "&&", "||"].includes(two)) {
      tokens.push({ kind: "op", text: two });
      i += 2;
      continue;
    }
    if ("<>!".includes(c)) {
      tokens.push({ kind: "op", text: c });
      i++;
      continue;
    }
    if ("().,[]".includes(c)) {
      tokens.push({ kind: "punct", text: c });
      i++;
      continue;
    }
    const number = /^(0x[0-9a-f]+|-?\d+(\.\d+)?(e[+-]?\d+)?)/i.exec(source.slice(i));
    if (number && (c !== "-" || tokens.length === 0 || tokens.at(-1)!.kind === "op" || tokens.at(-1)!.text === "(" || tokens.at(-1)!.text === ",")) {
      tokens.push({ kind: "num", text: number[0], value: Number(number[0]) });
      i += number[0].length;
      continue;
    }
    const id = /^[A-Za-z_][A-Za-z0-9_-]*/.exec(source.slice(i));
    if (id) {
      tokens.push({ kind: "id", text: id[0] });
      i += id[0].length;
      continue;
    }
    if (c === "*") {
      tokens.push({ kind: "id", text: "*" });
      i++;
      continue;
    }
    throw new ExpressionError(`unexpected ${JSON.stringify(c)}`);
  }
  return tokens;
}

type Node =
  | { kind: "literal"; value: Value }
  | { kind: "path"; path: string[]; dynamic: boolean }
  | { kind: "not"; operand: Node }
  | { kind: "binary"; op: string; left: Node; right: Node }
  | { kind: "call"; name: string; args: Node[] };

function parse(tokens: Token[]): Node {
  let at = 0;
  const peek = () => tokens[at];
  const take = (text?: string) => {
    const token = tokens[at];
    if (!token || (text !== undefined && token.text !== text)) throw new ExpressionError(`expected ${text ?? "more"}`);
    at++;
    return token;
  };
  const binary = (ops: string[], next: () => Node) => (): Node => {
    let left = next();
    while (peek()?.kind === "op" && ops.includes(peek()!.text)) {
      const op = take().text;
      left = { kind: "binary", op, left, right: next() };
    }
    return left;
  };
  const primary = (): Node => {
    const token = take();
    if (token.kind === "str" || token.kind === "num") return { kind: "literal", value: token.value ?? null };
    if (token.kind === "op" && token.text === "!") return { kind: "not", operand: primary() };
    if (token.text === "(") {
      const inner = or();
      take(")");
      return postfix(inner);
    }
    if (token.kind === "id") {
      const word = token.text;
      if (word === "true" || word === "false") return { kind: "literal", value: word === "true" };
      if (word === "null") return { kind: "literal", value: null };
      if (word === "NaN") return { kind: "literal", value: Number.NaN };
      if (word === "Infinity") return { kind: "literal", value: Number.POSITIVE_INFINITY };
      if (peek()?.text === "(") {
        take("(");
        const args: Node[] = [];
        if (peek()?.text !== ")") {
          args.push(or());
          while (peek()?.text === ",") {
            take(",");
            args.push(or());
          }
        }
        take(")");
        return postfix({ kind: "call", name: word.toLowerCase(), args });
      }
      return postfix({ kind: "path", path: [word], dynamic: false });
    }
    throw new ExpressionError(`unexpected ${token.text}`);
  };
  const postfix = (node: Node): Node => {
    let current = node;
    for (;;) {
      if (peek()?.text === ".") {
        take(".");
        const name = take().text;
        current = current.kind === "path" ? { ...current, path: [...current.path, name] } : { kind: "path", path: ["<value>", name], dynamic: true };
        continue;
      }
      if (peek()?.text === "[") {
        take("[");
        const index = or();
        take("]");
        const key = index.kind === "literal" && typeof index.value === "string" ? index.value : null;
        current = current.kind === "path" && key !== null ? { ...current, path: [...current.path, key] } : { kind: "path", path: ["<value>"], dynamic: true };
        continue;
      }
      return current;
    }
  };
  const comparison = binary(["<", ">", "<=", ">="], primary);
  const equality = binary(["==", "!="], comparison);
  const and = binary(["&&"], equality);
  const or = binary(["||"], and);
  const node = or();
  if (at !== tokens.length) throw new ExpressionError(`unexpected ${tokens[at]!.text}`);
  return node;
}

function truthy(value: Value): boolean | typeof UNKNOWN {
  if (value === UNKNOWN) return UNKNOWN;
  if (value === null || value === false || value === "" || value === 0) return false;
  if (typeof value === "number" && Number.isNaN(value)) return false;
  return true;
}

function toNumber(value: Value): number {
  if (value === null) return 0;
  if (typeof value === "boolean") return value ? 1 : 0;
  if (typeof value === "number") return value;
  if (typeof value === "string") return value.trim() === "" ? 0 : Number(value);
  return Number.NaN;
}

function looseEqual(a: Value, b: Value): boolean | typeof UNKNOWN {
  if (a === UNKNOWN || b === UNKNOWN) return UNKNOWN;
  if (isOpaque(a) || isOpaque(b)) return a === b ? true : UNKNOWN;
  if (typeof a === "string" && typeof b === "string") return a.toLowerCase() === b.toLowerCase();
  if (typeof a === typeof b && (typeof a !== "object" || a === null)) return a === b;
  if ((typeof a === "object" && a !== null) || (typeof b === "object" && b !== null)) return a === b;
  const x = toNumber(a);
  const y = toNumber(b);
  return x === y;
}

function text(value: Value): string | typeof UNKNOWN {
  if (value === UNKNOWN) return UNKNOWN;
  if (value === null) return "";
  if (typeof value === "object") return UNKNOWN;
  return String(value);
}

function evaluate(node: Node, context: ExpressionContext): Value {
  switch (node.kind) {
    case "literal":
      return node.value;
    case "path":
      return node.dynamic ? UNKNOWN : context.lookup(node.path);
    case "not": {
      const value = truthy(evaluate(node.operand, context));
      return value === UNKNOWN ? UNKNOWN : !value;
    }
    case "binary": {
      if (node.op === "&&" || node.op === "||") {
        // The operators answer an operand, as GitHub's do; unknown only where it decides.
        const left = evaluate(node.left, context);
        const l = truthy(left);
        if (node.op === "&&" && l === false) return left;
        if (node.op === "||" && l === true) return left;
        const right = evaluate(node.right, context);
        const r = truthy(right);
        if (l === UNKNOWN) {
          if (node.op === "&&" && r === false) return false;
          if (node.op === "||" && r === true) return right;
          return UNKNOWN;
        }
        return right;
      }
      const left = evaluate(node.left, context);
      const right = evaluate(node.right, context);
      if (node.op === "==") return looseEqual(left, right);
      if (node.op === "!=") {
        const equal = looseEqual(left, right);
        return equal === UNKNOWN ? UNKNOWN : !equal;
      }
      if (left === UNKNOWN || right === UNKNOWN) return UNKNOWN;
      const [x, y] = typeof left === "string" && typeof right === "string" ? [left.toLowerCase(), right.toLowerCase()] : [toNumber(left), toNumber(right)];
      if (node.op === "<") return x < y;
      if (node.op === ">") return x > y;
      if (node.op === "<=") return x <= y;
      return x >= y;
    }
    case "call":
      return call(node, context);
  }
}

function call(node: Extract<Node, { kind: "call" }>, context: ExpressionContext): Value {
  const args = node.args.map((arg) => evaluate(arg, context));
  switch (node.name) {
    case "success":
      return context.status.success;
    case "failure":
      return context.status.failure;
    case "cancelled":
      return context.status.cancelled;
    case "always":
      return true;
    case "startswith":
    case "endswith": {
      const a = text(args[0] ?? null);
      const b = text(args[1] ?? null);
      if (typeof a !== "string" || typeof b !== "string") return UNKNOWN;
      return node.name === "startswith" ? a.toLowerCase().startsWith(b.toLowerCase()) : a.toLowerCase().endsWith(b.toLowerCase());
    }
    case "contains": {
      const haystack = args[0] ?? null;
      const needle = args[1] ?? null;
      if (haystack === UNKNOWN || needle === UNKNOWN) return UNKNOWN;
      if (Array.isArray(haystack)) {
        let unknown = false;
        for (const item of haystack) {
          const equal = looseEqual(item, needle);
          if (equal === true) return true;
          if (equal === UNKNOWN) unknown = true;
        }
        return unknown ? UNKNOWN : false;
      }
      const h = text(haystack);
      const n = text(needle);
      if (typeof h !== "string" || typeof n !== "string") return UNKNOWN;
      return h.toLowerCase().includes(n.toLowerCase());
    }
    case "format": {
      const parts = args.map(text);
      if (!parts.every((p): p is string => typeof p === "string")) return UNKNOWN;
      const [pattern, ...rest] = parts;
      return (pattern ?? "").replace(/\{(\d+)\}/g, (_, i: string) => rest[Number(i)] ?? "");
    }
    case "fromjson": {
      const source = text(args[0] ?? null);
      if (typeof source !== "string") return UNKNOWN;
      try {
        return JSON.parse(source) as Value;
      } catch {
        return UNKNOWN;
      }
    }
    case "tojson": {
      const value = args[0] ?? null;
      if (value === UNKNOWN || (typeof value === "object" && value !== null && (isOpaque(value) || containsUnknown(value)))) return UNKNOWN;
      return JSON.stringify(value, null, 2);
    }
    default:
      // join, hashFiles and anything newer: not settled by the file alone.
      return UNKNOWN;
  }
}

/** The longest `if:` condition evaluated (GitHub allows 21,000 characters in an expression; real ones are short). */
const MAX_CONDITION = 4096;

/** An `if:` value as GitHub reads it: `${{ … }}` or a bare expression; a boolean as itself. */
export function conditionSource(raw: unknown): string | null {
  if (raw === undefined || raw === null) return null;
  if (typeof raw === "boolean" || typeof raw === "number") return String(raw);
  if (typeof raw !== "string") return null;
  const trimmed = raw.trim();
  const wrapped = /^\$\{\{([\s\S]*)\}\}$/.exec(trimmed);
  if (wrapped && !wrapped[1]!.includes("}}")) return wrapped[1]!.trim();
  if (trimmed.includes("${{")) return null; // a string with expressions inside is a (truthy) string
  return trimmed;
}

/** Whether an expression calls one of the status functions (then GitHub adds no implicit success()). */
export function usesStatusFunction(source: string): boolean {
  return /\b(success|failure|always|cancelled)\s*\(/i.test(source);
}

/** An `if:` condition's value for the job: true, false, or UNKNOWN when it cannot be settled. */
export function evaluateCondition(raw: unknown, context: ExpressionContext): boolean | Unknown {
  if (raw === undefined || raw === null) return truthy(context.status.success);
  const source = conditionSource(raw);
  // A string with `${{ }}` inside other text is a non-empty string: true, as GitHub reads it.
  if (source === null) return typeof raw === "string" ? true : UNKNOWN;
  // Longer conditions than any workflow needs, or nested past the stack, are not settled.
  if (source.length > MAX_CONDITION) return UNKNOWN;
  let value: boolean | Unknown;
  try {
    value = truthy(evaluate(parse(tokenize(source)), context));
  } catch {
    return UNKNOWN;
  }
  if (usesStatusFunction(source)) return value;
  const success = truthy(context.status.success);
  if (success === false || value === false) return false;
  return success === UNKNOWN || value === UNKNOWN ? UNKNOWN : true;
}
