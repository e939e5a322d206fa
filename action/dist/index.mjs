var __create = Object.create;
var __defProp = Object.defineProperty;
var __getOwnPropDesc = Object.getOwnPropertyDescriptor;
var __getOwnPropNames = Object.getOwnPropertyNames;
var __getProtoOf = Object.getPrototypeOf;
var __hasOwnProp = Object.prototype.hasOwnProperty;
var __commonJS = (cb, mod) => function __require2() {
  try {
    return mod || (0, cb[__getOwnPropNames(cb)[0]])((mod = { exports: {} }).exports, mod), mod.exports;
  } catch (e) {
    throw mod = 0, e;
  }
};
var __copyProps = (to, from, except, desc) => {
  if (from && typeof from === "object" || typeof from === "function") {
    for (let key of __getOwnPropNames(from))
      if (!__hasOwnProp.call(to, key) && key !== except)
        __defProp(to, key, { get: () => from[key], enumerable: !(desc = __getOwnPropDesc(from, key)) || desc.enumerable });
  }
  return to;
};
var __toESM = (mod, isNodeMode, target) => (target = mod != null ? __create(__getProtoOf(mod)) : {}, __copyProps(
  // If the importer is in node compatibility mode or this is not an ESM
  // file that has been converted to a CommonJS file using a Babel-
  // compatible transform (i.e. "__esModule" has not been set), then set
  // "default" to the CommonJS "module.exports" for node compatibility.
  isNodeMode || !mod || !mod.__esModule ? __defProp(target, "default", { value: mod, enumerable: true }) : target,
  mod
));

// node_modules/picomatch/lib/constants.js
var require_constants = __commonJS({
  "node_modules/picomatch/lib/constants.js"(exports, module) {
    "use strict";
    var WIN_SLASH = "\\\\/";
    var WIN_NO_SLASH = `[^${WIN_SLASH}]`;
    var DEFAULT_MAX_EXTGLOB_RECURSION = 0;
    var DOT_LITERAL = "\\.";
    var PLUS_LITERAL = "\\+";
    var QMARK_LITERAL = "\\?";
    var SLASH_LITERAL = "\\/";
    var ONE_CHAR = "(?=.)";
    var QMARK = "[^/]";
    var END_ANCHOR = `(?:${SLASH_LITERAL}|$)`;
    var START_ANCHOR = `(?:^|${SLASH_LITERAL})`;
    var DOTS_SLASH = `${DOT_LITERAL}{1,2}${END_ANCHOR}`;
    var NO_DOT = `(?!${DOT_LITERAL})`;
    var NO_DOTS = `(?!${START_ANCHOR}${DOTS_SLASH})`;
    var NO_DOT_SLASH = `(?!${DOT_LITERAL}{0,1}${END_ANCHOR})`;
    var NO_DOTS_SLASH = `(?!${DOTS_SLASH})`;
    var QMARK_NO_DOT = `[^.${SLASH_LITERAL}]`;
    var STAR = `${QMARK}*?`;
    var SEP = "/";
    var POSIX_CHARS = {
      DOT_LITERAL,
      PLUS_LITERAL,
      QMARK_LITERAL,
      SLASH_LITERAL,
      ONE_CHAR,
      QMARK,
      END_ANCHOR,
      DOTS_SLASH,
      NO_DOT,
      NO_DOTS,
      NO_DOT_SLASH,
      NO_DOTS_SLASH,
      QMARK_NO_DOT,
      STAR,
      START_ANCHOR,
      SEP
    };
    var WINDOWS_CHARS = {
      ...POSIX_CHARS,
      SLASH_LITERAL: `[${WIN_SLASH}]`,
      QMARK: WIN_NO_SLASH,
      STAR: `${WIN_NO_SLASH}*?`,
      DOTS_SLASH: `${DOT_LITERAL}{1,2}(?:[${WIN_SLASH}]|$)`,
      NO_DOT: `(?!${DOT_LITERAL})`,
      NO_DOTS: `(?!(?:^|[${WIN_SLASH}])${DOT_LITERAL}{1,2}(?:[${WIN_SLASH}]|$))`,
      NO_DOT_SLASH: `(?!${DOT_LITERAL}{0,1}(?:[${WIN_SLASH}]|$))`,
      NO_DOTS_SLASH: `(?!${DOT_LITERAL}{1,2}(?:[${WIN_SLASH}]|$))`,
      QMARK_NO_DOT: `[^.${WIN_SLASH}]`,
      START_ANCHOR: `(?:^|[${WIN_SLASH}])`,
      END_ANCHOR: `(?:[${WIN_SLASH}]|$)`,
      SEP: "\\"
    };
    var POSIX_REGEX_SOURCE = {
      __proto__: null,
      alnum: "a-zA-Z0-9",
      alpha: "a-zA-Z",
      ascii: "\\x00-\\x7F",
      blank: " \\t",
      cntrl: "\\x00-\\x1F\\x7F",
      digit: "0-9",
      graph: "\\x21-\\x7E",
      lower: "a-z",
      print: "\\x20-\\x7E ",
      punct: "\\-!\"#$%&'()\\*+,./:;<=>?@[\\]^_`{|}~",
      space: " \\t\\r\\n\\v\\f",
      upper: "A-Z",
      word: "A-Za-z0-9_",
      xdigit: "A-Fa-f0-9"
    };
    module.exports = {
      DEFAULT_MAX_EXTGLOB_RECURSION,
      MAX_LENGTH: 1024 * 64,
      POSIX_REGEX_SOURCE,
      // regular expressions
      REGEX_BACKSLASH: /\\(?![*+?^${}(|)[\]])/g,
      REGEX_NON_SPECIAL_CHARS: /^[^@![\].,$*+?^{}()|\\/]+/,
      REGEX_SPECIAL_CHARS: /[-*+?.^${}(|)[\]]/,
      REGEX_SPECIAL_CHARS_BACKREF: /(\\?)((\W)(\3*))/g,
      REGEX_SPECIAL_CHARS_GLOBAL: /([-*+?.^${}(|)[\]])/g,
      REGEX_REMOVE_BACKSLASH: /(?:\[.*?[^\\]\]|\\(?=.))/g,
      // Replace globs with equivalent patterns to reduce parsing time.
      REPLACEMENTS: {
        __proto__: null,
        "***": "*",
        "**/**": "**",
        "**/**/**": "**"
      },
      // Digits
      CHAR_0: 48,
      /* 0 */
      CHAR_9: 57,
      /* 9 */
      // Alphabet chars.
      CHAR_UPPERCASE_A: 65,
      /* A */
      CHAR_LOWERCASE_A: 97,
      /* a */
      CHAR_UPPERCASE_Z: 90,
      /* Z */
      CHAR_LOWERCASE_Z: 122,
      /* z */
      CHAR_LEFT_PARENTHESES: 40,
      /* ( */
      CHAR_RIGHT_PARENTHESES: 41,
      /* ) */
      CHAR_ASTERISK: 42,
      /* * */
      // Non-alphabetic chars.
      CHAR_AMPERSAND: 38,
      /* & */
      CHAR_AT: 64,
      /* @ */
      CHAR_BACKWARD_SLASH: 92,
      /* \ */
      CHAR_CARRIAGE_RETURN: 13,
      /* \r */
      CHAR_CIRCUMFLEX_ACCENT: 94,
      /* ^ */
      CHAR_COLON: 58,
      /* : */
      CHAR_COMMA: 44,
      /* , */
      CHAR_DOT: 46,
      /* . */
      CHAR_DOUBLE_QUOTE: 34,
      /* " */
      CHAR_EQUAL: 61,
      /* = */
      CHAR_EXCLAMATION_MARK: 33,
      /* ! */
      CHAR_FORM_FEED: 12,
      /* \f */
      CHAR_FORWARD_SLASH: 47,
      /* / */
      CHAR_GRAVE_ACCENT: 96,
      /* ` */
      CHAR_HASH: 35,
      /* # */
      CHAR_HYPHEN_MINUS: 45,
      /* - */
      CHAR_LEFT_ANGLE_BRACKET: 60,
      /* < */
      CHAR_LEFT_CURLY_BRACE: 123,
      /* { */
      CHAR_LEFT_SQUARE_BRACKET: 91,
      /* [ */
      CHAR_LINE_FEED: 10,
      /* \n */
      CHAR_NO_BREAK_SPACE: 160,
      /* \u00A0 */
      CHAR_PERCENT: 37,
      /* % */
      CHAR_PLUS: 43,
      /* + */
      CHAR_QUESTION_MARK: 63,
      /* ? */
      CHAR_RIGHT_ANGLE_BRACKET: 62,
      /* > */
      CHAR_RIGHT_CURLY_BRACE: 125,
      /* } */
      CHAR_RIGHT_SQUARE_BRACKET: 93,
      /* ] */
      CHAR_SEMICOLON: 59,
      /* ; */
      CHAR_SINGLE_QUOTE: 39,
      /* ' */
      CHAR_SPACE: 32,
      /*   */
      CHAR_TAB: 9,
      /* \t */
      CHAR_UNDERSCORE: 95,
      /* _ */
      CHAR_VERTICAL_LINE: 124,
      /* | */
      CHAR_ZERO_WIDTH_NOBREAK_SPACE: 65279,
      /* \uFEFF */
      /**
       * Create EXTGLOB_CHARS
       */
      extglobChars(chars) {
        return {
          "!": { type: "negate", open: "(?:(?!(?:", close: `))${chars.STAR})` },
          "?": { type: "qmark", open: "(?:", close: ")?" },
          "+": { type: "plus", open: "(?:", close: ")+" },
          "*": { type: "star", open: "(?:", close: ")*" },
          "@": { type: "at", open: "(?:", close: ")" }
        };
      },
      /**
       * Create GLOB_CHARS
       */
      globChars(win32) {
        return win32 === true ? WINDOWS_CHARS : POSIX_CHARS;
      }
    };
  }
});

// node_modules/picomatch/lib/utils.js
var require_utils = __commonJS({
  "node_modules/picomatch/lib/utils.js"(exports) {
    "use strict";
    var {
      REGEX_BACKSLASH,
      REGEX_REMOVE_BACKSLASH,
      REGEX_SPECIAL_CHARS,
      REGEX_SPECIAL_CHARS_GLOBAL
    } = require_constants();
    exports.isObject = (val) => val !== null && typeof val === "object" && !Array.isArray(val);
    exports.hasRegexChars = (str) => REGEX_SPECIAL_CHARS.test(str);
    exports.isRegexChar = (str) => str.length === 1 && exports.hasRegexChars(str);
    exports.escapeRegex = (str) => str.replace(REGEX_SPECIAL_CHARS_GLOBAL, "\\$1");
    exports.toPosixSlashes = (str) => str.replace(REGEX_BACKSLASH, "/");
    exports.isWindows = () => {
      if (typeof navigator !== "undefined" && navigator.platform) {
        const platform = navigator.platform.toLowerCase();
        return platform === "win32" || platform === "windows";
      }
      if (typeof process !== "undefined" && process.platform) {
        return process.platform === "win32";
      }
      return false;
    };
    exports.removeBackslashes = (str) => {
      return str.replace(REGEX_REMOVE_BACKSLASH, (match) => {
        return match === "\\" ? "" : match;
      });
    };
    exports.escapeLast = (input, char, lastIdx) => {
      const idx = input.lastIndexOf(char, lastIdx);
      if (idx === -1) return input;
      if (input[idx - 1] === "\\") return exports.escapeLast(input, char, idx - 1);
      return `${input.slice(0, idx)}\\${input.slice(idx)}`;
    };
    exports.removePrefix = (input, state = {}) => {
      let output = input;
      if (output.startsWith("./")) {
        output = output.slice(2);
        state.prefix = "./";
      }
      return output;
    };
    exports.wrapOutput = (input, state = {}, options = {}) => {
      const prepend = options.contains ? "" : "^";
      const append = options.contains ? "" : "$";
      let output = `${prepend}(?:${input})${append}`;
      if (state.negated === true) {
        output = `(?:^(?!${output}).*$)`;
      }
      return output;
    };
    exports.basename = (path, { windows } = {}) => {
      const segs = path.split(windows ? /[\\/]/ : "/");
      const last = segs[segs.length - 1];
      if (last === "") {
        return segs[segs.length - 2];
      }
      return last;
    };
  }
});

// node_modules/picomatch/lib/scan.js
var require_scan = __commonJS({
  "node_modules/picomatch/lib/scan.js"(exports, module) {
    "use strict";
    var utils = require_utils();
    var {
      CHAR_ASTERISK,
      /* * */
      CHAR_AT,
      /* @ */
      CHAR_BACKWARD_SLASH,
      /* \ */
      CHAR_COMMA,
      /* , */
      CHAR_DOT,
      /* . */
      CHAR_EXCLAMATION_MARK,
      /* ! */
      CHAR_FORWARD_SLASH,
      /* / */
      CHAR_LEFT_CURLY_BRACE,
      /* { */
      CHAR_LEFT_PARENTHESES,
      /* ( */
      CHAR_LEFT_SQUARE_BRACKET,
      /* [ */
      CHAR_PLUS,
      /* + */
      CHAR_QUESTION_MARK,
      /* ? */
      CHAR_RIGHT_CURLY_BRACE,
      /* } */
      CHAR_RIGHT_PARENTHESES,
      /* ) */
      CHAR_RIGHT_SQUARE_BRACKET
      /* ] */
    } = require_constants();
    var isPathSeparator = (code) => {
      return code === CHAR_FORWARD_SLASH || code === CHAR_BACKWARD_SLASH;
    };
    var depth = (token) => {
      if (token.isPrefix !== true) {
        token.depth = token.isGlobstar ? Infinity : 1;
      }
    };
    var scan2 = (input, options) => {
      const opts = options || {};
      const length = input.length - 1;
      const scanToEnd = opts.parts === true || opts.tokens === true || opts.scanToEnd === true;
      const slashes = [];
      const tokens = [];
      const parts = [];
      let str = input;
      let index = -1;
      let start = 0;
      let lastIndex = 0;
      let isBrace = false;
      let isBracket = false;
      let isGlob = false;
      let isExtglob = false;
      let isGlobstar = false;
      let braceEscaped = false;
      let backslashes = false;
      let negated = false;
      let negatedExtglob = false;
      let finished = false;
      let braces = 0;
      let prev;
      let code;
      let token = { value: "", depth: 0, isGlob: false };
      const eos = () => index >= length;
      const peek = () => str.charCodeAt(index + 1);
      const advance = () => {
        prev = code;
        return str.charCodeAt(++index);
      };
      while (index < length) {
        code = advance();
        let next;
        if (code === CHAR_BACKWARD_SLASH) {
          backslashes = token.backslashes = true;
          code = advance();
          if (code === CHAR_LEFT_CURLY_BRACE) {
            braceEscaped = true;
          }
          continue;
        }
        if (braceEscaped === true || code === CHAR_LEFT_CURLY_BRACE) {
          braces++;
          while (eos() !== true && (code = advance())) {
            if (code === CHAR_BACKWARD_SLASH) {
              backslashes = token.backslashes = true;
              advance();
              continue;
            }
            if (code === CHAR_LEFT_CURLY_BRACE) {
              braces++;
              continue;
            }
            if (braceEscaped !== true && code === CHAR_DOT && (code = advance()) === CHAR_DOT) {
              isBrace = token.isBrace = true;
              isGlob = token.isGlob = true;
              finished = true;
              if (scanToEnd === true) {
                continue;
              }
              break;
            }
            if (braceEscaped !== true && code === CHAR_COMMA) {
              isBrace = token.isBrace = true;
              isGlob = token.isGlob = true;
              finished = true;
              if (scanToEnd === true) {
                continue;
              }
              break;
            }
            if (code === CHAR_RIGHT_CURLY_BRACE) {
              braces--;
              if (braces === 0) {
                braceEscaped = false;
                isBrace = token.isBrace = true;
                finished = true;
                break;
              }
            }
          }
          if (scanToEnd === true) {
            continue;
          }
          break;
        }
        if (code === CHAR_FORWARD_SLASH) {
          slashes.push(index);
          tokens.push(token);
          token = { value: "", depth: 0, isGlob: false };
          if (finished === true) continue;
          if (prev === CHAR_DOT && index === start + 1) {
            start += 2;
            continue;
          }
          lastIndex = index + 1;
          continue;
        }
        if (opts.noext !== true) {
          const isExtglobChar = code === CHAR_PLUS || code === CHAR_AT || code === CHAR_ASTERISK || code === CHAR_QUESTION_MARK || code === CHAR_EXCLAMATION_MARK;
          if (isExtglobChar === true && peek() === CHAR_LEFT_PARENTHESES) {
            isGlob = token.isGlob = true;
            isExtglob = token.isExtglob = true;
            finished = true;
            if (code === CHAR_EXCLAMATION_MARK && index === start) {
              negatedExtglob = true;
            }
            if (scanToEnd === true) {
              let parens = 0;
              while (eos() !== true && (code = advance())) {
                if (code === CHAR_BACKWARD_SLASH) {
                  backslashes = token.backslashes = true;
                  advance();
                  continue;
                }
                if (code === CHAR_LEFT_PARENTHESES) {
                  parens++;
                  continue;
                }
                if (code === CHAR_RIGHT_PARENTHESES && --parens === 0) {
                  finished = true;
                  break;
                }
              }
              continue;
            }
            break;
          }
        }
        if (code === CHAR_ASTERISK) {
          if (prev === CHAR_ASTERISK) isGlobstar = token.isGlobstar = true;
          isGlob = token.isGlob = true;
          finished = true;
          if (scanToEnd === true) {
            continue;
          }
          break;
        }
        if (code === CHAR_QUESTION_MARK) {
          isGlob = token.isGlob = true;
          finished = true;
          if (scanToEnd === true) {
            continue;
          }
          break;
        }
        if (code === CHAR_LEFT_SQUARE_BRACKET) {
          while (eos() !== true && (next = advance())) {
            if (next === CHAR_BACKWARD_SLASH) {
              backslashes = token.backslashes = true;
              advance();
              continue;
            }
            if (next === CHAR_RIGHT_SQUARE_BRACKET) {
              isBracket = token.isBracket = true;
              isGlob = token.isGlob = true;
              finished = true;
              break;
            }
          }
          if (scanToEnd === true) {
            continue;
          }
          break;
        }
        if (opts.nonegate !== true && code === CHAR_EXCLAMATION_MARK && index === start) {
          negated = token.negated = true;
          start++;
          continue;
        }
        if (opts.noparen !== true && code === CHAR_LEFT_PARENTHESES) {
          isGlob = token.isGlob = true;
          if (scanToEnd === true) {
            let parens = 1;
            while (eos() !== true && (code = advance())) {
              if (code === CHAR_BACKWARD_SLASH) {
                backslashes = token.backslashes = true;
                advance();
                continue;
              }
              if (code === CHAR_LEFT_PARENTHESES) {
                parens++;
                continue;
              }
              if (code === CHAR_RIGHT_PARENTHESES && --parens === 0) {
                finished = true;
                break;
              }
            }
            continue;
          }
          break;
        }
        if (isGlob === true) {
          finished = true;
          if (scanToEnd === true) {
            continue;
          }
          break;
        }
      }
      if (opts.noext === true) {
        isExtglob = false;
        isGlob = false;
      }
      let base = str;
      let prefix = "";
      let glob2 = "";
      if (start > 0) {
        prefix = str.slice(0, start);
        str = str.slice(start);
        lastIndex -= start;
      }
      if (base && isGlob === true && lastIndex > 0) {
        base = str.slice(0, lastIndex);
        glob2 = str.slice(lastIndex);
      } else if (isGlob === true) {
        base = "";
        glob2 = str;
      } else {
        base = str;
      }
      if (base && base !== "" && base !== "/" && base !== str) {
        if (isPathSeparator(base.charCodeAt(base.length - 1))) {
          base = base.slice(0, -1);
        }
      }
      if (opts.unescape === true) {
        if (glob2) glob2 = utils.removeBackslashes(glob2);
        if (base && backslashes === true) {
          base = utils.removeBackslashes(base);
        }
      }
      const state = {
        prefix,
        input,
        start,
        base,
        glob: glob2,
        isBrace,
        isBracket,
        isGlob,
        isExtglob,
        isGlobstar,
        negated,
        negatedExtglob
      };
      if (opts.tokens === true) {
        state.maxDepth = 0;
        if (!isPathSeparator(code)) {
          tokens.push(token);
        }
        state.tokens = tokens;
      }
      if (opts.parts === true || opts.tokens === true) {
        let prevIndex;
        for (let idx = 0; idx < slashes.length; idx++) {
          const n2 = prevIndex !== void 0 ? prevIndex + 1 : start;
          const i = slashes[idx];
          const value2 = input.slice(n2, i);
          if (opts.tokens) {
            if (idx === 0 && start !== 0) {
              tokens[idx].isPrefix = true;
              tokens[idx].value = prefix;
            } else {
              tokens[idx].value = value2;
            }
            depth(tokens[idx]);
            state.maxDepth += tokens[idx].depth;
          }
          if (i >= start) {
            parts.push(value2);
            prevIndex = i;
          }
        }
        const n = prevIndex !== void 0 ? prevIndex + 1 : start;
        const value = input.slice(n);
        parts.push(value);
        if (opts.tokens && prevIndex && prevIndex + 1 < input.length) {
          tokens[tokens.length - 1].value = value;
          depth(tokens[tokens.length - 1]);
          state.maxDepth += tokens[tokens.length - 1].depth;
        }
        state.slashes = slashes;
        state.parts = parts;
      }
      return state;
    };
    module.exports = scan2;
  }
});

// node_modules/picomatch/lib/parse.js
var require_parse = __commonJS({
  "node_modules/picomatch/lib/parse.js"(exports, module) {
    "use strict";
    var constants2 = require_constants();
    var utils = require_utils();
    var {
      MAX_LENGTH,
      POSIX_REGEX_SOURCE,
      REGEX_NON_SPECIAL_CHARS,
      REGEX_SPECIAL_CHARS_BACKREF,
      REPLACEMENTS
    } = constants2;
    var expandRange = (args, options) => {
      if (typeof options.expandRange === "function") {
        return options.expandRange(...args, options);
      }
      args.sort();
      const value = `[${args.join("-")}]`;
      try {
        new RegExp(value);
      } catch (ex) {
        return args.map((v) => utils.escapeRegex(v)).join("..");
      }
      return value;
    };
    var syntaxError = (type, char) => {
      return `Missing ${type}: "${char}" - use "\\\\${char}" to match literal characters`;
    };
    var splitTopLevel = (input) => {
      const parts = [];
      let bracket = 0;
      let paren = 0;
      let quote = 0;
      let value = "";
      let escaped = false;
      for (const ch of input) {
        if (escaped === true) {
          value += ch;
          escaped = false;
          continue;
        }
        if (ch === "\\") {
          value += ch;
          escaped = true;
          continue;
        }
        if (ch === '"') {
          quote = quote === 1 ? 0 : 1;
          value += ch;
          continue;
        }
        if (quote === 0) {
          if (ch === "[") {
            bracket++;
          } else if (ch === "]" && bracket > 0) {
            bracket--;
          } else if (bracket === 0) {
            if (ch === "(") {
              paren++;
            } else if (ch === ")" && paren > 0) {
              paren--;
            } else if (ch === "|" && paren === 0) {
              parts.push(value);
              value = "";
              continue;
            }
          }
        }
        value += ch;
      }
      parts.push(value);
      return parts;
    };
    var isPlainBranch = (branch) => {
      let escaped = false;
      for (const ch of branch) {
        if (escaped === true) {
          escaped = false;
          continue;
        }
        if (ch === "\\") {
          escaped = true;
          continue;
        }
        if (/[?*+@!()[\]{}]/.test(ch)) {
          return false;
        }
      }
      return true;
    };
    var normalizeSimpleBranch = (branch) => {
      let value = branch.trim();
      let changed = true;
      while (changed === true) {
        changed = false;
        if (/^@\([^\\()[\]{}|]+\)$/.test(value)) {
          value = value.slice(2, -1);
          changed = true;
        }
      }
      if (!isPlainBranch(value)) {
        return;
      }
      return value.replace(/\\(.)/g, "$1");
    };
    var hasRepeatedCharPrefixOverlap = (branches) => {
      const values = branches.map(normalizeSimpleBranch).filter(Boolean);
      for (let i = 0; i < values.length; i++) {
        for (let j = i + 1; j < values.length; j++) {
          const a = values[i];
          const b = values[j];
          const char = a[0];
          if (!char || a !== char.repeat(a.length) || b !== char.repeat(b.length)) {
            continue;
          }
          if (a === b || a.startsWith(b) || b.startsWith(a)) {
            return true;
          }
        }
      }
      return false;
    };
    var parseRepeatedExtglob = (pattern, requireEnd = true) => {
      if (pattern[0] !== "+" && pattern[0] !== "*" || pattern[1] !== "(") {
        return;
      }
      let bracket = 0;
      let paren = 0;
      let quote = 0;
      let escaped = false;
      for (let i = 1; i < pattern.length; i++) {
        const ch = pattern[i];
        if (escaped === true) {
          escaped = false;
          continue;
        }
        if (ch === "\\") {
          escaped = true;
          continue;
        }
        if (ch === '"') {
          quote = quote === 1 ? 0 : 1;
          continue;
        }
        if (quote === 1) {
          continue;
        }
        if (ch === "[") {
          bracket++;
          continue;
        }
        if (ch === "]" && bracket > 0) {
          bracket--;
          continue;
        }
        if (bracket > 0) {
          continue;
        }
        if (ch === "(") {
          paren++;
          continue;
        }
        if (ch === ")") {
          paren--;
          if (paren === 0) {
            if (requireEnd === true && i !== pattern.length - 1) {
              return;
            }
            return {
              type: pattern[0],
              body: pattern.slice(2, i),
              end: i
            };
          }
        }
      }
    };
    var buildCharClassStar = (chars) => {
      const source = chars.length === 1 ? utils.escapeRegex(chars[0]) : `[${chars.map((ch) => utils.escapeRegex(ch)).join("")}]`;
      return `${source}*`;
    };
    var getStarExtglobSequenceChars = (pattern) => {
      let index = 0;
      const chars = [];
      while (index < pattern.length) {
        const match = parseRepeatedExtglob(pattern.slice(index), false);
        if (!match || match.type !== "*") {
          return;
        }
        const branches = splitTopLevel(match.body).map((branch2) => branch2.trim());
        if (branches.length !== 1) {
          return;
        }
        const branch = normalizeSimpleBranch(branches[0]);
        if (!branch || branch.length !== 1) {
          return;
        }
        chars.push(branch);
        index += match.end + 1;
      }
      if (chars.length < 1) {
        return;
      }
      return chars;
    };
    var repeatedExtglobRecursion = (pattern) => {
      let depth = 0;
      let value = pattern.trim();
      let match = parseRepeatedExtglob(value);
      while (match) {
        depth++;
        value = match.body.trim();
        match = parseRepeatedExtglob(value);
      }
      return depth;
    };
    var analyzeRepeatedExtglob = (body, options) => {
      if (options.maxExtglobRecursion === false) {
        return { risky: false };
      }
      const max = typeof options.maxExtglobRecursion === "number" ? options.maxExtglobRecursion : constants2.DEFAULT_MAX_EXTGLOB_RECURSION;
      const branches = splitTopLevel(body).map((branch) => branch.trim());
      if (branches.length > 1) {
        if (branches.some((branch) => branch === "") || branches.some((branch) => /^[*?]+$/.test(branch)) || hasRepeatedCharPrefixOverlap(branches)) {
          return { risky: true };
        }
      }
      const safeChars = [];
      let sawStarSequence = false;
      let combinable = true;
      for (const branch of branches) {
        const chars = getStarExtglobSequenceChars(branch);
        if (chars) {
          sawStarSequence = true;
          safeChars.push(...chars);
          continue;
        }
        const literal = normalizeSimpleBranch(branch);
        if (literal && literal.length === 1) {
          safeChars.push(literal);
          continue;
        }
        combinable = false;
        if (repeatedExtglobRecursion(branch) > max) {
          return { risky: true };
        }
      }
      if (sawStarSequence) {
        return combinable ? { risky: true, safeOutput: buildCharClassStar([...new Set(safeChars)]) } : { risky: true };
      }
      return { risky: false };
    };
    var parse = (input, options) => {
      if (typeof input !== "string") {
        throw new TypeError("Expected a string");
      }
      input = REPLACEMENTS[input] || input;
      const opts = { ...options };
      const max = typeof opts.maxLength === "number" ? Math.min(MAX_LENGTH, opts.maxLength) : MAX_LENGTH;
      let len = input.length;
      if (len > max) {
        throw new SyntaxError(`Input length: ${len}, exceeds maximum allowed length: ${max}`);
      }
      const bos = { type: "bos", value: "", output: opts.prepend || "" };
      const tokens = [bos];
      const capture = opts.capture ? "" : "?:";
      const PLATFORM_CHARS = constants2.globChars(opts.windows);
      const EXTGLOB_CHARS = constants2.extglobChars(PLATFORM_CHARS);
      const {
        DOT_LITERAL,
        PLUS_LITERAL,
        SLASH_LITERAL,
        ONE_CHAR,
        DOTS_SLASH,
        NO_DOT,
        NO_DOT_SLASH,
        NO_DOTS_SLASH,
        QMARK,
        QMARK_NO_DOT,
        STAR,
        START_ANCHOR
      } = PLATFORM_CHARS;
      const globstar = (opts2) => {
        return `(${capture}(?:(?!${START_ANCHOR}${opts2.dot ? DOTS_SLASH : DOT_LITERAL}).)*?)`;
      };
      const nodot = opts.dot ? "" : NO_DOT;
      const qmarkNoDot = opts.dot ? QMARK : QMARK_NO_DOT;
      let star = opts.bash === true ? globstar(opts) : STAR;
      if (opts.capture) {
        star = `(${star})`;
      }
      if (typeof opts.noext === "boolean") {
        opts.noextglob = opts.noext;
      }
      const state = {
        input,
        index: -1,
        start: 0,
        dot: opts.dot === true,
        consumed: "",
        output: "",
        prefix: "",
        backtrack: false,
        negated: false,
        brackets: 0,
        braces: 0,
        parens: 0,
        quotes: 0,
        globstar: false,
        tokens
      };
      input = utils.removePrefix(input, state);
      len = input.length;
      const extglobs = [];
      const braces = [];
      const stack = [];
      let prev = bos;
      let value;
      const eos = () => state.index === len - 1;
      const peek = state.peek = (n = 1) => input[state.index + n];
      const advance = state.advance = () => input[++state.index] || "";
      const remaining = () => input.slice(state.index + 1);
      const consume = (value2 = "", num = 0) => {
        state.consumed += value2;
        state.index += num;
      };
      const append = (token) => {
        state.output += token.output != null ? token.output : token.value;
        consume(token.value);
      };
      const negate = () => {
        let count = 1;
        while (peek() === "!" && (peek(2) !== "(" || peek(3) === "?")) {
          advance();
          state.start++;
          count++;
        }
        if (count % 2 === 0) {
          return false;
        }
        state.negated = true;
        state.start++;
        return true;
      };
      const increment = (type) => {
        state[type]++;
        stack.push(type);
      };
      const decrement = (type) => {
        state[type]--;
        stack.pop();
      };
      const push = (tok) => {
        if (prev.type === "globstar") {
          const isBrace = state.braces > 0 && (tok.type === "comma" || tok.type === "brace");
          const isExtglob = tok.extglob === true || extglobs.length && (tok.type === "pipe" || tok.type === "paren");
          if (tok.type !== "slash" && tok.type !== "paren" && !isBrace && !isExtglob) {
            state.output = state.output.slice(0, -prev.output.length);
            prev.type = "star";
            prev.value = "*";
            prev.output = star;
            state.output += prev.output;
          }
        }
        if (extglobs.length && tok.type !== "paren") {
          extglobs[extglobs.length - 1].inner += tok.value;
        }
        if (tok.value || tok.output) append(tok);
        if (prev && prev.type === "text" && tok.type === "text") {
          prev.output = (prev.output || prev.value) + tok.value;
          prev.value += tok.value;
          return;
        }
        tok.prev = prev;
        tokens.push(tok);
        prev = tok;
      };
      const extglobOpen = (type, value2) => {
        const token = { ...EXTGLOB_CHARS[value2], conditions: 1, inner: "" };
        token.prev = prev;
        token.parens = state.parens;
        token.output = state.output;
        token.startIndex = state.index;
        token.tokensIndex = tokens.length;
        const output = (opts.capture ? "(" : "") + token.open;
        increment("parens");
        push({ type, value: value2, output: state.output ? "" : ONE_CHAR });
        push({ type: "paren", extglob: true, value: advance(), output });
        extglobs.push(token);
      };
      const extglobClose = (token) => {
        const literal = input.slice(token.startIndex, state.index + 1);
        const body = input.slice(token.startIndex + 2, state.index);
        const analysis = analyzeRepeatedExtglob(body, opts);
        if ((token.type === "plus" || token.type === "star") && analysis.risky) {
          const safeOutput = analysis.safeOutput ? (token.output ? "" : ONE_CHAR) + (opts.capture ? `(${analysis.safeOutput})` : analysis.safeOutput) : void 0;
          const open = tokens[token.tokensIndex];
          open.type = "text";
          open.value = literal;
          open.output = safeOutput || utils.escapeRegex(literal);
          for (let i = token.tokensIndex + 1; i < tokens.length; i++) {
            tokens[i].value = "";
            tokens[i].output = "";
            delete tokens[i].suffix;
          }
          state.output = token.output + open.output;
          state.backtrack = true;
          push({ type: "paren", extglob: true, value, output: "" });
          decrement("parens");
          return;
        }
        let output = token.close + (opts.capture ? ")" : "");
        let rest;
        if (token.type === "negate") {
          let extglobStar = star;
          if (token.inner && token.inner.length > 1 && token.inner.includes("/")) {
            extglobStar = globstar(opts);
          }
          if (extglobStar !== star || eos() || /^\)+$/.test(remaining())) {
            output = token.close = `)$))${extglobStar}`;
          }
          if (token.inner.includes("*") && (rest = remaining()) && /^\.[^\\/.]+$/.test(rest)) {
            const expression = parse(rest, { ...options, fastpaths: false }).output;
            output = token.close = `)${expression})${extglobStar})`;
          }
          if (token.prev.type === "bos") {
            state.negatedExtglob = true;
          }
        }
        push({ type: "paren", extglob: true, value, output });
        decrement("parens");
      };
      if (opts.fastpaths !== false && !/(^[*!]|[/()[\]{}"])/.test(input)) {
        let backslashes = false;
        let output = input.replace(REGEX_SPECIAL_CHARS_BACKREF, (m, esc, chars, first, rest, index) => {
          if (first === "\\") {
            backslashes = true;
            return m;
          }
          if (first === "?") {
            if (esc) {
              return esc + first + (rest ? QMARK.repeat(rest.length) : "");
            }
            if (index === 0) {
              return qmarkNoDot + (rest ? QMARK.repeat(rest.length) : "");
            }
            return QMARK.repeat(chars.length);
          }
          if (first === ".") {
            return DOT_LITERAL.repeat(chars.length);
          }
          if (first === "*") {
            if (esc) {
              return esc + first + (rest ? star : "");
            }
            return star;
          }
          return esc ? m : `\\${m}`;
        });
        if (backslashes === true) {
          if (opts.unescape === true) {
            output = output.replace(/\\/g, "");
          } else {
            output = output.replace(/\\+/g, (m) => {
              return m.length % 2 === 0 ? "\\\\" : m ? "\\" : "";
            });
          }
        }
        if (output === input && opts.contains === true) {
          state.output = input;
          return state;
        }
        state.output = utils.wrapOutput(output, state, options);
        return state;
      }
      while (!eos()) {
        value = advance();
        if (value === "\0") {
          continue;
        }
        if (value === "\\") {
          const next = peek();
          if (next === "/" && opts.bash !== true) {
            continue;
          }
          if (next === "." || next === ";") {
            continue;
          }
          if (!next) {
            value += "\\";
            push({ type: "text", value });
            continue;
          }
          const match = /^\\+/.exec(remaining());
          let slashes = 0;
          if (match && match[0].length > 2) {
            slashes = match[0].length;
            state.index += slashes;
            if (slashes % 2 !== 0) {
              value += "\\";
            }
          }
          if (opts.unescape === true) {
            value = advance();
          } else {
            value += advance();
          }
          if (state.brackets === 0) {
            push({ type: "text", value });
            continue;
          }
        }
        if (state.brackets > 0 && (value !== "]" || prev.value === "[" || prev.value === "[^")) {
          if (opts.posix !== false && value === ":") {
            const inner = prev.value.slice(1);
            if (inner.includes("[")) {
              prev.posix = true;
              if (inner.includes(":")) {
                const idx = prev.value.lastIndexOf("[");
                const pre = prev.value.slice(0, idx);
                const rest2 = prev.value.slice(idx + 2);
                const posix2 = POSIX_REGEX_SOURCE[rest2];
                if (posix2) {
                  prev.value = pre + posix2;
                  state.backtrack = true;
                  advance();
                  if (!bos.output && tokens.indexOf(prev) === 1) {
                    bos.output = ONE_CHAR;
                  }
                  continue;
                }
              }
            }
          }
          if (value === "[" && peek() !== ":" || value === "-" && peek() === "]") {
            value = `\\${value}`;
          }
          if (value === "]" && (prev.value === "[" || prev.value === "[^")) {
            value = `\\${value}`;
          }
          if (opts.posix === true && value === "!" && prev.value === "[") {
            value = "^";
          }
          prev.value += value;
          append({ value });
          continue;
        }
        if (state.quotes === 1 && value !== '"') {
          value = utils.escapeRegex(value);
          prev.value += value;
          append({ value });
          continue;
        }
        if (value === '"') {
          state.quotes = state.quotes === 1 ? 0 : 1;
          if (opts.keepQuotes === true) {
            push({ type: "text", value });
          }
          continue;
        }
        if (value === "(") {
          increment("parens");
          push({ type: "paren", value });
          continue;
        }
        if (value === ")") {
          if (state.parens === 0 && opts.strictBrackets === true) {
            throw new SyntaxError(syntaxError("opening", "("));
          }
          const extglob = extglobs[extglobs.length - 1];
          if (extglob && state.parens === extglob.parens + 1) {
            extglobClose(extglobs.pop());
            continue;
          }
          push({ type: "paren", value, output: state.parens ? ")" : "\\)" });
          decrement("parens");
          continue;
        }
        if (value === "[") {
          if (opts.nobracket === true || !remaining().includes("]")) {
            if (opts.nobracket !== true && opts.strictBrackets === true) {
              throw new SyntaxError(syntaxError("closing", "]"));
            }
            value = `\\${value}`;
          } else {
            increment("brackets");
          }
          push({ type: "bracket", value });
          continue;
        }
        if (value === "]") {
          if (opts.nobracket === true || prev && prev.type === "bracket" && prev.value.length === 1) {
            push({ type: "text", value, output: `\\${value}` });
            continue;
          }
          if (state.brackets === 0) {
            if (opts.strictBrackets === true) {
              throw new SyntaxError(syntaxError("opening", "["));
            }
            push({ type: "text", value, output: `\\${value}` });
            continue;
          }
          decrement("brackets");
          const prevValue = prev.value.slice(1);
          if (prev.posix !== true && prevValue[0] === "^" && !prevValue.includes("/")) {
            value = `/${value}`;
          }
          prev.value += value;
          append({ value });
          if (opts.literalBrackets === false || utils.hasRegexChars(prevValue)) {
            continue;
          }
          const escaped = utils.escapeRegex(prev.value);
          state.output = state.output.slice(0, -prev.value.length);
          if (opts.literalBrackets === true) {
            state.output += escaped;
            prev.value = escaped;
            continue;
          }
          prev.value = `(${capture}${escaped}|${prev.value})`;
          state.output += prev.value;
          continue;
        }
        if (value === "{" && opts.nobrace !== true) {
          increment("braces");
          const open = {
            type: "brace",
            value,
            output: "(",
            outputIndex: state.output.length,
            tokensIndex: state.tokens.length
          };
          braces.push(open);
          push(open);
          continue;
        }
        if (value === "}") {
          const brace = braces[braces.length - 1];
          if (opts.nobrace === true || !brace) {
            push({ type: "text", value, output: value });
            continue;
          }
          let output = ")";
          if (brace.dots === true) {
            const arr = tokens.slice();
            const range = [];
            for (let i = arr.length - 1; i >= 0; i--) {
              tokens.pop();
              if (arr[i].type === "brace") {
                break;
              }
              if (arr[i].type !== "dots") {
                range.unshift(arr[i].value);
              }
            }
            output = expandRange(range, opts);
            state.backtrack = true;
          }
          if (brace.comma !== true && brace.dots !== true) {
            const out = state.output.slice(0, brace.outputIndex);
            const toks = state.tokens.slice(brace.tokensIndex);
            brace.value = brace.output = "\\{";
            value = output = "\\}";
            state.output = out;
            for (const t of toks) {
              state.output += t.output || t.value;
            }
          }
          push({ type: "brace", value, output });
          decrement("braces");
          braces.pop();
          continue;
        }
        if (value === "|") {
          if (extglobs.length > 0) {
            extglobs[extglobs.length - 1].conditions++;
          }
          push({ type: "text", value });
          continue;
        }
        if (value === ",") {
          let output = value;
          const brace = braces[braces.length - 1];
          if (brace && stack[stack.length - 1] === "braces") {
            brace.comma = true;
            output = "|";
          }
          push({ type: "comma", value, output });
          continue;
        }
        if (value === "/") {
          if (prev.type === "dot" && state.index === state.start + 1) {
            state.start = state.index + 1;
            state.consumed = "";
            state.output = "";
            tokens.pop();
            prev = bos;
            continue;
          }
          push({ type: "slash", value, output: SLASH_LITERAL });
          continue;
        }
        if (value === ".") {
          if (state.braces > 0 && prev.type === "dot") {
            if (prev.value === ".") prev.output = DOT_LITERAL;
            const brace = braces[braces.length - 1];
            prev.type = "dots";
            prev.output += value;
            prev.value += value;
            brace.dots = true;
            continue;
          }
          if (state.braces + state.parens === 0 && prev.type !== "bos" && prev.type !== "slash") {
            push({ type: "text", value, output: DOT_LITERAL });
            continue;
          }
          push({ type: "dot", value, output: DOT_LITERAL });
          continue;
        }
        if (value === "?") {
          const isGroup = prev && prev.value === "(";
          if (!isGroup && opts.noextglob !== true && peek() === "(" && peek(2) !== "?") {
            extglobOpen("qmark", value);
            continue;
          }
          if (prev && prev.type === "paren") {
            const next = peek();
            let output = value;
            if (prev.value === "(" && !/[!=<:]/.test(next) || next === "<" && !/<([!=]|\w+>)/.test(remaining())) {
              output = `\\${value}`;
            }
            push({ type: "text", value, output });
            continue;
          }
          if (opts.dot !== true && (prev.type === "slash" || prev.type === "bos")) {
            push({ type: "qmark", value, output: QMARK_NO_DOT });
            continue;
          }
          push({ type: "qmark", value, output: QMARK });
          continue;
        }
        if (value === "!") {
          if (opts.noextglob !== true && peek() === "(") {
            if (peek(2) !== "?" || !/[!=<:]/.test(peek(3))) {
              extglobOpen("negate", value);
              continue;
            }
          }
          if (opts.nonegate !== true && state.index === 0) {
            negate();
            continue;
          }
        }
        if (value === "+") {
          if (opts.noextglob !== true && peek() === "(" && peek(2) !== "?") {
            extglobOpen("plus", value);
            continue;
          }
          if (prev && prev.value === "(" || opts.regex === false) {
            push({ type: "plus", value, output: PLUS_LITERAL });
            continue;
          }
          if (prev && (prev.type === "bracket" || prev.type === "paren" || prev.type === "brace") || state.parens > 0) {
            push({ type: "plus", value });
            continue;
          }
          push({ type: "plus", value: PLUS_LITERAL });
          continue;
        }
        if (value === "@") {
          if (opts.noextglob !== true && peek() === "(" && peek(2) !== "?") {
            push({ type: "at", extglob: true, value, output: "" });
            continue;
          }
          push({ type: "text", value });
          continue;
        }
        if (value !== "*") {
          if (value === "$" || value === "^") {
            value = `\\${value}`;
          }
          const match = REGEX_NON_SPECIAL_CHARS.exec(remaining());
          if (match) {
            value += match[0];
            state.index += match[0].length;
          }
          push({ type: "text", value });
          continue;
        }
        if (prev && (prev.type === "globstar" || prev.star === true)) {
          prev.type = "star";
          prev.star = true;
          prev.value += value;
          prev.output = star;
          state.backtrack = true;
          state.globstar = true;
          consume(value);
          continue;
        }
        let rest = remaining();
        if (opts.noextglob !== true && /^\([^?]/.test(rest)) {
          extglobOpen("star", value);
          continue;
        }
        if (prev.type === "star") {
          if (opts.noglobstar === true) {
            consume(value);
            continue;
          }
          const prior = prev.prev;
          const before = prior.prev;
          const isStart = prior.type === "slash" || prior.type === "bos";
          const afterStar = before && (before.type === "star" || before.type === "globstar");
          if (opts.bash === true && (!isStart || rest[0] && rest[0] !== "/")) {
            push({ type: "star", value, output: "" });
            continue;
          }
          const isBrace = state.braces > 0 && (prior.type === "comma" || prior.type === "brace");
          const isExtglob = extglobs.length && (prior.type === "pipe" || prior.type === "paren");
          if (!isStart && prior.type !== "paren" && !isBrace && !isExtglob) {
            push({ type: "star", value, output: "" });
            continue;
          }
          while (rest.slice(0, 3) === "/**") {
            const after = input[state.index + 4];
            if (after && after !== "/") {
              break;
            }
            rest = rest.slice(3);
            consume("/**", 3);
          }
          const isEnd = eos() || state.parens > 0 && rest === ")".repeat(state.parens) && !extglobs.some((extglob) => extglob.type === "negate");
          if (prior.type === "bos" && eos()) {
            prev.type = "globstar";
            prev.value += value;
            prev.output = globstar(opts);
            state.output = prev.output;
            state.globstar = true;
            consume(value);
            continue;
          }
          if (prior.type === "slash" && prior.prev.type !== "bos" && !afterStar && isEnd) {
            state.output = state.output.slice(0, -(prior.output + prev.output).length);
            prior.output = `(?:${prior.output}`;
            prev.type = "globstar";
            prev.output = globstar(opts) + (opts.strictSlashes ? ")" : "|$)");
            prev.value += value;
            state.globstar = true;
            state.output += prior.output + prev.output;
            consume(value);
            continue;
          }
          if (prior.type === "slash" && prior.prev.type !== "bos" && rest[0] === "/") {
            const end = rest[1] !== void 0 ? "|$" : "";
            state.output = state.output.slice(0, -(prior.output + prev.output).length);
            prior.output = `(?:${prior.output}`;
            prev.type = "globstar";
            prev.output = `${globstar(opts)}${SLASH_LITERAL}|${SLASH_LITERAL}${end})`;
            prev.value += value;
            state.output += prior.output + prev.output;
            state.globstar = true;
            consume(value + advance());
            push({ type: "slash", value: "/", output: "" });
            continue;
          }
          if (prior.type === "bos" && rest[0] === "/") {
            prev.type = "globstar";
            prev.value += value;
            prev.output = `(?:^|${SLASH_LITERAL}|${globstar(opts)}${SLASH_LITERAL})`;
            state.output = prev.output;
            state.globstar = true;
            consume(value + advance());
            push({ type: "slash", value: "/", output: "" });
            continue;
          }
          state.output = state.output.slice(0, -prev.output.length);
          prev.type = "globstar";
          prev.output = globstar(opts);
          prev.value += value;
          state.output += prev.output;
          state.globstar = true;
          consume(value);
          continue;
        }
        const token = { type: "star", value, output: star };
        if (opts.bash === true) {
          token.output = ".*?";
          if (prev.type === "bos" || prev.type === "slash") {
            token.output = nodot + token.output;
          }
          push(token);
          continue;
        }
        if (prev && (prev.type === "bracket" || prev.type === "paren") && opts.regex === true) {
          token.output = value;
          push(token);
          continue;
        }
        if (state.index === state.start || prev.type === "slash" || prev.type === "dot") {
          if (prev.type === "dot") {
            state.output += NO_DOT_SLASH;
            prev.output += NO_DOT_SLASH;
          } else if (opts.dot === true) {
            state.output += NO_DOTS_SLASH;
            prev.output += NO_DOTS_SLASH;
          } else {
            state.output += nodot;
            prev.output += nodot;
          }
          if (peek() !== "*") {
            state.output += ONE_CHAR;
            prev.output += ONE_CHAR;
          }
        }
        push(token);
      }
      while (state.brackets > 0) {
        if (opts.strictBrackets === true) throw new SyntaxError(syntaxError("closing", "]"));
        state.output = utils.escapeLast(state.output, "[");
        decrement("brackets");
      }
      while (state.parens > 0) {
        if (opts.strictBrackets === true) throw new SyntaxError(syntaxError("closing", ")"));
        state.output = utils.escapeLast(state.output, "(");
        decrement("parens");
      }
      while (state.braces > 0) {
        if (opts.strictBrackets === true) throw new SyntaxError(syntaxError("closing", "}"));
        state.output = utils.escapeLast(state.output, "{");
        decrement("braces");
      }
      if (opts.strictSlashes !== true && (prev.type === "star" || prev.type === "bracket")) {
        push({ type: "maybe_slash", value: "", output: `${SLASH_LITERAL}?` });
      }
      if (state.backtrack === true) {
        state.output = "";
        for (const token of state.tokens) {
          state.output += token.output != null ? token.output : token.value;
          if (token.suffix) {
            state.output += token.suffix;
          }
        }
      }
      return state;
    };
    parse.fastpaths = (input, options) => {
      const opts = { ...options };
      const max = typeof opts.maxLength === "number" ? Math.min(MAX_LENGTH, opts.maxLength) : MAX_LENGTH;
      const len = input.length;
      if (len > max) {
        throw new SyntaxError(`Input length: ${len}, exceeds maximum allowed length: ${max}`);
      }
      input = REPLACEMENTS[input] || input;
      const {
        DOT_LITERAL,
        SLASH_LITERAL,
        ONE_CHAR,
        DOTS_SLASH,
        NO_DOT,
        NO_DOTS,
        NO_DOTS_SLASH,
        STAR,
        START_ANCHOR
      } = constants2.globChars(opts.windows);
      const nodot = opts.dot ? NO_DOTS : NO_DOT;
      const slashDot = opts.dot ? NO_DOTS_SLASH : NO_DOT;
      const capture = opts.capture ? "" : "?:";
      const state = { negated: false, prefix: "" };
      let star = opts.bash === true ? ".*?" : STAR;
      if (opts.capture) {
        star = `(${star})`;
      }
      const globstar = (opts2) => {
        if (opts2.noglobstar === true) return star;
        return `(${capture}(?:(?!${START_ANCHOR}${opts2.dot ? DOTS_SLASH : DOT_LITERAL}).)*?)`;
      };
      const create = (str) => {
        switch (str) {
          case "*":
            return `${nodot}${ONE_CHAR}${star}`;
          case ".*":
            return `${DOT_LITERAL}${ONE_CHAR}${star}`;
          case "*.*":
            return `${nodot}${star}${DOT_LITERAL}${ONE_CHAR}${star}`;
          case "*/*":
            return `${nodot}${star}${SLASH_LITERAL}${ONE_CHAR}${slashDot}${star}`;
          case "**":
            return nodot + globstar(opts);
          case "**/*":
            return `(?:${nodot}${globstar(opts)}${SLASH_LITERAL})?${slashDot}${ONE_CHAR}${star}`;
          case "**/*.*":
            return `(?:${nodot}${globstar(opts)}${SLASH_LITERAL})?${slashDot}${star}${DOT_LITERAL}${ONE_CHAR}${star}`;
          case "**/.*":
            return `(?:${nodot}${globstar(opts)}${SLASH_LITERAL})?${DOT_LITERAL}${ONE_CHAR}${star}`;
          default: {
            const match = /^(.*?)\.(\w+)$/.exec(str);
            if (!match) return;
            const source2 = create(match[1]);
            if (!source2) return;
            return source2 + DOT_LITERAL + match[2];
          }
        }
      };
      const output = utils.removePrefix(input, state);
      let source = create(output);
      if (source && opts.strictSlashes !== true) {
        source += `${SLASH_LITERAL}?`;
      }
      return source;
    };
    module.exports = parse;
  }
});

// node_modules/picomatch/lib/picomatch.js
var require_picomatch = __commonJS({
  "node_modules/picomatch/lib/picomatch.js"(exports, module) {
    "use strict";
    var scan2 = require_scan();
    var parse = require_parse();
    var utils = require_utils();
    var constants2 = require_constants();
    var isObject = (val) => val && typeof val === "object" && !Array.isArray(val);
    var picomatch2 = (glob2, options, returnState = false) => {
      if (Array.isArray(glob2)) {
        const fns = glob2.map((input) => picomatch2(input, options, returnState));
        const arrayMatcher = (str) => {
          for (const isMatch of fns) {
            const state2 = isMatch(str);
            if (state2) return state2;
          }
          return false;
        };
        return arrayMatcher;
      }
      const isState = isObject(glob2) && glob2.tokens && glob2.input;
      if (glob2 === "" || typeof glob2 !== "string" && !isState) {
        throw new TypeError("Expected pattern to be a non-empty string");
      }
      const opts = options || {};
      const posix2 = opts.windows;
      const regex = isState ? picomatch2.compileRe(glob2, options) : picomatch2.makeRe(glob2, options, false, true);
      const state = regex.state;
      delete regex.state;
      let isIgnored = () => false;
      if (opts.ignore) {
        const ignoreOpts = { ...options, ignore: null, onMatch: null, onResult: null };
        isIgnored = picomatch2(opts.ignore, ignoreOpts, returnState);
      }
      const matcher = (input, returnObject = false) => {
        const { isMatch, match, output } = picomatch2.test(input, regex, options, { glob: glob2, posix: posix2 });
        const result = { glob: glob2, state, regex, posix: posix2, input, output, match, isMatch };
        if (typeof opts.onResult === "function") {
          opts.onResult(result);
        }
        if (isMatch === false) {
          result.isMatch = false;
          return returnObject ? result : false;
        }
        if (isIgnored(input)) {
          if (typeof opts.onIgnore === "function") {
            opts.onIgnore(result);
          }
          result.isMatch = false;
          return returnObject ? result : false;
        }
        if (typeof opts.onMatch === "function") {
          opts.onMatch(result);
        }
        return returnObject ? result : true;
      };
      if (returnState) {
        matcher.state = state;
      }
      return matcher;
    };
    picomatch2.test = (input, regex, options, { glob: glob2, posix: posix2 } = {}) => {
      if (typeof input !== "string") {
        throw new TypeError("Expected input to be a string");
      }
      if (input === "") {
        return { isMatch: false, output: "" };
      }
      const opts = options || {};
      const format = opts.format || (posix2 ? utils.toPosixSlashes : null);
      let match = input === glob2;
      let output = match && format ? format(input) : input;
      if (match === false) {
        output = format ? format(input) : input;
        match = output === glob2;
      }
      if (match === false || opts.capture === true) {
        if (opts.matchBase === true || opts.basename === true) {
          match = picomatch2.matchBase(input, regex, options, posix2);
        } else {
          match = regex.exec(output);
        }
      }
      return { isMatch: Boolean(match), match, output };
    };
    picomatch2.matchBase = (input, glob2, options, posix2 = options && options.windows) => {
      const regex = glob2 instanceof RegExp ? glob2 : picomatch2.makeRe(glob2, options);
      return regex.test(utils.basename(input, { windows: posix2 }));
    };
    picomatch2.isMatch = (str, patterns, options) => picomatch2(patterns, options)(str);
    picomatch2.parse = (pattern, options) => {
      if (Array.isArray(pattern)) return pattern.map((p) => picomatch2.parse(p, options));
      return parse(pattern, { ...options, fastpaths: false });
    };
    picomatch2.scan = (input, options) => scan2(input, options);
    picomatch2.compileRe = (state, options, returnOutput = false, returnState = false) => {
      if (returnOutput === true) {
        return state.output;
      }
      const opts = options || {};
      const prepend = opts.contains ? "" : "^";
      const append = opts.contains ? "" : "$";
      let source = `${prepend}(?:${state.output})${append}`;
      if (state && state.negated === true) {
        source = `^(?!${source}).*$`;
      }
      const regex = picomatch2.toRegex(source, options);
      if (returnState === true) {
        regex.state = state;
      }
      return regex;
    };
    picomatch2.makeRe = (input, options = {}, returnOutput = false, returnState = false) => {
      if (!input || typeof input !== "string") {
        throw new TypeError("Expected a non-empty string");
      }
      let parsed = { negated: false, fastpaths: true };
      if (options.fastpaths !== false && (input[0] === "." || input[0] === "*")) {
        parsed.output = parse.fastpaths(input, options);
      }
      if (!parsed.output) {
        parsed = parse(input, options);
      }
      return picomatch2.compileRe(parsed, options, returnOutput, returnState);
    };
    picomatch2.toRegex = (source, options) => {
      try {
        const opts = options || {};
        return new RegExp(source, opts.flags || (opts.nocase ? "i" : ""));
      } catch (err) {
        if (options && options.debug === true) throw err;
        return /$^/;
      }
    };
    picomatch2.constants = constants2;
    module.exports = picomatch2;
  }
});

// node_modules/picomatch/index.js
var require_picomatch2 = __commonJS({
  "node_modules/picomatch/index.js"(exports, module) {
    "use strict";
    var pico = require_picomatch();
    var utils = require_utils();
    function picomatch2(glob2, options, returnState = false) {
      if (options && (options.windows === null || options.windows === void 0)) {
        options = { ...options, windows: utils.isWindows() };
      }
      return pico(glob2, options, returnState);
    }
    Object.assign(picomatch2, pico);
    module.exports = picomatch2;
  }
});

// src/action/main.ts
import { randomUUID as randomUUID2 } from "node:crypto";
import { appendFileSync, writeFileSync } from "node:fs";
import { EOL } from "node:os";

// src/cli/client-commands.ts
import { parseArgs } from "node:util";

// src/cli/queue-commands.ts
import { readFileSync as readFileSync2 } from "node:fs";

// src/domain/priority.ts
var PRIORITY_NAMES = { urgent: 0, high: 10, medium: 100, low: 200 };

// src/domain/preflight/words.ts
var CHECK_VERDICT_WORDS = {
  reports: "reports",
  passes_without_running: "passes without running",
  never: "never reports",
  maybe: "may not report",
  unknown: "cannot tell",
  pull_request_head: "taken from each pull request's head"
};

// src/cli/greenline-client.ts
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

// src/cli/ci-context.ts
function parseRemoteUrl(url) {
  const text = url?.trim();
  if (!text) return void 0;
  const scp = /^[^@/\s]+@([^:/\s]+):(?!\/)(.+)$/.exec(text);
  let host;
  let path;
  if (scp) {
    host = scp[1];
    path = scp[2];
  } else {
    try {
      const parsed = new URL(text);
      host = parsed.hostname;
      path = parsed.pathname;
    } catch {
      return void 0;
    }
  }
  const repo = path.replace(/^\/+|\/+$/g, "").replace(/\.git$/, "").trim();
  if (!host || !repo.includes("/")) return void 0;
  return { host, repo };
}
var nonEmpty = (value) => value?.trim() ? value.trim() : void 0;
function prNumber(value) {
  const text = String(value ?? "").trim();
  return /^[1-9]\d*$/.test(text) ? text : void 0;
}
function fromGitHubActions({ env, githubEvent }) {
  const event = githubEvent;
  const ref = env.GITHUB_REF ?? "";
  const branchFromRef = /^refs\/heads\/(.+)$/.exec(ref)?.[1];
  return {
    ci: "github-actions",
    host: env.GITHUB_SERVER_URL ? safeHost(env.GITHUB_SERVER_URL) : void 0,
    repo: nonEmpty(env.GITHUB_REPOSITORY),
    commit: nonEmpty(env.GITHUB_SHA),
    // On pull_request events GITHUB_REF is refs/pull/N/merge; the PR's own branch is GITHUB_HEAD_REF.
    branch: nonEmpty(env.GITHUB_HEAD_REF) ?? branchFromRef ?? nonEmpty(env.GITHUB_REF_NAME),
    pr: prNumber(event?.pull_request?.number) ?? prNumber(/^refs\/pull\/(\d+)\//.exec(ref)?.[1]),
    // GITHUB_BASE_REF is set on pull_request and pull_request_target events only.
    targetBranch: nonEmpty(env.GITHUB_BASE_REF) ?? nonEmpty(event?.pull_request?.base?.ref),
    // On pull_request events GITHUB_SHA is the merge commit; on pull_request_target, the base's last commit.
    headSha: nonEmpty(event?.pull_request?.head?.sha)
  };
}
function fromGitLab({ env }) {
  return {
    ci: "gitlab-ci",
    host: nonEmpty(env.CI_SERVER_HOST),
    repo: nonEmpty(env.CI_PROJECT_PATH),
    commit: nonEmpty(env.CI_COMMIT_SHA),
    branch: nonEmpty(env.CI_MERGE_REQUEST_SOURCE_BRANCH_NAME) ?? nonEmpty(env.CI_COMMIT_REF_NAME),
    pr: prNumber(env.CI_MERGE_REQUEST_IID),
    targetBranch: nonEmpty(env.CI_MERGE_REQUEST_TARGET_BRANCH_NAME),
    // Set only in merged results pipelines, where CI_COMMIT_SHA is the merge commit.
    headSha: nonEmpty(env.CI_MERGE_REQUEST_SOURCE_BRANCH_SHA)
  };
}
function fromBuildkite({ env }) {
  const remote = parseRemoteUrl(env.BUILDKITE_REPO);
  return {
    ci: "buildkite",
    host: remote?.host,
    repo: remote?.repo,
    commit: nonEmpty(env.BUILDKITE_COMMIT),
    branch: nonEmpty(env.BUILDKITE_BRANCH),
    pr: prNumber(env.BUILDKITE_PULL_REQUEST),
    targetBranch: nonEmpty(env.BUILDKITE_PULL_REQUEST_BASE_BRANCH)
  };
}
function fromCircleCi({ env }) {
  const owner = nonEmpty(env.CIRCLE_PROJECT_USERNAME);
  const name = nonEmpty(env.CIRCLE_PROJECT_REPONAME);
  return {
    ci: "circleci",
    host: parseRemoteUrl(env.CIRCLE_REPOSITORY_URL)?.host,
    repo: owner && name ? `${owner}/${name}` : void 0,
    commit: nonEmpty(env.CIRCLE_SHA1),
    branch: nonEmpty(env.CIRCLE_BRANCH),
    pr: prNumber(/\/pull\/(\d+)\/?$/.exec(env.CIRCLE_PULL_REQUEST ?? "")?.[1] ?? env.CIRCLE_PR_NUMBER)
  };
}
function fromJenkins({ env }) {
  const remote = parseRemoteUrl(env.GIT_URL);
  const branch = nonEmpty(env.CHANGE_BRANCH) ?? nonEmpty(env.GIT_BRANCH)?.replace(/^(?:refs\/heads\/|origin\/)/, "") ?? nonEmpty(env.BRANCH_NAME);
  return { ci: "jenkins", host: remote?.host, repo: remote?.repo, commit: nonEmpty(env.GIT_COMMIT), branch, pr: prNumber(env.CHANGE_ID), targetBranch: nonEmpty(env.CHANGE_TARGET) };
}
function fromGit({ git: git2 }) {
  const remote = parseRemoteUrl(git2.remoteUrl);
  const branch = nonEmpty(git2.branch);
  return { ci: "git", host: remote?.host, repo: remote?.repo, commit: nonEmpty(git2.head), branch: branch === "HEAD" ? void 0 : branch };
}
function safeHost(url) {
  try {
    return new URL(url).host;
  } catch {
    return void 0;
  }
}
function detectCi(env) {
  if (env.GITHUB_ACTIONS === "true") return "github-actions";
  if (env.GITLAB_CI) return "gitlab-ci";
  if (env.BUILDKITE === "true") return "buildkite";
  if (env.CIRCLECI === "true") return "circleci";
  if (env.JENKINS_URL || env.JENKINS_HOME) return "jenkins";
  return "git";
}
var READERS = {
  "github-actions": fromGitHubActions,
  "gitlab-ci": fromGitLab,
  buildkite: fromBuildkite,
  circleci: fromCircleCi,
  jenkins: fromJenkins,
  git: fromGit
};
function inferCiContext(facts) {
  const ci = detectCi(facts.env);
  const found = READERS[ci](facts);
  if (ci === "git") return found;
  const local = fromGit(facts);
  return {
    ci,
    host: found.host ?? (found.repo ? void 0 : local.host),
    repo: found.repo ?? local.repo,
    commit: found.commit ?? local.commit,
    branch: found.branch ?? local.branch,
    pr: found.pr,
    targetBranch: found.targetBranch,
    headSha: found.headSha
  };
}

// src/cli/unreachable.ts
var SERVICE_UNAVAILABLE = 69;
var ServiceUnreachableError = class extends Error {
};
var CAUSES = {
  ECONNREFUSED: "connection refused (is Greenline running there?)",
  ECONNRESET: "connection reset",
  ENOTFOUND: "no such host (DNS)",
  EAI_AGAIN: "DNS lookup failed (temporary)",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
  ETIMEDOUT: "timed out",
  UND_ERR_CONNECT_TIMEOUT: "connection timed out",
  UND_ERR_HEADERS_TIMEOUT: "timed out waiting for an answer",
  UND_ERR_SOCKET: "connection closed",
  EPROTO: "TLS handshake failed (is the URL http, not https?)",
  ERR_SSL_WRONG_VERSION_NUMBER: "TLS handshake failed (is the URL http, not https?)",
  DEPTH_ZERO_SELF_SIGNED_CERT: "TLS: self-signed certificate",
  SELF_SIGNED_CERT_IN_CHAIN: "TLS: self-signed certificate in chain",
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: "TLS: certificate not trusted",
  CERT_HAS_EXPIRED: "TLS: certificate expired",
  ERR_TLS_CERT_ALTNAME_INVALID: "TLS: certificate does not match the host name"
};
function codeOf(error) {
  for (let e = error, depth = 0; e && depth < 5; e = e.cause, depth++) {
    if (typeof e.code === "string") return e.code;
  }
  return void 0;
}
function describeUnreachable(url, error) {
  const name = error?.name;
  if (name === "TimeoutError" || name === "AbortError") return new ServiceUnreachableError(`cannot reach Greenline at ${url}: timed out`);
  const code = codeOf(error);
  const deepest = (() => {
    let e = error;
    while (e?.cause && typeof e.cause === "object") e = e.cause;
    return e?.message;
  })();
  const cause = code ? CAUSES[code] ? `${CAUSES[code]} [${code}]` : `${deepest ?? code} [${code}]` : deepest ?? String(error);
  return new ServiceUnreachableError(`cannot reach Greenline at ${url}: ${cause}`);
}

// src/cli/greenline-client.ts
var CliUsageError = class extends Error {
};
var GreenlineRefusal = class extends Error {
  constructor(path, status, reason) {
    super(`${path} answered ${status}: ${reason}`);
    this.status = status;
    this.reason = reason;
  }
  status;
  reason;
};
function reasonOf(text) {
  try {
    const message = JSON.parse(text).error?.message;
    if (typeof message === "string" && message.trim()) return message;
  } catch {
  }
  return text.trim().slice(0, 500) || "(empty answer)";
}
function postToGreenline(baseUrl, token, path, body) {
  return callGreenline(baseUrl, token, path, body);
}
function getFromGreenline(baseUrl, token, path) {
  return callGreenline(baseUrl, token, path, null);
}
async function callGreenline(baseUrl, token, path, body) {
  const url = `${baseUrl}/v1/${path}`;
  let response;
  let text;
  try {
    const request = body === null ? { method: "GET", headers: { "x-api-token": token } } : { method: "POST", headers: { "content-type": "application/json", "x-api-token": token }, body: JSON.stringify(body) };
    response = await fetch(url, { ...request, signal: AbortSignal.timeout(6e4) });
    text = await response.text();
  } catch (error) {
    throw describeUnreachable(url, error);
  }
  if (!response.ok) throw new GreenlineRefusal(path, response.status, reasonOf(text));
  try {
    return JSON.parse(text);
  } catch {
    const type = response.headers.get("content-type") ?? "no content type";
    const start = text.trim().slice(0, 200);
    throw new ServiceUnreachableError(
      `${path}: the answer from ${url} (${response.status}, ${type}) is not JSON, so it is not Greenline's API: is the URL Greenline's address?${start ? ` It begins: ${start}` : " It is empty."}`
    );
  }
}
function greenlineUrl(flag, env) {
  const source = flag !== void 0 ? "--url" : "GREENLINE_URL";
  const text = (flag ?? env)?.trim();
  if (!text) throw new CliUsageError("--url (or GREENLINE_URL) is required");
  let parsed;
  try {
    parsed = new URL(text);
  } catch {
    parsed = void 0;
  }
  if (!parsed || parsed.protocol !== "http:" && parsed.protocol !== "https:" || parsed.search || parsed.hash) {
    throw new CliUsageError(`${source} must be Greenline's http or https address, such as https://greenline.example.com (got ${JSON.stringify(text)})`);
  }
  return text.replace(/\/+$/, "");
}
function greenlineToken(flag, env) {
  const token = (flag ?? env)?.trim();
  if (!token) throw new CliUsageError("--token (or GREENLINE_API_TOKEN) is required");
  return token;
}
function splitRepo(full) {
  const parts = full.trim().split("/");
  if (parts.length < 2 || parts.some((p) => p.trim() === "")) {
    throw new CliUsageError(`--repo must be owner/name (or group/subgroup/name for a GitLab project in nested groups; got ${full})`);
  }
  return { owner: parts.slice(0, -1).join("/"), name: parts.at(-1) };
}
function git(args) {
  try {
    return execFileSync("git", args, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim() || void 0;
  } catch {
    return void 0;
  }
}
function readGitFacts() {
  return { remoteUrl: git(["remote", "get-url", "origin"]), head: git(["rev-parse", "HEAD"]), branch: git(["rev-parse", "--abbrev-ref", "HEAD"]) };
}
function readGitHubEvent(path) {
  if (!path) return void 0;
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch {
    return void 0;
  }
}
function inferFromEnvironment() {
  const env = process.env;
  return inferCiContext({ env, git: readGitFacts(), githubEvent: readGitHubEvent(env.GITHUB_EVENT_PATH) });
}

// src/cli/queue-commands.ts
var Context = class {
  constructor(options) {
    this.options = options;
    const env = process.env;
    this.url = greenlineUrl(options.url, env.GREENLINE_URL);
    this.token = greenlineToken(options.token, env.GREENLINE_API_TOKEN);
  }
  options;
  url;
  token;
  #inferred;
  get inferred() {
    this.#inferred ??= inferFromEnvironment();
    return this.#inferred;
  }
  queue() {
    const o = this.options;
    const full = o.repo ?? this.inferred.repo;
    if (!full) throw new CliUsageError("--repo owner/name is required (or a CI environment, or a git remote named origin)");
    const { owner, name } = splitRepo(full);
    const targetBranch = (o["target-branch"] ?? this.inferred.targetBranch)?.trim();
    if (!targetBranch) throw new CliUsageError("--target-branch is required (the branch the pull request merges into; a pull request build's CI names it)");
    return { repo: { host: o.host ?? this.inferred.host ?? "github.com", owner, name }, targetBranch };
  }
  prNumber() {
    const text = this.options.pr ?? this.inferred.pr;
    if (text === void 0) throw new CliUsageError("--pr is required (the pull request's number; a pull request build's CI names it)");
    const pr = Number(text);
    if (!(/^\d+$/.test(text.trim()) && Number.isSafeInteger(pr) && pr > 0)) throw new CliUsageError(`--pr must be a pull request number (got ${text})`);
    return pr;
  }
  post(operation, body) {
    return postToGreenline(this.url, this.token, operation, body);
  }
};
var queueName = (q) => `queue ${q.targetBranch} of ${q.repo.owner}/${q.repo.name}`;
var short = (sha) => sha ? sha.slice(0, 12) : "-";
var stateOf = (item) => item.stateReason && item.stateReason !== item.state ? `${item.state} (${item.stateReason})` : item.state;
function priorityOf(text) {
  if (text === void 0) return void 0;
  const value = text.trim().toLowerCase();
  if (value in PRIORITY_NAMES) return value;
  if (/^\d{1,3}$/.test(value) && Number(value) <= 255) return Number(value);
  throw new CliUsageError(`--priority must be urgent, high, medium, low or a number from 0 to 255 (got ${text})`);
}
async function prSubmit(options, out) {
  const ctx = new Context(options);
  const priority = priorityOf(options.priority);
  const address = { ...ctx.queue(), pr: { number: ctx.prNumber() } };
  const emergency = options.emergency ?? options.hotfix;
  if (options.emergency !== void 0 && options.hotfix !== void 0) throw new CliUsageError("--hotfix is --emergency: give one of them");
  if (emergency !== void 0 && priority !== void 0) throw new CliUsageError("--emergency goes ahead of everything already: leave out --priority");
  await ctx.post("submitPullRequest", {
    ...address,
    ...priority !== void 0 ? { priority } : {},
    ...options["no-batch"] ? { noBatch: true } : {},
    ...emergency !== void 0 ? { emergencyReason: emergency } : {}
  });
  const how = [priority !== void 0 ? `priority ${priority}` : "", options["no-batch"] ? "never batched" : "", emergency !== void 0 ? `emergency: ${emergency}` : ""].filter(Boolean).join(", ");
  out(`greenline: submitted PR #${address.pr.number} to the ${queueName(address)}${how ? ` (${how})` : ""}`);
  return 0;
}
async function prCancel(options, out) {
  const ctx = new Context(options);
  const address = { ...ctx.queue(), pr: { number: ctx.prNumber() } };
  await ctx.post("cancelPullRequest", address);
  out(`greenline: cancelled PR #${address.pr.number} in the ${queueName(address)}`);
  return 0;
}
async function prRestart(options, out) {
  const ctx = new Context(options);
  const address = { ...ctx.queue(), pr: { number: ctx.prNumber() } };
  await ctx.post("restartTestsOnPullRequest", address);
  out(`greenline: restarted the tests of PR #${address.pr.number} in the ${queueName(address)}`);
  return 0;
}
function testingLines(run2) {
  const lines = [`  test run ${run2.testRunId}${run2.isBisection ? " (bisection)" : ""}: ${run2.status} on ${run2.testBranch ?? "-"} at ${short(run2.testBranchSha)}`];
  if (run2.failureReason) lines.push(`    failure reason: ${run2.failureReason}`);
  const tested = run2.testedPullRequests.map((p) => `#${p.prNumber}`).join(", ");
  if (tested) lines.push(`    tests ${tested}${run2.dependentPrs.length > 0 ? ` on top of ${run2.dependentPrs.map((n) => `#${n}`).join(", ")}` : ""}`);
  if (run2.impactedTargets === "ALL" || run2.impactedTargets.length > 0) lines.push(`    impacted targets: ${run2.impactedTargets === "ALL" ? "ALL" : run2.impactedTargets.length}`);
  for (const check of run2.statusChecks) lines.push(`    ${check.context}: ${check.state.toLowerCase()}${check.url ? ` ${check.url}` : ""}`);
  for (const suite of run2.checkSuites) for (const check of suite.checkRuns) lines.push(`    ${check.name}: ${(check.conclusion ?? check.status).toLowerCase()}`);
  return lines;
}
async function prStatus(options, out) {
  const ctx = new Context(options);
  const address = { ...ctx.queue(), pr: { number: ctx.prNumber() } };
  const pr = await ctx.post("getSubmittedPullRequest", address);
  if (options.json) {
    out(JSON.stringify(pr, null, 2));
    return pr.isCurrentlySubmittedToQueue ? 0 : 1;
  }
  out(`PR #${pr.prNumber} ${JSON.stringify(pr.prTitle)} in the ${queueName(address)}: ${stateOf(pr)}`);
  if (pr.isCurrentlySubmittedToQueue) {
    const queue = await ctx.post("getQueue", ctx.queue());
    const at = queue.enqueuedPullRequests.findIndex((p) => p.prNumber === pr.prNumber);
    const position = at === -1 ? "" : `position ${at + 1} of ${queue.enqueuedPullRequests.length}, `;
    out(`  ${position}priority ${pr.priorityName} (${pr.priorityValue})${pr.noBatch ? ", never batched" : ""}; the queue is ${queue.state}`);
  }
  if (pr.failureMessage) out(`  failure: ${pr.failureMessage}`);
  if (pr.stackedOn !== void 0) out(`  stacked on #${pr.stackedOn}: tested with it, merged after it`);
  const r = pr.readiness;
  if (!r.doesBaseBranchMatch) out(`  not ready: the pull request does not merge into ${address.targetBranch}`);
  if (r.requiresImpactedTargets && !r.hasImpactedTargets) out(`  not ready: no impacted targets for its head ${short(pr.prSha)} (greenline targets set)`);
  if (r.gitHubMergeability !== "mergeable") out(`  mergeability: ${r.gitHubMergeability}`);
  try {
    for (const line of testingLines(await ctx.post("getMergeQueueTestingDetails", address))) out(line);
  } catch (error) {
    if (!(error instanceof GreenlineRefusal && error.status === 404)) throw error;
    out("  no test run yet");
  }
  if (!pr.isCurrentlySubmittedToQueue) {
    out(`greenline: PR #${pr.prNumber} is not in the queue (${pr.state})`);
    return 1;
  }
  return 0;
}
async function queueShow(options, out) {
  const ctx = new Context(options);
  const address = ctx.queue();
  const queue = await ctx.post("getQueue", address);
  if (options.json) {
    out(JSON.stringify(queue, null, 2));
    return 0;
  }
  const batching = queue.batch ? `batches of ${queue.batchingMinSize} to ${Math.max(1, queue.batchingMinSize * 2)} PRs (fewer after ${queue.batchingMaxWaitTimeMinutes} min)` : "no batching";
  const budget = queue.ciBudget ? `, CI budget ${queue.ciBudget} run(s) at once` : "";
  const shape = queue.tuned ? `adaptive tuning: up to ${queue.tuned.concurrency} run(s) in flight, batches of up to ${queue.tuned.largestBatch} PRs (observed failure rate ${(queue.tuned.observedFailureRate * 100).toFixed(1)}% per PR)` : `concurrency ${queue.concurrency}, ${batching}`;
  out(`The ${queueName(address)}: ${queue.state}; ${queue.mode} mode, ${shape}${budget}`);
  if (queue.requiredStatusesSource === "merge_instance") out(`  required statuses (set on the queue): ${queue.requiredStatuses.join(", ")}`);
  else out(`  required statuses: as the code host's rules for the branch say (${queue.requiredStatusesSource})`);
  if (queue.requiredStatusesWarning) out(`  warning: ${queue.requiredStatusesWarning}`);
  if (queue.freeze?.frozen) {
    const until = queue.freeze.until === null ? "it is unfrozen" : `${queue.freeze.until.slice(0, 16).replace("T", " ")} UTC`;
    out(`  frozen until ${until} (${queue.freeze.reasons.join("; ")}): only hotfixes merge`);
  }
  const prs = queue.enqueuedPullRequests;
  out(prs.length === 0 ? "  no pull requests in the queue" : `  ${prs.length} pull request(s):`);
  prs.forEach((p, i) => out(`  ${String(i + 1).padStart(3)}. #${p.prNumber}  ${stateOf(p)}  ${p.priorityName}  ${p.prTitle}`));
  return 0;
}
async function queueSetState(options, state, out) {
  const ctx = new Context(options);
  const address = ctx.queue();
  const queue = await ctx.post("updateQueue", { ...address, state });
  out(`greenline: the ${queueName(address)} is ${queue.state}`);
  return 0;
}
async function doctor(options, out) {
  if (options.mode !== void 0 && options.mode !== "push" && options.mode !== "draft_pr") throw new CliUsageError(`--mode must be push or draft_pr (got ${options.mode})`);
  const ctx = new Context({ ...options, "target-branch": options["target-branch"] ?? options.branch });
  const address = ctx.queue();
  const report2 = await ctx.post("checkQueueSetup", { ...address, ...options.mode ? { mode: options.mode } : {} });
  const failing = report2.checks.some((c) => c.verdict === "never" || c.verdict === "passes_without_running" || c.verdict === "maybe") || !report2.ok && report2.checks.every((c) => c.verdict === "reports");
  if (options.json) {
    out(JSON.stringify(report2, null, 2));
    return failing ? 1 : 0;
  }
  const how = report2.mode === "draft_pr" ? "testing branches with draft pull requests" : "pushed testing branches";
  out(`Preflight of the ${queueName(address)} (${how}${report2.queueExists ? "" : "; no queue yet: its defaults"}):`);
  if (report2.workflowsUnavailable) out(`  ${report2.workflowsUnavailable}`);
  if (report2.checks.length === 0) out("  no required checks");
  for (const check of report2.checks) {
    out(`  ${check.verdict === "reports" ? "ok  " : check.verdict === "unknown" ? "????" : "FAIL"} ${check.context}: ${CHECK_VERDICT_WORDS[check.verdict] ?? check.verdict}`);
    if (check.verdict !== "reports") {
      out(`       ${check.why}`);
      if (check.fix) out(`       fix: ${check.fix}`);
    }
  }
  for (const warning of report2.warnings) out(`  warning: ${warning}`);
  if (report2.workflowsNotRead.length > 0) out(`  not read (past the first 50): ${report2.workflowsNotRead.join(", ")}`);
  out(
    report2.ok ? "Every required check will report on testing commits." : failing ? "The queue would wait on the checks marked FAIL (or merge without them): fix them before turning it on." : "Greenline cannot tell for the checks marked ????: make sure they report on greenline/** (exit 0)."
  );
  return failing ? 1 : 0;
}
async function readInput(file) {
  if (file !== "-") {
    try {
      return readFileSync2(file, "utf8");
    } catch (error) {
      throw new CliUsageError(`cannot read ${file}: ${error.code ?? error.message}`);
    }
  }
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString("utf8");
}
var MAX_TARGET_LENGTH = 4096;
function parseTargets(text, source) {
  const targets = text.split(/\r?\n/).map((line) => line.trim()).filter(Boolean);
  if (targets.length === 1 && targets[0] === "ALL") return "ALL";
  if (targets.includes("ALL")) throw new CliUsageError(`${source}: ALL must be the only line (it means every target); found it among ${targets.length} lines`);
  const long = targets.findIndex((t) => t.length > MAX_TARGET_LENGTH);
  if (long !== -1) throw new CliUsageError(`${source}: target ${long + 1} is longer than ${MAX_TARGET_LENGTH} characters`);
  return targets;
}
async function targetsSet(options, file, out) {
  if (!file) throw new CliUsageError("targets set needs a file of targets, one a line (or - for stdin)");
  const ctx = new Context(options);
  const address = ctx.queue();
  const number = ctx.prNumber();
  const sha = (options.commit ?? ctx.inferred.headSha ?? ctx.inferred.commit)?.trim();
  if (sha !== void 0 && !/^[0-9a-f]{7,64}$/i.test(sha)) throw new CliUsageError(`--commit must be a commit sha (hex, 7 to 64 digits; got ${sha})`);
  const impactedTargets = parseTargets(await readInput(file), file === "-" ? "stdin" : file);
  await ctx.post("setImpactedTargets", { ...address, pr: { number, ...sha ? { sha } : {} }, impactedTargets });
  const what = impactedTargets === "ALL" ? "ALL targets (every target)" : `${impactedTargets.length} impacted target(s)`;
  out(`greenline: set ${what} for PR #${number}${sha ? ` at ${short(sha)}` : " at its head"} in the ${queueName(address)}`);
  return 0;
}

// src/cli/freeze-commands.ts
var DAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];
function daysOf(text) {
  const out = [];
  for (const part of text.toLowerCase().split(",").map((p) => p.trim()).filter(Boolean)) {
    const [a, b] = part.split("-").map((d) => d.trim().slice(0, 3));
    const from = DAYS.indexOf(a);
    const to = b === void 0 ? from : DAYS.indexOf(b);
    if (from < 0 || to < 0) throw new CliUsageError(`--days takes mon, tue, wed, thu, fri, sat, sun, lists and ranges (mon-fri), not ${JSON.stringify(part)}`);
    for (let i = from; ; i = (i + 1) % 7) {
      if (!out.includes(DAYS[i])) out.push(DAYS[i]);
      if (i === to) break;
    }
  }
  if (out.length === 0) throw new CliUsageError("--days needs at least one day");
  return out;
}
var when = (iso, open = "it is unfrozen") => iso === null ? open : `${iso.slice(0, 16).replace("T", " ")} UTC`;
function statusLine(status) {
  if (status.frozen) return `frozen until ${when(status.until)} (${status.reasons.join("; ")}); ${status.testing ? "pull requests are tested and merge once it ends" : "nothing starts testing"}; only hotfixes merge`;
  return status.nextChangeAt ? `not frozen; the next freeze starts ${when(status.nextChangeAt)}` : "not frozen";
}
function freezeLine(f) {
  const window = f.kind === "weekly" && f.weekly ? `every ${f.weekly.days.join(", ")} ${f.weekly.from}\u2013${f.weekly.until} ${f.weekly.timeZone}` : f.kind === "once" ? `from ${when(f.from)} until ${when(f.until)}` : `since ${when(f.from)} until ${when(f.until)}`;
  const state = f.holdingNow ? "holding now" : f.nextStart ? `next ${when(f.nextStart)}` : "";
  return `  ${f.id}  ${window}${state ? ` (${state})` : ""}${f.testing ? "" : ", testing held"}: ${f.reason}`;
}
async function queueFreeze(options, out) {
  const ctx = new Context(options);
  const address = ctx.queue();
  if (options.reason === void 0) throw new CliUsageError('--reason is required: why the queue is frozen (--reason "release 4.2")');
  const body = { ...address, reason: options.reason, ...options["no-testing"] ? { testing: false } : {} };
  if (options.days !== void 0) {
    if (options.from === void 0 || options.until === void 0) throw new CliUsageError("--days needs --from and --until (HH:MM local times)");
    body.weekly = { timeZone: options["time-zone"] ?? "UTC", days: daysOf(options.days), from: options.from, until: options.until };
  } else {
    if (options["time-zone"] !== void 0) throw new CliUsageError("--time-zone goes with --days (a weekly window)");
    if (options.from !== void 0) body.from = options.from;
    if (options.until !== void 0) body.until = options.until;
  }
  const answer = await ctx.post("freezeQueue", body);
  if (options.json) {
    out(JSON.stringify(answer, null, 2));
    return 0;
  }
  out(`greenline: added freeze ${answer.freeze.id} to the ${queueName(address)}`);
  out(`  ${statusLine(answer.status)}`);
  return 0;
}
async function queueUnfreeze(options, out) {
  const ctx = new Context(options);
  const address = ctx.queue();
  const answer = await ctx.post("unfreezeQueue", { ...address, ...options["freeze-id"] !== void 0 ? { freezeId: options["freeze-id"] } : {} });
  if (options.json) {
    out(JSON.stringify(answer, null, 2));
    return 0;
  }
  out(answer.ended.length === 0 ? `greenline: the ${queueName(address)} was not frozen` : `greenline: ended ${answer.ended.map((f) => `"${f.reason}"`).join(", ")} on the ${queueName(address)}`);
  out(`  ${statusLine(answer.status)}`);
  return 0;
}
async function queueFreezes(options, out) {
  const ctx = new Context(options);
  const address = ctx.queue();
  const answer = await ctx.post("listQueueFreezes", address);
  if (options.json) {
    out(JSON.stringify(answer, null, 2));
    return 0;
  }
  out(`The ${queueName(address)}: ${statusLine(answer.status)}`);
  out(answer.freezes.length === 0 ? "  no freezes" : `  ${answer.freezes.length} freeze(s):`);
  for (const f of answer.freezes) out(freezeLine(f));
  return 0;
}

// src/cli/audit-commands.ts
async function audit(options, out) {
  const ctx = new Context({ url: options.url, token: options.token });
  const size = options.limit === void 0 ? 50 : Number(options.limit);
  if (!Number.isInteger(size) || size < 1 || size > 100) throw new CliUsageError(`--limit must be a whole number from 1 to 100 (got ${options.limit})`);
  let repo;
  if (options.repo !== void 0) {
    const [owner, name, ...rest] = options.repo.split("/");
    if (!owner || !name || rest.length > 0) throw new CliUsageError(`--repo must be owner/name (got ${options.repo})`);
    repo = { host: options.host ?? "github.com", owner, name };
  }
  const answer = await ctx.post("getAuditLog", { page_query: { page_size: size, page_token: options["page-token"] ?? "" }, ...options.action ? { action: options.action } : {}, ...repo ? { repo } : {} });
  if (options.json) {
    out(JSON.stringify(answer, null, 2));
    return 0;
  }
  if (answer.entries.length === 0) out("no entries");
  for (const e of answer.entries) {
    const where = e.repository ? ` ${e.repository}${e.branch ? ` ${e.branch}` : ""}` : "";
    out(`${e.at.slice(0, 19).replace("T", " ")}Z  ${e.action}${where}  by ${e.actor.kind} ${e.actor.name} (${e.channel})${e.reason ? `: ${e.reason}` : ""}`);
  }
  if (answer.page.next_page_token) out(`more: --page-token ${answer.page.next_page_token}`);
  return 0;
}

// src/cli/webhook-commands.ts
function call(options, operation, body) {
  const url = greenlineUrl(options.url, process.env.GREENLINE_URL);
  const token = greenlineToken(options.token, process.env.GREENLINE_API_TOKEN);
  const path = `webhooks/${operation}`;
  return body === null ? getFromGreenline(url, token, path) : postToGreenline(url, token, path, body);
}
function eventsOf(options) {
  if (options.events === void 0) return void 0;
  return options.events.split(",").map((e) => e.trim()).filter(Boolean);
}
function describeEndpoint(e) {
  const state = e.enabled ? e.failingSince ? `enabled, failing since ${e.failingSince}` : "enabled" : `disabled: ${e.disabledReason ?? "by a user"}`;
  return `${e.id}	${e.url}	${e.events.join(",")}	${state}`;
}
async function webhookCommand(command2, args, options, out) {
  try {
    return await run(command2, args, options, out);
  } catch (error) {
    if (error instanceof GreenlineRefusal) {
      out(`greenline: Greenline refused (${error.status}): ${error.reason}`);
      return 1;
    }
    throw error;
  }
}
async function run(command2, args, options, out) {
  const id = () => {
    if (!args[0]) throw new CliUsageError(`webhooks ${command2} needs the endpoint's id (see webhooks list)`);
    return args[0];
  };
  switch (command2) {
    case "create": {
      const url = options["endpoint-url"];
      const events = eventsOf(options);
      if (!url) throw new CliUsageError("--endpoint-url is required");
      if (!events || events.length === 0) throw new CliUsageError('--events is required: event types separated by commas, or "*"');
      const created = await call(options, "create-endpoint", {
        url,
        events,
        ...options.description !== void 0 ? { description: options.description } : {},
        ...options.secret !== void 0 ? { secret: options.secret } : {}
      });
      out(`Created webhook endpoint ${created.endpoint.id}. Its signing secret (store it now; it is not shown again):`);
      out(created.secret);
      return 0;
    }
    case "list": {
      const { endpoints } = await call(options, "list-endpoints", null);
      for (const e of endpoints) out(describeEndpoint(e));
      if (endpoints.length === 0) out("no webhook endpoints");
      return 0;
    }
    case "update": {
      if (options.enable && options.disable) throw new CliUsageError("--enable and --disable exclude each other");
      const body = {
        id: id(),
        ...options["endpoint-url"] !== void 0 ? { url: options["endpoint-url"] } : {},
        ...options.events !== void 0 ? { events: eventsOf(options) } : {},
        ...options.description !== void 0 ? { description: options.description } : {},
        ...options.enable ? { enabled: true } : options.disable ? { enabled: false } : {},
        ...options["rotate-secret"] ? { rotateSecret: true } : {}
      };
      const updated = await call(options, "update-endpoint", body);
      out(describeEndpoint(updated.endpoint));
      if (updated.secret) {
        out(`New signing secret (the previous one signs too until ${updated.endpoint.previousSecretExpiresAt}):`);
        out(updated.secret);
      }
      return 0;
    }
    case "delete": {
      await call(options, "delete-endpoint", { id: id() });
      out(`deleted ${args[0]}`);
      return 0;
    }
    case "deliveries": {
      const limit = options.limit === void 0 ? void 0 : Number(options.limit);
      if (limit !== void 0 && !(Number.isInteger(limit) && limit >= 1 && limit <= 500)) throw new CliUsageError("--limit must be a number from 1 to 500");
      const page = await call(options, "list-deliveries", {
        id: id(),
        ...limit ? { pageSize: limit } : {},
        ...options["page-token"] ? { pageToken: options["page-token"] } : {}
      });
      for (const d of page.deliveries) {
        const last = d.lastStatus !== null ? `last ${d.lastStatus}` : d.lastError ? "no answer" : "not tried";
        out(`${d.id}	${d.eventType}	${d.status}	${d.attempts} attempt(s)	${last}${d.lastError ? `	${d.lastError}` : ""}`);
      }
      if (page.deliveries.length === 0) out("no deliveries");
      if (page.nextPageToken) out(`more: --page-token ${page.nextPageToken}`);
      return 0;
    }
    case "redeliver": {
      const deliveryId = args[1];
      if (!deliveryId) throw new CliUsageError("webhooks redeliver needs the endpoint's id and the delivery's id (see webhooks deliveries)");
      const { delivery } = await call(options, "redeliver", { id: id(), deliveryId });
      out(`redelivering ${delivery.webhookId} as ${delivery.id}`);
      return 0;
    }
    default:
      throw new CliUsageError(`unknown command: webhooks ${command2 ?? ""}`);
  }
}

// src/cli/test-commands.ts
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { readFileSync as readFileSync3, statSync as statSync2 } from "node:fs";
import { constants } from "node:os";

// node_modules/tinyglobby/dist/index.mjs
import { readdir, readdirSync, realpath, realpathSync, stat, statSync } from "fs";
import { isAbsolute, posix, resolve as resolve2 } from "path";
import { fileURLToPath } from "url";

// node_modules/fdir/dist/index.mjs
import { createRequire } from "module";
import { basename, dirname, normalize, relative, resolve, sep } from "path";
import * as nativeFs from "fs";
var __require = /* @__PURE__ */ createRequire(import.meta.url);
function cleanPath(path) {
  let normalized = normalize(path);
  if (normalized.length > 1 && normalized[normalized.length - 1] === sep) normalized = normalized.substring(0, normalized.length - 1);
  return normalized;
}
var SLASHES_REGEX = /[\\/]/g;
function convertSlashes(path, separator) {
  return path.replace(SLASHES_REGEX, separator);
}
var WINDOWS_ROOT_DIR_REGEX = /^[a-z]:[\\/]$/i;
function isRootDirectory(path) {
  return path === "/" || WINDOWS_ROOT_DIR_REGEX.test(path);
}
function normalizePath(path, options) {
  const { resolvePaths, normalizePath: normalizePath$1, pathSeparator } = options;
  const pathNeedsCleaning = process.platform === "win32" && path.includes("/") || path.startsWith(".");
  if (resolvePaths) path = resolve(path);
  if (normalizePath$1 || pathNeedsCleaning) path = cleanPath(path);
  if (path === ".") return "";
  const needsSeperator = path[path.length - 1] !== pathSeparator;
  return convertSlashes(needsSeperator ? path + pathSeparator : path, pathSeparator);
}
function joinPathWithBasePath(filename, directoryPath) {
  return directoryPath + filename;
}
function joinPathWithRelativePath(root, options) {
  return function(filename, directoryPath) {
    const sameRoot = directoryPath.startsWith(root);
    if (sameRoot) return directoryPath.slice(root.length) + filename;
    else return convertSlashes(relative(root, directoryPath), options.pathSeparator) + options.pathSeparator + filename;
  };
}
function joinPath(filename) {
  return filename;
}
function joinDirectoryPath(filename, directoryPath, separator) {
  return directoryPath + filename + separator;
}
function build$7(root, options) {
  const { relativePaths, includeBasePath } = options;
  return relativePaths && root ? joinPathWithRelativePath(root, options) : includeBasePath ? joinPathWithBasePath : joinPath;
}
function pushDirectoryWithRelativePath(root) {
  return function(directoryPath, paths) {
    paths.push(directoryPath.substring(root.length) || ".");
  };
}
function pushDirectoryFilterWithRelativePath(root) {
  return function(directoryPath, paths, filters) {
    const relativePath = directoryPath.substring(root.length) || ".";
    if (filters.every((filter) => filter(relativePath, true))) paths.push(relativePath);
  };
}
var pushDirectory = (directoryPath, paths) => {
  paths.push(directoryPath || ".");
};
var pushDirectoryFilter = (directoryPath, paths, filters) => {
  const path = directoryPath || ".";
  if (filters.every((filter) => filter(path, true))) paths.push(path);
};
var empty$2 = () => {
};
function build$6(root, options) {
  const { includeDirs, filters, relativePaths } = options;
  if (!includeDirs) return empty$2;
  if (relativePaths) return filters && filters.length ? pushDirectoryFilterWithRelativePath(root) : pushDirectoryWithRelativePath(root);
  return filters && filters.length ? pushDirectoryFilter : pushDirectory;
}
var pushFileFilterAndCount = (filename, _paths, counts, filters) => {
  if (filters.every((filter) => filter(filename, false))) counts.files++;
};
var pushFileFilter = (filename, paths, _counts, filters) => {
  if (filters.every((filter) => filter(filename, false))) paths.push(filename);
};
var pushFileCount = (_filename, _paths, counts, _filters) => {
  counts.files++;
};
var pushFile = (filename, paths) => {
  paths.push(filename);
};
var empty$1 = () => {
};
function build$5(options) {
  const { excludeFiles, filters, onlyCounts } = options;
  if (excludeFiles) return empty$1;
  if (filters && filters.length) return onlyCounts ? pushFileFilterAndCount : pushFileFilter;
  else if (onlyCounts) return pushFileCount;
  else return pushFile;
}
var getArray = (paths) => {
  return paths;
};
var getArrayGroup = () => {
  return [""].slice(0, 0);
};
function build$4(options) {
  return options.group ? getArrayGroup : getArray;
}
var groupFiles = (groups, directory, files) => {
  groups.push({
    directory,
    files,
    dir: directory
  });
};
var empty = () => {
};
function build$3(options) {
  return options.group ? groupFiles : empty;
}
var resolveSymlinksAsync = function(path, state, callback$1) {
  const { queue, fs, options: { suppressErrors } } = state;
  queue.enqueue();
  fs.realpath(path, (error, resolvedPath) => {
    if (error) return queue.dequeue(suppressErrors ? null : error, state);
    fs.stat(resolvedPath, (error$1, stat2) => {
      if (error$1) return queue.dequeue(suppressErrors ? null : error$1, state);
      if (stat2.isDirectory() && isRecursive(path, resolvedPath, state)) return queue.dequeue(null, state);
      callback$1(stat2, resolvedPath);
      queue.dequeue(null, state);
    });
  });
};
var resolveSymlinks = function(path, state, callback$1) {
  const { queue, fs, options: { suppressErrors } } = state;
  queue.enqueue();
  try {
    const resolvedPath = fs.realpathSync(path);
    const stat2 = fs.statSync(resolvedPath);
    if (stat2.isDirectory() && isRecursive(path, resolvedPath, state)) return;
    callback$1(stat2, resolvedPath);
  } catch (e) {
    if (!suppressErrors) throw e;
  }
};
function build$2(options, isSynchronous) {
  if (!options.resolveSymlinks || options.excludeSymlinks) return null;
  return isSynchronous ? resolveSymlinks : resolveSymlinksAsync;
}
function isRecursive(path, resolved, state) {
  if (state.options.useRealPaths) return isRecursiveUsingRealPaths(resolved, state);
  let parent = dirname(path);
  let depth = 1;
  while (parent !== state.root && depth < 2) {
    const resolvedPath = state.symlinks.get(parent);
    const isSameRoot = !!resolvedPath && (resolvedPath === resolved || resolvedPath.startsWith(resolved) || resolved.startsWith(resolvedPath));
    if (isSameRoot) depth++;
    else parent = dirname(parent);
  }
  state.symlinks.set(path, resolved);
  return depth > 1;
}
function isRecursiveUsingRealPaths(resolved, state) {
  return state.visited.includes(resolved + state.options.pathSeparator);
}
var onlyCountsSync = (state) => {
  return state.counts;
};
var groupsSync = (state) => {
  return state.groups;
};
var defaultSync = (state) => {
  return state.paths;
};
var limitFilesSync = (state) => {
  return state.paths.slice(0, state.options.maxFiles);
};
var onlyCountsAsync = (state, error, callback$1) => {
  report(error, callback$1, state.counts, state.options.suppressErrors);
  return null;
};
var defaultAsync = (state, error, callback$1) => {
  report(error, callback$1, state.paths, state.options.suppressErrors);
  return null;
};
var limitFilesAsync = (state, error, callback$1) => {
  report(error, callback$1, state.paths.slice(0, state.options.maxFiles), state.options.suppressErrors);
  return null;
};
var groupsAsync = (state, error, callback$1) => {
  report(error, callback$1, state.groups, state.options.suppressErrors);
  return null;
};
function report(error, callback$1, output, suppressErrors) {
  if (error && !suppressErrors) callback$1(error, output);
  else callback$1(null, output);
}
function build$1(options, isSynchronous) {
  const { onlyCounts, group, maxFiles } = options;
  if (onlyCounts) return isSynchronous ? onlyCountsSync : onlyCountsAsync;
  else if (group) return isSynchronous ? groupsSync : groupsAsync;
  else if (maxFiles) return isSynchronous ? limitFilesSync : limitFilesAsync;
  else return isSynchronous ? defaultSync : defaultAsync;
}
var readdirOpts = { withFileTypes: true };
var walkAsync = (state, crawlPath, directoryPath, currentDepth, callback$1) => {
  state.queue.enqueue();
  if (currentDepth < 0) return state.queue.dequeue(null, state);
  const { fs } = state;
  state.visited.push(crawlPath);
  state.counts.directories++;
  fs.readdir(crawlPath || ".", readdirOpts, (error, entries = []) => {
    callback$1(entries, directoryPath, currentDepth);
    state.queue.dequeue(state.options.suppressErrors ? null : error, state);
  });
};
var walkSync = (state, crawlPath, directoryPath, currentDepth, callback$1) => {
  const { fs } = state;
  if (currentDepth < 0) return;
  state.visited.push(crawlPath);
  state.counts.directories++;
  let entries = [];
  try {
    entries = fs.readdirSync(crawlPath || ".", readdirOpts);
  } catch (e) {
    if (!state.options.suppressErrors) throw e;
  }
  callback$1(entries, directoryPath, currentDepth);
};
function build(isSynchronous) {
  return isSynchronous ? walkSync : walkAsync;
}
var Queue = class {
  count = 0;
  constructor(onQueueEmpty) {
    this.onQueueEmpty = onQueueEmpty;
  }
  enqueue() {
    this.count++;
    return this.count;
  }
  dequeue(error, output) {
    if (this.onQueueEmpty && (--this.count <= 0 || error)) {
      this.onQueueEmpty(error, output);
      if (error) {
        output.controller.abort();
        this.onQueueEmpty = void 0;
      }
    }
  }
};
var Counter = class {
  _files = 0;
  _directories = 0;
  set files(num) {
    this._files = num;
  }
  get files() {
    return this._files;
  }
  set directories(num) {
    this._directories = num;
  }
  get directories() {
    return this._directories;
  }
  /**
  * @deprecated use `directories` instead
  */
  /* c8 ignore next 3 */
  get dirs() {
    return this._directories;
  }
};
var Aborter = class {
  aborted = false;
  abort() {
    this.aborted = true;
  }
};
var Walker = class {
  root;
  isSynchronous;
  state;
  joinPath;
  pushDirectory;
  pushFile;
  getArray;
  groupFiles;
  resolveSymlink;
  walkDirectory;
  callbackInvoker;
  constructor(root, options, callback$1) {
    this.isSynchronous = !callback$1;
    this.callbackInvoker = build$1(options, this.isSynchronous);
    this.root = normalizePath(root, options);
    this.state = {
      root: isRootDirectory(this.root) ? this.root : this.root.slice(0, -1),
      paths: [""].slice(0, 0),
      groups: [],
      counts: new Counter(),
      options,
      queue: new Queue((error, state) => this.callbackInvoker(state, error, callback$1)),
      symlinks: /* @__PURE__ */ new Map(),
      visited: [""].slice(0, 0),
      controller: new Aborter(),
      fs: options.fs || nativeFs
    };
    this.joinPath = build$7(this.root, options);
    this.pushDirectory = build$6(this.root, options);
    this.pushFile = build$5(options);
    this.getArray = build$4(options);
    this.groupFiles = build$3(options);
    this.resolveSymlink = build$2(options, this.isSynchronous);
    this.walkDirectory = build(this.isSynchronous);
  }
  start() {
    this.pushDirectory(this.root, this.state.paths, this.state.options.filters);
    this.walkDirectory(this.state, this.root, this.root, this.state.options.maxDepth, this.walk);
    return this.isSynchronous ? this.callbackInvoker(this.state, null) : null;
  }
  walk = (entries, directoryPath, depth) => {
    const { paths, options: { filters, resolveSymlinks: resolveSymlinks$1, excludeSymlinks, exclude, maxFiles, signal, useRealPaths, pathSeparator }, controller } = this.state;
    if (controller.aborted || signal && signal.aborted || maxFiles && paths.length > maxFiles) return;
    const files = this.getArray(this.state.paths);
    for (let i = 0; i < entries.length; ++i) {
      const entry = entries[i];
      if (entry.isFile() || entry.isSymbolicLink() && !resolveSymlinks$1 && !excludeSymlinks) {
        const filename = this.joinPath(entry.name, directoryPath);
        this.pushFile(filename, files, this.state.counts, filters);
      } else if (entry.isDirectory()) {
        let path = joinDirectoryPath(entry.name, directoryPath, this.state.options.pathSeparator);
        if (exclude && exclude(entry.name, path)) continue;
        this.pushDirectory(path, paths, filters);
        this.walkDirectory(this.state, path, path, depth - 1, this.walk);
      } else if (this.resolveSymlink && entry.isSymbolicLink()) {
        let path = joinPathWithBasePath(entry.name, directoryPath);
        this.resolveSymlink(path, this.state, (stat2, resolvedPath) => {
          if (stat2.isDirectory()) {
            resolvedPath = normalizePath(resolvedPath, this.state.options);
            if (exclude && exclude(entry.name, useRealPaths ? resolvedPath : path + pathSeparator)) return;
            this.walkDirectory(this.state, resolvedPath, useRealPaths ? resolvedPath : path + pathSeparator, depth - 1, this.walk);
          } else {
            resolvedPath = useRealPaths ? resolvedPath : path;
            const filename = basename(resolvedPath);
            const directoryPath$1 = normalizePath(dirname(resolvedPath), this.state.options);
            resolvedPath = this.joinPath(filename, directoryPath$1);
            this.pushFile(resolvedPath, files, this.state.counts, filters);
          }
        });
      }
    }
    this.groupFiles(this.state.groups, directoryPath, files);
  };
};
function promise(root, options) {
  return new Promise((resolve$1, reject) => {
    callback(root, options, (err, output) => {
      if (err) return reject(err);
      resolve$1(output);
    });
  });
}
function callback(root, options, callback$1) {
  let walker = new Walker(root, options, callback$1);
  walker.start();
}
function sync(root, options) {
  const walker = new Walker(root, options);
  return walker.start();
}
var APIBuilder = class {
  constructor(root, options) {
    this.root = root;
    this.options = options;
  }
  withPromise() {
    return promise(this.root, this.options);
  }
  withCallback(cb) {
    callback(this.root, this.options, cb);
  }
  sync() {
    return sync(this.root, this.options);
  }
};
var pm = null;
try {
  __require.resolve("picomatch");
  pm = __require("picomatch");
} catch {
}
var Builder = class {
  globCache = {};
  options = {
    maxDepth: Infinity,
    suppressErrors: true,
    pathSeparator: sep,
    filters: []
  };
  globFunction;
  constructor(options) {
    this.options = {
      ...this.options,
      ...options
    };
    this.globFunction = this.options.globFunction;
  }
  group() {
    this.options.group = true;
    return this;
  }
  withPathSeparator(separator) {
    this.options.pathSeparator = separator;
    return this;
  }
  withBasePath() {
    this.options.includeBasePath = true;
    return this;
  }
  withRelativePaths() {
    this.options.relativePaths = true;
    return this;
  }
  withDirs() {
    this.options.includeDirs = true;
    return this;
  }
  withMaxDepth(depth) {
    this.options.maxDepth = depth;
    return this;
  }
  withMaxFiles(limit) {
    this.options.maxFiles = limit;
    return this;
  }
  withFullPaths() {
    this.options.resolvePaths = true;
    this.options.includeBasePath = true;
    return this;
  }
  withErrors() {
    this.options.suppressErrors = false;
    return this;
  }
  withSymlinks({ resolvePaths = true } = {}) {
    this.options.resolveSymlinks = true;
    this.options.useRealPaths = resolvePaths;
    return this.withFullPaths();
  }
  withAbortSignal(signal) {
    this.options.signal = signal;
    return this;
  }
  normalize() {
    this.options.normalizePath = true;
    return this;
  }
  filter(predicate) {
    this.options.filters.push(predicate);
    return this;
  }
  onlyDirs() {
    this.options.excludeFiles = true;
    this.options.includeDirs = true;
    return this;
  }
  exclude(predicate) {
    this.options.exclude = predicate;
    return this;
  }
  onlyCounts() {
    this.options.onlyCounts = true;
    return this;
  }
  crawl(root) {
    return new APIBuilder(root || ".", this.options);
  }
  withGlobFunction(fn) {
    this.globFunction = fn;
    return this;
  }
  /**
  * @deprecated Pass options using the constructor instead:
  * ```ts
  * new fdir(options).crawl("/path/to/root");
  * ```
  * This method will be removed in v7.0
  */
  /* c8 ignore next 4 */
  crawlWithOptions(root, options) {
    this.options = {
      ...this.options,
      ...options
    };
    return new APIBuilder(root || ".", this.options);
  }
  glob(...patterns) {
    if (this.globFunction) return this.globWithOptions(patterns);
    return this.globWithOptions(patterns, ...[{ dot: true }]);
  }
  globWithOptions(patterns, ...options) {
    const globFn = this.globFunction || pm;
    if (!globFn) throw new Error("Please specify a glob function to use glob matching.");
    var isMatch = this.globCache[patterns.join("\0")];
    if (!isMatch) {
      isMatch = globFn(patterns, ...options);
      this.globCache[patterns.join("\0")] = isMatch;
    }
    this.options.filters.push((path) => isMatch(path));
    return this;
  }
};

// node_modules/tinyglobby/dist/index.mjs
var import_picomatch = __toESM(require_picomatch2(), 1);
var isReadonlyArray = Array.isArray;
var BACKSLASHES = /\\/g;
var DRIVE_RELATIVE_PATH = /^[A-Za-z]:$/;
var isWin = process.platform === "win32";
var ONLY_PARENT_DIRECTORIES = /^(\/?\.\.)+$/;
function getPartialMatcher(patterns, options = {}) {
  const patternsCount = patterns.length;
  const patternsParts = Array(patternsCount);
  const matchers = Array(patternsCount);
  let i, j;
  for (i = 0; i < patternsCount; i++) {
    const parts = splitPattern(patterns[i]);
    patternsParts[i] = parts;
    const partsCount = parts.length;
    const partMatchers = Array(partsCount);
    for (j = 0; j < partsCount; j++) partMatchers[j] = (0, import_picomatch.default)(parts[j], options);
    matchers[i] = partMatchers;
  }
  return (input) => {
    const inputParts = input.split("/");
    if (inputParts[0] === ".." && ONLY_PARENT_DIRECTORIES.test(input)) return true;
    for (i = 0; i < patternsCount; i++) {
      const patternParts = patternsParts[i];
      const matcher = matchers[i];
      const inputPatternCount = inputParts.length;
      const minParts = Math.min(inputPatternCount, patternParts.length);
      j = 0;
      while (j < minParts) {
        const part = patternParts[j];
        if (part.includes("/")) return true;
        if (!matcher[j](inputParts[j])) break;
        if (!options.noglobstar && part === "**") return true;
        j++;
      }
      if (j === inputPatternCount) return true;
    }
    return false;
  };
}
var WIN32_ROOT_DIR = /^[A-Z]:\/$/i;
var isRoot = isWin ? (p) => WIN32_ROOT_DIR.test(p) : (p) => p === "/";
function buildFormat(cwd, root, absolute) {
  if (cwd === root || root.startsWith(`${cwd}/`)) {
    if (absolute) {
      const start = cwd.length + +!isRoot(cwd);
      return (p, isDir) => p.slice(start, isDir ? -1 : void 0) || ".";
    }
    const prefix = root.slice(cwd.length + 1);
    if (prefix) return (p, isDir) => {
      if (p === ".") return prefix;
      const result = `${prefix}/${p}`;
      return isDir ? result.slice(0, -1) : result;
    };
    return (p, isDir) => isDir && p !== "." ? p.slice(0, -1) : p;
  }
  if (absolute) return (p) => posix.relative(cwd, p) || ".";
  return (p) => posix.relative(cwd, `${root}/${p}`) || ".";
}
function buildRelative(cwd, root) {
  if (root.startsWith(`${cwd}/`)) {
    const prefix = root.slice(cwd.length + 1);
    return (p) => `${prefix}/${p}`;
  }
  return (p) => {
    const result = posix.relative(cwd, `${root}/${p}`);
    return p[p.length - 1] === "/" && result !== "" ? `${result}/` : result || ".";
  };
}
function ensureNonDriveRelativePath(path) {
  return path.replace(DRIVE_RELATIVE_PATH, (match) => `${match}/`);
}
var splitPatternOptions = { parts: true };
function splitPattern(path) {
  var _result$parts;
  const result = import_picomatch.default.scan(path, splitPatternOptions);
  return ((_result$parts = result.parts) === null || _result$parts === void 0 ? void 0 : _result$parts.length) ? result.parts : [path];
}
var POSIX_UNESCAPED_GLOB_SYMBOLS = /(?<!\\)([()[\]{}*?|]|^!|[!+@](?=\()|\\(?![()[\]{}!*+?@|]))/g;
var WIN32_UNESCAPED_GLOB_SYMBOLS = /(?<!\\)([()[\]{}]|^!|[!+@](?=\())/g;
var escapePosixPath = (path) => path.replace(POSIX_UNESCAPED_GLOB_SYMBOLS, "\\$&");
var escapeWin32Path = (path) => path.replace(WIN32_UNESCAPED_GLOB_SYMBOLS, "\\$&");
var escapePath = isWin ? escapeWin32Path : escapePosixPath;
function isDynamicPattern(pattern, options) {
  if ((options === null || options === void 0 ? void 0 : options.caseSensitiveMatch) === false) return true;
  const scan2 = import_picomatch.default.scan(pattern);
  return scan2.isGlob || scan2.negated;
}
function log(...tasks) {
  console.log(`[tinyglobby ${(/* @__PURE__ */ new Date()).toLocaleTimeString("es")}]`, ...tasks);
}
function ensureStringArray(value) {
  return typeof value === "string" ? [value] : value !== null && value !== void 0 ? value : [];
}
var PARENT_DIRECTORY = /^(\/?\.\.)+/;
var ESCAPING_BACKSLASHES = /\\(?=[()[\]{}!*+?@|])/g;
function normalizePattern(pattern, opts, props, isIgnore) {
  var _PARENT_DIRECTORY$exe;
  const cwd = opts.cwd;
  let result = pattern;
  if (pattern[pattern.length - 1] === "/") result = pattern.slice(0, -1);
  if (result[result.length - 1] !== "*" && opts.expandDirectories) result += "/**";
  const escapedCwd = escapePath(cwd);
  result = isAbsolute(result.replace(ESCAPING_BACKSLASHES, "")) ? posix.relative(escapedCwd, result) : posix.normalize(result);
  const parentDir = (_PARENT_DIRECTORY$exe = PARENT_DIRECTORY.exec(result)) === null || _PARENT_DIRECTORY$exe === void 0 ? void 0 : _PARENT_DIRECTORY$exe[0];
  const parts = splitPattern(result);
  if (parentDir) {
    const n = (parentDir.length + 1) / 3;
    let i = 0;
    const cwdParts = escapedCwd.split("/");
    while (i < n && parts[i + n] === cwdParts[cwdParts.length + i - n]) {
      result = result.slice(0, (n - i - 1) * 3) + result.slice((n - i) * 3 + parts[i + n].length + 1) || ".";
      i++;
    }
    const potentialRoot = posix.join(cwd, parentDir.slice(i * 3));
    if (potentialRoot[0] !== "." && props.root.length > potentialRoot.length) {
      props.root = ensureNonDriveRelativePath(potentialRoot);
      props.depthOffset = -n + i;
    }
  }
  if (!isIgnore && props.depthOffset >= 0) {
    var _props$commonPath;
    (_props$commonPath = props.commonPath) !== null && _props$commonPath !== void 0 || (props.commonPath = parts);
    const newCommonPath = [];
    const length = Math.min(props.commonPath.length, parts.length);
    for (let i = 0; i < length; i++) {
      const part = parts[i];
      if (part === "**" && !parts[i + 1]) {
        newCommonPath.pop();
        break;
      }
      if (i === parts.length - 1 || part !== props.commonPath[i] || isDynamicPattern(part)) break;
      newCommonPath.push(part);
    }
    props.depthOffset = newCommonPath.length;
    props.commonPath = newCommonPath;
    props.root = ensureNonDriveRelativePath(newCommonPath.length > 0 ? posix.join(cwd, ...newCommonPath) : cwd);
  }
  return result;
}
function processPatterns(options, patterns, props) {
  const matchPatterns = [];
  const ignorePatterns = [];
  for (const pattern of options.ignore) {
    if (!pattern) continue;
    if (pattern[0] !== "!" || pattern[1] === "(") ignorePatterns.push(normalizePattern(pattern, options, props, true));
  }
  for (const pattern of patterns) {
    if (!pattern) continue;
    if (pattern[0] !== "!" || pattern[1] === "(") matchPatterns.push(normalizePattern(pattern, options, props, false));
    else if (pattern[1] !== "!" || pattern[2] === "(") ignorePatterns.push(normalizePattern(pattern.slice(1), options, props, true));
  }
  return {
    match: matchPatterns,
    ignore: ignorePatterns
  };
}
function buildCrawler(options, patterns) {
  const cwd = options.cwd;
  const props = {
    root: cwd,
    depthOffset: 0
  };
  const processed = processPatterns(options, patterns, props);
  if (options.debug) log("internal processing patterns:", processed);
  const { absolute, caseSensitiveMatch, debug, dot, followSymbolicLinks, onlyDirectories } = options;
  const root = props.root.replace(BACKSLASHES, "");
  const matchOptions = {
    dot,
    nobrace: options.braceExpansion === false,
    nocase: !caseSensitiveMatch,
    noextglob: options.extglob === false,
    noglobstar: options.globstar === false,
    posix: true
  };
  const matcher = (0, import_picomatch.default)(processed.match, matchOptions);
  const ignore = (0, import_picomatch.default)(processed.ignore, matchOptions);
  const partialMatcher = getPartialMatcher(processed.match, matchOptions);
  const format = buildFormat(cwd, root, absolute);
  const excludeFormatter = absolute ? format : buildFormat(cwd, root, true);
  const excludePredicate = (_, p) => {
    const relativePath = excludeFormatter(p, true);
    return relativePath !== "." && !partialMatcher(relativePath) || ignore(relativePath);
  };
  let maxDepth;
  if (options.deep !== void 0) maxDepth = Math.round(options.deep - props.depthOffset);
  const crawler = new Builder({
    filters: [debug ? (p, isDirectory) => {
      const path = format(p, isDirectory);
      const matches = matcher(path) && !ignore(path);
      if (matches) log(`matched ${path}`);
      return matches;
    } : (p, isDirectory) => {
      const path = format(p, isDirectory);
      return matcher(path) && !ignore(path);
    }],
    exclude: debug ? (_, p) => {
      const skipped = excludePredicate(_, p);
      log(`${skipped ? "skipped" : "crawling"} ${p}`);
      return skipped;
    } : excludePredicate,
    fs: options.fs,
    pathSeparator: "/",
    relativePaths: !absolute,
    resolvePaths: absolute,
    includeBasePath: absolute,
    resolveSymlinks: followSymbolicLinks,
    excludeSymlinks: !followSymbolicLinks,
    excludeFiles: onlyDirectories,
    includeDirs: onlyDirectories || !options.onlyFiles,
    maxDepth,
    signal: options.signal
  }).crawl(root);
  if (options.debug) log("internal properties:", {
    ...props,
    root
  });
  return [crawler, cwd !== root && !absolute && buildRelative(cwd, root)];
}
function formatPaths(paths, mapper) {
  if (mapper) for (let i = paths.length - 1; i >= 0; i--) paths[i] = mapper(paths[i]);
  return paths;
}
var defaultOptions = {
  caseSensitiveMatch: true,
  debug: !!process.env.TINYGLOBBY_DEBUG,
  expandDirectories: true,
  followSymbolicLinks: true,
  onlyFiles: true
};
function getOptions(options) {
  const opts = Object.assign({}, options);
  for (const key in defaultOptions) if (opts[key] === void 0) Object.assign(opts, { [key]: defaultOptions[key] });
  opts.cwd = (opts.cwd instanceof URL ? fileURLToPath(opts.cwd) : resolve2(opts.cwd || process.cwd())).replace(BACKSLASHES, "/");
  opts.ignore = ensureStringArray(opts.ignore);
  opts.fs && (opts.fs = {
    readdir: opts.fs.readdir || readdir,
    readdirSync: opts.fs.readdirSync || readdirSync,
    realpath: opts.fs.realpath || realpath,
    realpathSync: opts.fs.realpathSync || realpathSync,
    stat: opts.fs.stat || stat,
    statSync: opts.fs.statSync || statSync
  });
  if (opts.debug) log("globbing with options:", opts);
  return opts;
}
function getCrawler(globInput, inputOptions = {}) {
  var _ref;
  if (globInput && (inputOptions === null || inputOptions === void 0 ? void 0 : inputOptions.patterns)) throw new Error("Cannot pass patterns as both an argument and an option");
  const isModern = isReadonlyArray(globInput) || typeof globInput === "string";
  const patterns = ensureStringArray((_ref = isModern ? globInput : globInput.patterns) !== null && _ref !== void 0 ? _ref : "**/*");
  const options = getOptions(isModern ? inputOptions : globInput);
  return patterns.length > 0 ? buildCrawler(options, patterns) : [];
}
async function glob(globInput, options) {
  const [crawler, relative2] = getCrawler(globInput, options);
  return crawler ? formatPaths(await crawler.withPromise(), relative2) : [];
}

// src/domain/flaky/attempts.ts
var FAILED = 1;
var PASSED = 2;
var RESULT = FAILED | PASSED;
var RAN = 4;
var ENDED_PASSING = 8;
var ENDED_FAILING = 16;
var VARIANTS = 32;
function addTestCase(flags, c) {
  if (!c.failed && !c.passed) return flags;
  let f = flags;
  if (f & RAN && (!c.repeatIsRetry || f & ENDED_PASSING)) f |= VARIANTS;
  f |= RAN | (c.failed ? FAILED : 0) | (c.passed ? ENDED_PASSING : ENDED_FAILING);
  const passed = f & VARIANTS ? !(f & ENDED_FAILING) : (f & ENDED_PASSING) !== 0;
  return passed ? f | PASSED : f & ~PASSED;
}

// src/domain/flaky/identity.ts
import { hash } from "node:crypto";
var NAMESPACE_URL = Buffer.from("6ba7b8119dad11d180b400c04fd430c8", "hex");
var UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-([0-9a-f])[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
var HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, "0"));
var scratch = Buffer.alloc(1024);
NAMESPACE_URL.copy(scratch);
function uuidV5(name) {
  if (16 + name.length * 3 > scratch.length) {
    scratch = Buffer.alloc(2 * (16 + name.length * 3));
    NAMESPACE_URL.copy(scratch);
  }
  const length = 16 + scratch.write(name, 16, "utf8");
  const d = hash("sha1", scratch.subarray(0, length), "buffer");
  const h = (i) => HEX[d[i]];
  const version2 = HEX[d[6] & 15 | 80];
  const variant = HEX[d[8] & 63 | 128];
  return `${h(0)}${h(1)}${h(2)}${h(3)}-${h(4)}${h(5)}-${version2}${h(7)}-${variant}${h(9)}-${h(10)}${h(11)}${h(12)}${h(13)}${h(14)}${h(15)}`;
}
function isUuid(value) {
  return UUID.test(value);
}
function testCaseId(orgSlug, repoFullName, test, variant = "", explicitId = "") {
  const once = (id2) => {
    const withVariant = (values) => uuidV5((variant ? [...values, variant] : values).join("#"));
    if (id2.startsWith("trunk:")) return withVariant([orgSlug, repoFullName, id2]);
    if (isUuid(id2) && id2[14] === "5") return variant ? uuidV5(`${id2}#${variant}`) : id2.toLowerCase();
    return withVariant([orgSlug, repoFullName, test.file, test.classname, test.parent, test.name, "JUNIT_TESTCASE"]);
  };
  const id = once(explicitId);
  return variant ? once(id) : id;
}

// src/domain/text.ts
var LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
var isWellFormed = (text) => text.isWellFormed();
function unstorableCharacter(text) {
  const nul = text.indexOf("\0");
  const lone = isWellFormed(text) ? -1 : text.search(LONE_SURROGATE);
  if (nul === -1 && lone === -1) return null;
  return nul !== -1 && (lone === -1 || nul < lone) ? { kind: "nul", index: nul } : { kind: "lone_surrogate", index: lone };
}

// src/formats/junit.ts
var JUnitError = class extends Error {
  constructor(message, line, column) {
    super(message);
    this.line = line;
    this.column = column;
  }
  line;
  column;
};
var MAX_MESSAGE = 2e3;
var MAX_FAILURE_TEXT = 4e3;
function parseTimestamp(value) {
  if (!value) return null;
  const text = value.trim();
  const zoned = /([zZ]|[+-]\d\d:?\d\d)$/.test(text) ? text : `${text}Z`;
  const ms = Date.parse(zoned);
  return Number.isFinite(ms) ? ms : null;
}
function parseJUnit(xml, onCase) {
  const reader = new JUnitReader(xml);
  let testCases = 0;
  for (let batch = reader.read(1024); batch.length > 0; batch = reader.read(1024)) {
    testCases += batch.length;
    batch.forEach(onCase);
  }
  return { testCases };
}
var JUnitReader = class {
  #scanner;
  #batch = [];
  constructor(xml) {
    this.#scanner = new JUnitScanner(xml, (c) => this.#batch.push(c));
  }
  read(max) {
    this.#batch = [];
    this.#scanner.scan(() => this.#batch.length >= max);
    return this.#batch;
  }
};
var OTHER = 0;
var SUITE = 1;
var CASE = 2;
var FAILURE = 3;
var FLAKY = 4;
var SKIPPED = 5;
var PROPERTY = 6;
var OUTPUT = 7;
function kindAt(xml, start, length) {
  const is = (word) => xml.startsWith(word, start);
  switch (length) {
    case 5:
      return is("error") ? FAILURE : OTHER;
    case 7:
      return is("failure") ? FAILURE : is("skipped") ? SKIPPED : OTHER;
    case 8:
      return is("testcase") ? CASE : is("property") ? PROPERTY : OTHER;
    case 9:
      return is("testsuite") ? SUITE : OTHER;
    case 10:
      return is("rerunError") ? FAILURE : is("flakyError") ? FLAKY : is("system-out") || is("system-err") ? OUTPUT : OTHER;
    case 12:
      return is("rerunFailure") ? FAILURE : is("flakyFailure") ? FLAKY : OTHER;
    default:
      return OTHER;
  }
}
var NONE = 0;
var NAME = 1;
var CLASSNAME = 2;
var FILE = 3;
var FILEPATH = 4;
var ID = 5;
var MESSAGE = 6;
var TIMESTAMP = 7;
var STATUS = 8;
var TYPE = 9;
var SLOT_NAMES = ["", "name", "classname", "file", "filepath", "id", "message", "timestamp", "status", "type"];
var NOT_RUN_STATUSES = /* @__PURE__ */ new Set(["disabled", "skipped", "notrun"]);
var ATTRIBUTES_COMPARED_IN_PLACE = 16;
var SOUGHT = ["&", "<", "\n", "	", "\r", "]]>"];
var AMP = 0;
var LT = 1;
var LF = 2;
var TAB = 3;
var CR = 4;
var CDATA_END = 5;
var XML_DECLARATION = /^<\?xml\s+version\s*=\s*(["'])1\.[0-9]+\1(\s+encoding\s*=\s*(["'])[A-Za-z][A-Za-z0-9._-]*\3)?(\s+standalone\s*=\s*(["'])(yes|no)\5)?\s*\?>$/;
var ENTITIES = { lt: "<", gt: ">", amp: "&", quot: '"', apos: "'" };
var isSpace = (c) => c === 32 || c === 10 || c === 9 || c === 13;
var isNameStart = (c) => c >= 97 && c <= 122 || c >= 65 && c <= 90 || c === 95 || c === 58 || c >= 192;
var isNameChar = (c) => isNameStart(c) || c >= 48 && c <= 57 || c === 45 || c === 46 || c === 183;
var JUnitScanner = class {
  constructor(xml, onCase) {
    this.xml = xml;
    this.onCase = onCase;
  }
  xml;
  onCase;
  pos = 0;
  /** The open elements, outermost first: where each one's name starts, its length, and the element's kind. */
  open = [];
  suites = [];
  rootClosed = false;
  count = 0;
  /** A suite had the `go.version` property: a Go report, from there on (Go reports are Go throughout). */
  goReport = false;
  /**
   * Where the next `&`, `<`, tab, line feed and carriage return are (xml.length when none), so
   * that text and attribute values are checked with the native string search, each character
   * looked at once, rather than character by character.
   */
  next = new Int32Array(SOUGHT.length).fill(-1);
  /** Offsets of the current tag's attribute names, for the duplicate check. */
  attrNames = [];
  /**
   * Once the current tag has ATTRIBUTES_COMPARED_IN_PLACE attribute names, a hash table of them
   * (open addressing; a slot holds an index into attrNames plus one, 0 when empty), so a tag of
   * n attributes costs n look-ups, not n² comparisons. No string is made: the names are
   * compared in place.
   */
  attrTable = new Int32Array(0);
  /** A DOCTYPE was read (XML allows one, before the root). */
  doctype = false;
  // The testcase being read, if any.
  inCase = false;
  name = "";
  classname = "";
  file;
  explicitId = "";
  failed = false;
  flaky = false;
  skipped = false;
  message = null;
  /** Collecting the text of the first failure element when it has no message attribute. */
  collecting = false;
  text = "";
  /** The first failure element: its type, whether it was seen, whether its text is being read, output elements open in it. */
  failureType = null;
  failureSeen = false;
  detailing = false;
  outputDepth = 0;
  detail = "";
  /** The attributes of the tag being read that a test case needs, by slot (see `slotOf`). */
  attrs = new Array(TYPE + 1).fill(void 0);
  finished = false;
  /** Reads on until `enough()` holds after a testcase, or to the end of the document. */
  scan(enough) {
    const xml = this.xml;
    if (this.finished) return;
    if (this.pos === 0) this.refuseUnstorable();
    if (this.pos === 0 && xml.charCodeAt(0) === 65279) this.pos = 1;
    const count = this.count;
    for (; ; ) {
      if (this.count !== count && enough()) return;
      const lt = xml.indexOf("<", this.pos);
      const textEnd = lt === -1 ? xml.length : lt;
      if (textEnd > this.pos) this.readText(this.pos, textEnd);
      if (lt === -1) break;
      this.pos = lt;
      const next = xml.charCodeAt(lt + 1);
      if (next === 47) this.readCloseTag();
      else if (next === 33) this.readDeclaration();
      else if (next === 63) this.readInstruction();
      else this.readOpenTag();
    }
    if (this.open.length > 0) throw this.error(`unexpected end of document: <${this.openName()}> is not closed`, xml.length);
    if (!this.rootClosed) throw this.error("no root element: expected <testsuites> or <testsuite>", xml.length);
    this.finished = true;
  }
  /** NUL and lone surrogates, which a JSON string can hold and XML cannot, anywhere in the report. */
  refuseUnstorable() {
    const found = unstorableCharacter(this.xml);
    if (found?.kind === "nul") throw this.error("NUL characters are not allowed in XML", found.index);
    if (found) throw this.error(`a lone surrogate (U+${this.xml.charCodeAt(found.index).toString(16).toUpperCase()}) is not a character`, found.index);
  }
  error(message, at = this.pos) {
    let line = 1;
    let lineStart = 0;
    for (let nl = this.xml.indexOf("\n"); nl !== -1 && nl < at; nl = this.xml.indexOf("\n", nl + 1)) {
      line++;
      lineStart = nl + 1;
    }
    return new JUnitError(message, line, at - lineStart + 1);
  }
  readText(start, end) {
    const xml = this.xml;
    if (this.open.length === 0) {
      for (let i = start; i < end; i++) {
        if (!isSpace(xml.charCodeAt(i))) throw this.error(this.rootClosed ? "text after the root element" : "text before the root element", i);
      }
      return;
    }
    for (let amp = this.nextOf(AMP, start); amp < end; amp = this.nextOf(AMP, this.entityEnd(amp))) ;
    const cdataEnd = this.nextOf(CDATA_END, start);
    if (cdataEnd < end) throw this.error("]]> is not allowed in text", cdataEnd);
    if (this.collecting) this.collect(start, end, true);
    if (this.detailing && this.outputDepth === 0) this.collectDetail(start, end, true);
  }
  /** The first SOUGHT[which] at or after `from`, or xml.length. */
  nextOf(which, from) {
    const known = this.next[which];
    if (known >= from) return known;
    const at = this.xml.indexOf(SOUGHT[which], from);
    return this.next[which] = at === -1 ? this.xml.length : at;
  }
  /** Checks the entity or character reference at `amp` and answers where it ends. */
  entityEnd(amp) {
    const semicolon = this.xml.indexOf(";", amp + 1);
    if (semicolon === -1 || semicolon - amp > 32) throw this.error("& must start an entity reference (write &amp; for a literal &)", amp);
    this.entity(amp, semicolon);
    return semicolon + 1;
  }
  /** The text of the reference `&…;` spanning [amp, semicolon]. */
  entity(amp, semicolon) {
    const body = this.xml.slice(amp + 1, semicolon);
    if (!/^(#x?[0-9a-fA-F]+|[A-Za-z_][\w.-]*)$/.test(body)) throw this.error("& must start an entity reference (write &amp; for a literal &)", amp);
    if (body.charCodeAt(0) === 35) {
      const hex = body.charCodeAt(1) === 120;
      const digits = body.slice(hex ? 2 : 1);
      const code = (hex ? /^[0-9a-fA-F]+$/ : /^[0-9]+$/).test(digits) ? parseInt(digits, hex ? 16 : 10) : NaN;
      if (!(code > 0 && code <= 1114111) || code >= 55296 && code <= 57343) throw this.error(`&${body}; is not a valid character reference`, amp);
      return String.fromCodePoint(code);
    }
    const text = ENTITIES[body];
    if (text === void 0) throw this.error(`unknown entity &${body};`, amp);
    return text;
  }
  /**
   * Text with its references replaced, up to `limit` characters, line ends normalized as XML
   * does; in attribute values, literal tabs and line ends become spaces (character references
   * are kept as written).
   */
  decode(start, end, limit, attribute) {
    const text = this.xml.slice(start, end);
    let out = "";
    for (let i = 0; i < text.length && out.length < limit; ) {
      let amp = text.indexOf("&", i);
      if (amp === -1) amp = text.length;
      const stop = Math.min(amp, i + (limit - out.length));
      const raw = text.slice(i, stop);
      out += attribute ? raw.replace(/\r\n?|[\t\n]/g, " ") : raw.replace(/\r\n?/g, "\n");
      if (stop < amp || amp === text.length) break;
      const semicolon = text.indexOf(";", amp);
      out += this.entity(start + amp, start + semicolon);
      i = semicolon + 1;
    }
    return out;
  }
  collect(start, end, references) {
    const room = MAX_MESSAGE - this.text.length;
    if (room <= 0) return;
    this.text += references ? this.decode(start, end, room, false) : this.xml.slice(start, Math.min(end, start + room));
  }
  collectDetail(start, end, references) {
    const room = MAX_FAILURE_TEXT - this.detail.length;
    if (room <= 0) return;
    this.detail += references ? this.decode(start, end, room, false) : this.xml.slice(start, Math.min(end, start + room));
  }
  /** The end of the XML name starting at `start` (`start` itself when there is none). */
  nameEnd(start) {
    const xml = this.xml;
    if (!isNameStart(xml.charCodeAt(start))) return start;
    let i = start + 1;
    while (isNameChar(xml.charCodeAt(i))) i++;
    return i;
  }
  skipSpace(i) {
    while (isSpace(this.xml.charCodeAt(i))) i++;
    return i;
  }
  readOpenTag() {
    const xml = this.xml;
    const nameStart = this.pos + 1;
    const nameEnd = this.nameEnd(nameStart);
    if (nameEnd === nameStart) throw this.error("< must start a tag (write &lt; for a literal <)");
    if (this.open.length === 0) {
      const name = xml.slice(nameStart, nameEnd);
      if (this.rootClosed) throw this.error(`a second root element <${name}>`);
      if (name !== "testsuites" && name !== "testsuite") throw this.error(`root element is <${name}>, expected <testsuites> or <testsuite>`);
    }
    const kind = kindAt(xml, nameStart, nameEnd - nameStart);
    if (kind !== OTHER) for (let k = NAME; k <= TYPE; k++) this.attrs[k] = void 0;
    this.attrNames.length = 0;
    let i = nameEnd;
    let selfClosing = false;
    for (; ; ) {
      const afterSpace = this.skipSpace(i);
      const c = xml.charCodeAt(afterSpace);
      if (c === 62) {
        i = afterSpace + 1;
        break;
      }
      if (c === 47 && xml.charCodeAt(afterSpace + 1) === 62) {
        i = afterSpace + 2;
        selfClosing = true;
        break;
      }
      if (afterSpace >= xml.length) throw this.error(`unexpected end of document in the tag <${xml.slice(nameStart, nameEnd)}>`, afterSpace);
      const attrEnd = this.nameEnd(afterSpace);
      if (attrEnd === afterSpace) throw this.error(`unexpected ${JSON.stringify(xml[afterSpace])} in the tag <${xml.slice(nameStart, nameEnd)}>`, afterSpace);
      if (afterSpace === i) throw this.error(`attributes of <${xml.slice(nameStart, nameEnd)}> must be separated by whitespace`, afterSpace);
      i = this.readAttribute(kind, nameStart, nameEnd, afterSpace, attrEnd);
    }
    this.pos = i;
    if (!selfClosing) this.open.push(nameStart, nameEnd - nameStart, kind);
    this.openElement(kind);
    if (selfClosing) this.closeElement(kind);
  }
  /** Reads the attribute whose name spans [start, end), keeping its value if a test case needs it; answers where it ends. */
  readAttribute(kind, tagStart, tagEnd, start, end) {
    const xml = this.xml;
    const length = end - start;
    const names = this.attrNames;
    if (names.length < 2 * ATTRIBUTES_COMPARED_IN_PLACE) {
      for (let k = 0; k < names.length; k += 2) {
        if (names[k + 1] - names[k] === length && this.sameAt(start, names[k], length)) {
          throw this.error(`the attribute ${xml.slice(start, end)} appears twice in <${xml.slice(tagStart, tagEnd)}>`, start);
        }
      }
      names.push(start, end);
      if (names.length === 2 * ATTRIBUTES_COMPARED_IN_PLACE) this.rehashAttributes();
    } else {
      if (this.findAttribute(start, end) !== -1) throw this.error(`the attribute ${xml.slice(start, end)} appears twice in <${xml.slice(tagStart, tagEnd)}>`, start);
      names.push(start, end);
      if (names.length > this.attrTable.length / 2) this.rehashAttributes();
      else this.attrTable[this.emptySlotOf(start, end)] = names.length / 2;
    }
    let i = this.skipSpace(end);
    if (xml.charCodeAt(i) !== 61) throw this.error(`the attribute ${xml.slice(start, end)} of <${xml.slice(tagStart, tagEnd)}> has no value (expected =)`, i);
    i = this.skipSpace(i + 1);
    const quote = xml.charCodeAt(i);
    if (quote !== 34 && quote !== 39) throw this.error(`the value of the attribute ${xml.slice(start, end)} of <${xml.slice(tagStart, tagEnd)}> must be quoted`, i);
    const valueStart = i + 1;
    const valueEnd = xml.indexOf(quote === 34 ? '"' : "'", valueStart);
    if (valueEnd === -1) throw this.error(`unexpected end of document in the value of the attribute ${xml.slice(start, end)}`, xml.length);
    const lt = this.nextOf(LT, valueStart);
    if (lt < valueEnd) throw this.error(`< is not allowed in an attribute value (write &lt;)`, lt);
    let plain = true;
    for (let amp = this.nextOf(AMP, valueStart); amp < valueEnd; amp = this.nextOf(AMP, this.entityEnd(amp))) plain = false;
    if (plain) plain = this.nextOf(LF, valueStart) > valueEnd && this.nextOf(TAB, valueStart) > valueEnd && this.nextOf(CR, valueStart) > valueEnd;
    const slot = kind === OTHER ? NONE : this.slotOf(kind, start, length);
    if (slot !== NONE) this.attrs[slot] = plain ? xml.slice(valueStart, valueEnd) : this.decode(valueStart, valueEnd, Infinity, true);
    return valueEnd + 1;
  }
  /** The hash of the name spanning [start, end) (FNV-1a over its UTF-16 code units). */
  hashAt(start, end) {
    let hash2 = 2166136261;
    for (let k = start; k < end; k++) hash2 = Math.imul(hash2 ^ this.xml.charCodeAt(k), 16777619);
    return hash2 >>> 0;
  }
  /** The slot of attrTable holding the name spanning [start, end), or -1. */
  findAttribute(start, end) {
    const table = this.attrTable;
    const names = this.attrNames;
    const mask = table.length - 1;
    for (let slot = this.hashAt(start, end) & mask; table[slot] !== 0; slot = slot + 1 & mask) {
      const k = 2 * (table[slot] - 1);
      if (names[k + 1] - names[k] === end - start && this.sameAt(start, names[k], end - start)) return slot;
    }
    return -1;
  }
  /** The empty slot where the name spanning [start, end) goes. */
  emptySlotOf(start, end) {
    const table = this.attrTable;
    const mask = table.length - 1;
    let slot = this.hashAt(start, end) & mask;
    while (table[slot] !== 0) slot = slot + 1 & mask;
    return slot;
  }
  /** Makes attrTable four times the names it holds (at most half full after doubling), holding them all. */
  rehashAttributes() {
    const names = this.attrNames;
    let size = 64;
    while (size < names.length * 2) size *= 2;
    this.attrTable = new Int32Array(size);
    for (let k = 0; k < names.length; k += 2) this.attrTable[this.emptySlotOf(names[k], names[k + 1])] = k / 2 + 1;
  }
  /** Which of the attributes a test case needs the one at `start` is, for an element of `kind`. */
  slotOf(kind, start, length) {
    const first = this.xml.charCodeAt(start);
    let slot = NONE;
    if (kind === CASE || kind === SUITE) {
      if (length === 4) slot = first === 110 ? NAME : first === 102 ? FILE : NONE;
      else if (length === 8 && first === 102) slot = FILEPATH;
      else if (kind === CASE && length === 9 && first === 99) slot = CLASSNAME;
      else if (kind === CASE && length === 2 && first === 105) slot = ID;
      else if (kind === CASE && length === 6 && first === 115) slot = STATUS;
      else if (kind === SUITE && length === 9 && first === 116) slot = TIMESTAMP;
    } else if (kind === PROPERTY) {
      if (length === 4 && first === 110) slot = NAME;
    } else if (kind === FAILURE || kind === FLAKY) {
      if (length === 7 && first === 109) slot = MESSAGE;
      else if (length === 4 && first === 116) slot = TYPE;
    }
    return slot !== NONE && this.isAt(SLOT_NAMES[slot], start) ? slot : NONE;
  }
  // String comparisons in place (startsWith costs more than these for the short names compared).
  sameAt(a, b, length) {
    for (let k = 0; k < length; k++) if (this.xml.charCodeAt(a + k) !== this.xml.charCodeAt(b + k)) return false;
    return true;
  }
  isAt(word, at) {
    for (let k = 0; k < word.length; k++) if (this.xml.charCodeAt(at + k) !== word.charCodeAt(k)) return false;
    return true;
  }
  openElement(kind) {
    if (kind === SUITE) {
      const outer = this.suites.at(-1);
      const a = this.attrs;
      this.suites.push({
        name: a[NAME] ?? "",
        file: a[FILE] ?? a[FILEPATH] ?? outer?.file ?? "",
        at: parseTimestamp(a[TIMESTAMP]) ?? outer?.at ?? null
      });
    } else if (kind === CASE) {
      this.inCase = true;
      const a = this.attrs;
      this.name = a[NAME] ?? "";
      this.classname = a[CLASSNAME] ?? "";
      this.file = a[FILE] ?? a[FILEPATH];
      this.explicitId = a[ID] ?? "";
      this.failed = this.flaky = this.collecting = false;
      this.skipped = a[STATUS] !== void 0 && NOT_RUN_STATUSES.has(a[STATUS].toLowerCase());
      this.message = null;
      this.text = "";
      this.failureType = null;
      this.failureSeen = this.detailing = false;
      this.outputDepth = 0;
      this.detail = "";
    } else if (this.inCase && (kind === FAILURE || kind === FLAKY)) {
      if (kind === FAILURE) this.failed = true;
      else this.flaky = true;
      if (!this.failureSeen) {
        this.failureSeen = this.detailing = true;
        this.failureType = this.attrs[TYPE]?.trim() || null;
      }
      if (this.message === null && !this.collecting) {
        const message = this.attrs[MESSAGE]?.trim();
        if (message) this.message = message.slice(0, MAX_MESSAGE);
        else this.collecting = true;
      }
    } else if (this.inCase && kind === SKIPPED) {
      this.skipped = true;
    } else if (this.detailing && kind === OUTPUT) {
      this.outputDepth++;
    } else if (kind === PROPERTY && !this.inCase && this.suites.length > 0 && this.attrs[NAME] === "go.version") {
      this.goReport = true;
    }
  }
  closeElement(kind) {
    if (this.open.length === 0) this.rootClosed = true;
    if (kind === SUITE) {
      this.suites.pop();
    } else if (kind === CASE && this.inCase) {
      this.inCase = false;
      const suite = this.suites.at(-1);
      const failed = this.failed || this.flaky;
      this.count++;
      this.onCase({
        name: this.name,
        classname: this.classname,
        file: this.file ?? suite?.file ?? "",
        parent: this.suites[0]?.name ?? "",
        explicitId: this.explicitId,
        at: suite?.at ?? null,
        failed,
        passed: !this.failed && !(this.skipped && !this.flaky),
        skipped: this.skipped && !failed,
        repeatIsRetry: this.goReport,
        message: failed ? this.message ?? firstLine(this.text) : null,
        failureType: failed ? this.failureType : null,
        failureText: failed ? this.detail.trim() || null : null
      });
    } else if (this.detailing && kind === OUTPUT) {
      this.outputDepth--;
    }
    if (kind === FAILURE || kind === FLAKY) {
      this.detailing = false;
      if (this.collecting) {
        this.collecting = false;
        this.message = firstLine(this.text);
      }
    }
  }
  readCloseTag() {
    const xml = this.xml;
    const nameStart = this.pos + 2;
    const nameEnd = this.nameEnd(nameStart);
    const open = this.open;
    if (open.length === 0) throw this.error(`</${xml.slice(nameStart, nameEnd)}> closes no open element`);
    const [openStart, openLength, kind] = [open[open.length - 3], open[open.length - 2], open[open.length - 1]];
    if (nameEnd - nameStart !== openLength || !this.sameAt(nameStart, openStart, openLength)) {
      throw this.error(`</${xml.slice(nameStart, nameEnd)}> where </${this.openName()}> was expected`);
    }
    const end = this.skipSpace(nameEnd);
    if (xml.charCodeAt(end) !== 62) throw this.error(`expected > to end </${xml.slice(nameStart, nameEnd)}`, end);
    this.pos = end + 1;
    open.length -= 3;
    this.closeElement(kind);
  }
  /** The name of the innermost open element. */
  openName() {
    const start = this.open[this.open.length - 3];
    return this.xml.slice(start, start + this.open[this.open.length - 2]);
  }
  /** `<!--…-->`, `<![CDATA[…]]>` or `<!DOCTYPE …>`. */
  readDeclaration() {
    const xml = this.xml;
    const at = this.pos;
    if (xml.startsWith("<!--", at)) {
      const end = xml.indexOf("-->", at + 4);
      if (end === -1) throw this.error("unterminated comment");
      const dashes = xml.indexOf("--", at + 4);
      if (dashes < end) throw this.error("-- is not allowed in a comment", dashes);
      this.pos = end + 3;
    } else if (xml.startsWith("<![CDATA[", at)) {
      if (this.open.length === 0) throw this.error("CDATA outside the root element");
      const end = xml.indexOf("]]>", at + 9);
      if (end === -1) throw this.error("unterminated CDATA section");
      if (this.collecting) this.collect(at + 9, end, false);
      if (this.detailing && this.outputDepth === 0) this.collectDetail(at + 9, end, false);
      this.pos = end + 3;
    } else if (xml.startsWith("<!DOCTYPE", at) && this.open.length === 0 && !this.rootClosed && !this.doctype) {
      this.doctype = true;
      const close = xml.indexOf(">", at);
      if (close === -1) throw this.error("unterminated DOCTYPE");
      let bracket = at;
      while (bracket < close && xml.charCodeAt(bracket) !== 91) bracket++;
      const subsetEnd = bracket < close ? xml.indexOf("]", bracket) : at;
      const end = subsetEnd === -1 ? -1 : xml.indexOf(">", subsetEnd);
      if (end === -1) throw this.error("unterminated DOCTYPE");
      this.pos = end + 1;
    } else if (xml.startsWith("<!DOCTYPE", at) && this.doctype && this.open.length === 0 && !this.rootClosed) {
      throw this.error("a second DOCTYPE (a document has at most one)");
    } else {
      throw this.error("<! must start a comment, a CDATA section or the DOCTYPE");
    }
  }
  /** `<?target …?>`, the XML declaration included. */
  readInstruction() {
    const nameStart = this.pos + 2;
    const nameEnd = this.nameEnd(nameStart);
    if (nameEnd === nameStart) throw this.error("<? must start a processing instruction");
    const end = this.xml.indexOf("?>", nameStart);
    if (end === -1) throw this.error("unterminated processing instruction");
    if (nameEnd - nameStart === 3 && this.xml.slice(nameStart, nameEnd).toLowerCase() === "xml") {
      if (this.pos > (this.xml.charCodeAt(0) === 65279 ? 1 : 0)) throw this.error("the XML declaration is allowed only at the start of the document");
      if (!XML_DECLARATION.test(this.xml.slice(this.pos, end + 2))) throw this.error('malformed XML declaration (expected <?xml version="1.x" encoding="\u2026"?>)');
    } else if (nameEnd < end && !isSpace(this.xml.charCodeAt(nameEnd))) {
      throw this.error("a processing instruction's target must be followed by whitespace", nameEnd);
    }
    this.pos = end + 2;
  }
};
function firstLine(text) {
  for (const line of text.split("\n")) {
    const trimmed = line.trim();
    if (trimmed) return trimmed.slice(0, MAX_MESSAGE);
  }
  return null;
}

// src/formats/junit-split.ts
function splitJUnitReport(xml, maxBytes) {
  if (byteLength(xml) <= maxBytes) return [xml];
  const scanned = scan(xml);
  if (!scanned || scanned.units.length === 0) return [xml];
  const { prolog, units } = scanned;
  const pieces = [];
  let open = [];
  let parts = [];
  let size = 0;
  const closing = (frames) => frames.reduce((n, f) => n + f.name.length + 3, 0);
  const begin = () => {
    parts = [prolog];
    size = byteLength(prolog);
    open = [];
  };
  const finish = () => {
    for (let i = open.length - 1; i >= 0; i--) parts.push(`</${open[i].name}>`);
    pieces.push(parts.join(""));
  };
  const move = (context2) => {
    let common = 0;
    while (common < open.length && common < context2.length && open[common] === context2[common]) common++;
    const closed = open.slice(common);
    const opened = context2.slice(common);
    return { common, opened, cost: closing(closed) + opened.reduce((n, f) => n + f.openBytes, 0) };
  };
  begin();
  let units_in_piece = 0;
  for (const unit of units) {
    let step = move(unit.context);
    if (units_in_piece > 0 && size + step.cost + unit.bytes + closing(unit.context) > maxBytes) {
      finish();
      begin();
      units_in_piece = 0;
      step = move(unit.context);
    }
    for (let i = open.length - 1; i >= step.common; i--) parts.push(`</${open[i].name}>`);
    open = open.slice(0, step.common);
    for (const frame of step.opened) {
      parts.push(frame.open);
      open.push(frame);
    }
    parts.push(unit.text);
    size += step.cost + unit.bytes;
    units_in_piece++;
  }
  finish();
  return pieces;
}
var byteLength = (text) => Buffer.byteLength(text, "utf8");
function scan(xml) {
  let prolog = "";
  const units = [];
  const stack = [];
  let goProperties = null;
  const frameOf = (depth) => {
    const frames = [];
    for (let d = 0; d <= depth; d++) {
      const entry = stack[d];
      if (!entry.frame) {
        const own = entry.properties.join("");
        if (goProperties === null && own.includes("go.version")) goProperties = own;
        const open = entry.start + (entry.name === "testsuite" && goProperties !== null && !own.includes("go.version") ? own + goProperties : own);
        entry.frame = { name: entry.name, open, openBytes: byteLength(open) };
      }
      frames.push(entry.frame);
    }
    return frames;
  };
  let i = 0;
  while (i < xml.length) {
    const lt = xml.indexOf("<", i);
    if (lt === -1) break;
    const opaque = opaqueEnd(xml, lt);
    if (xml.startsWith("<?", lt)) {
      const end = xml.indexOf("?>", lt);
      if (end === -1) return null;
      if (stack.length === 0 && units.length === 0) prolog += xml.slice(lt, end + 2);
      i = end + 2;
    } else if (opaque !== null) {
      if (opaque === -1) return null;
      i = opaque;
    } else if (xml.startsWith("<!", lt)) {
      return null;
    } else if (xml.startsWith("</", lt)) {
      const end = xml.indexOf(">", lt);
      if (end === -1) return null;
      const name = xml.slice(lt + 2, end).trim();
      const top = stack.pop();
      if (!top || top.name !== name) return null;
      i = end + 1;
    } else {
      const tag = startTag(xml, lt);
      if (!tag) return null;
      if (tag.name === "testcase") {
        let end = tag.end;
        if (!tag.selfClosing) {
          const close = closeOf(xml, tag.end, "testcase");
          if (close === -1) return null;
          end = close;
        }
        if (stack.length === 0) return null;
        const text = xml.slice(lt, end);
        units.push({ context: frameOf(stack.length - 1), text, bytes: byteLength(text) });
        i = end;
      } else if (tag.name === "properties" && stack.length > 0 && !stack.at(-1).frame) {
        const end = tag.selfClosing ? tag.end : closeOf(xml, tag.end, "properties");
        if (end === -1) return null;
        stack.at(-1).properties.push(xml.slice(lt, end));
        i = end;
      } else if (tag.name === "testsuite" || tag.name === "testsuites") {
        if (tag.selfClosing) {
          i = tag.end;
          continue;
        }
        stack.push({ name: tag.name, start: xml.slice(lt, tag.end), properties: [], frame: null });
        i = tag.end;
      } else {
        const end = tag.selfClosing ? tag.end : closeOf(xml, tag.end, tag.name);
        if (end === -1) return null;
        i = end;
      }
    }
  }
  return stack.length === 0 ? { prolog, units } : null;
}
function startTag(xml, lt) {
  let j = lt + 1;
  while (j < xml.length && !/[\s/>]/.test(xml[j])) j++;
  const name = xml.slice(lt + 1, j);
  if (name === "") return null;
  let quote = null;
  for (; j < xml.length; j++) {
    const c = xml[j];
    if (quote) {
      if (c === quote) quote = null;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === ">") return { name, end: j + 1, selfClosing: xml[j - 1] === "/" };
  }
  return null;
}
function closeOf(xml, from, name) {
  let depth = 1;
  let i = from;
  while (i < xml.length) {
    const lt = xml.indexOf("<", i);
    if (lt === -1) return -1;
    const opaque = opaqueEnd(xml, lt) ?? (xml.startsWith("<?", lt) ? afterClose(xml, lt, "?>") : null);
    if (opaque !== null) {
      if (opaque === -1) return -1;
      i = opaque;
    } else if (xml.startsWith("</", lt)) {
      const end = xml.indexOf(">", lt);
      if (end === -1) return -1;
      if (xml.slice(lt + 2, end).trim() === name && --depth === 0) return end + 1;
      i = end + 1;
    } else {
      const tag = startTag(xml, lt);
      if (!tag) return -1;
      if (tag.name === name && !tag.selfClosing) depth++;
      i = tag.end;
    }
  }
  return -1;
}
function afterClose(xml, lt, close) {
  const end = xml.indexOf(close, lt);
  return end === -1 ? -1 : end + close.length;
}
function opaqueEnd(xml, lt) {
  if (xml.startsWith("<!--", lt)) return afterClose(xml, lt, "-->");
  if (xml.startsWith("<![CDATA[", lt)) return afterClose(xml, lt, "]]>");
  return null;
}

// src/cli/test-commands.ts
var UPLOAD_FAILED = 70;
function context(options) {
  const env = process.env;
  const need = (value, what) => {
    if (!value) throw new CliUsageError(`${what} is required`);
    return value;
  };
  const url = greenlineUrl(options.url, env.GREENLINE_URL);
  const token = greenlineToken(options.token, env.GREENLINE_API_TOKEN);
  const org = need(options.org ?? env.GREENLINE_ORG, "--org (or GREENLINE_ORG)");
  const flagsSayAll = options.repo && options.commit && options.branch && options.host;
  const inferred = flagsSayAll ? { ci: "git" } : inferFromEnvironment();
  const full = need(options.repo ?? inferred.repo, "--repo owner/name (or a CI environment, or a git remote named origin)");
  const { owner, name } = splitRepo(full);
  const host = options.host ?? inferred.host ?? "github.com";
  const commit = need(options.commit ?? inferred.commit, "--commit (or a CI environment, or a git checkout)");
  const branch = need(options.branch ?? inferred.branch, "--branch (or a CI environment, or a git checkout on a branch)");
  const prText = options.pr ?? inferred.pr;
  const pr = prText === void 0 ? void 0 : Number(prText);
  if (pr !== void 0 && !(Number.isSafeInteger(pr) && pr > 0)) throw new CliUsageError("--pr must be a pull request number");
  const jobUrl = env.GITHUB_RUN_ID && env.GITHUB_SERVER_URL && env.GITHUB_REPOSITORY ? `${env.GITHUB_SERVER_URL}/${env.GITHUB_REPOSITORY}/actions/runs/${env.GITHUB_RUN_ID}` : void 0;
  return { url, token, scope: { repo: { host, owner, name }, org_url_slug: org }, commit, branch, pr, jobUrl, variant: options.variant ?? "" };
}
function checkAttribution(options) {
  const env = process.env;
  const name = (options.check ?? env.GREENLINE_CHECK)?.trim();
  if (options.check !== void 0 && !name) throw new CliUsageError("--check must name a check (got an empty name)");
  const idText = options["check-run-id"] ?? (env.GREENLINE_CHECK_RUN_ID?.trim() || void 0);
  let id;
  if (idText !== void 0) {
    id = /^\s*[1-9]\d*\s*$/.test(idText) ? Number(idText) : Number.NaN;
    const from = options["check-run-id"] !== void 0 ? "--check-run-id" : "GREENLINE_CHECK_RUN_ID (--check-run-id)";
    if (!Number.isSafeInteger(id)) throw new CliUsageError(`${from} must be a check run id, a positive integer (got ${JSON.stringify(idText)})`);
  }
  return { ...name ? { check_name: name } : {}, ...id !== void 0 ? { check_run_id: id } : {} };
}
async function reportFiles(patterns) {
  if (!patterns || patterns.length === 0) throw new CliUsageError("--junit <glob> is required (e.g. --junit 'reports/**/*.xml')");
  return (await glob(
    patterns.flatMap((p) => p.split(",")).map((p) => p.trim()).filter(Boolean),
    { absolute: true, onlyFiles: true }
  )).sort();
}
function post(ctx, operation, body) {
  return postToGreenline(ctx.url, ctx.token, `flaky-tests/${operation}`, { ...ctx.scope, ...body });
}
function readCodeowners(path) {
  if (path === void 0) return void 0;
  try {
    return readFileSync3(path, "utf8");
  } catch (error) {
    const e = error;
    throw new CliUsageError(`--codeowners: cannot read ${path}: ${e.code === "ENOENT" ? "no such file (ENOENT)" : e.code ?? e.message}`);
  }
}
var PART_JSON_BYTES = 16 * 1024 * 1024;
var REPORTS_PER_REQUEST = 1e3;
function partsOf(reports, partBytes = PART_JSON_BYTES) {
  const jsonBytes = (text) => Buffer.byteLength(JSON.stringify(text));
  const pieces = [];
  for (const report2 of reports) {
    const bytes = jsonBytes(report2);
    if (bytes <= partBytes) {
      pieces.push({ text: report2, bytes });
      continue;
    }
    const growth = bytes / Buffer.byteLength(report2);
    for (const piece of splitJUnitReport(report2, Math.floor(partBytes * 0.95 / growth))) {
      let cut = [piece];
      for (let size2 = Math.floor(partBytes / 4); cut.some((c) => jsonBytes(c) > partBytes) && size2 >= 1024; size2 = Math.floor(size2 / 2)) cut = splitJUnitReport(piece, size2);
      for (const c of cut) pieces.push({ text: c, bytes: jsonBytes(c) });
    }
  }
  const parts = [];
  let current = [];
  let size = 0;
  for (const piece of pieces) {
    if (current.length > 0 && (size + piece.bytes > partBytes || current.length >= REPORTS_PER_REQUEST)) {
      parts.push(current);
      current = [];
      size = 0;
    }
    current.push(piece.text);
    size += piece.bytes;
  }
  if (current.length > 0) parts.push(current);
  return parts;
}
async function sendPart(ctx, body, retries) {
  for (let attempt = 0; ; attempt++) {
    try {
      return await post(ctx, "upload", body);
    } catch (error) {
      const transient = error instanceof ServiceUnreachableError || error instanceof GreenlineRefusal && (error.status === 429 || error.status >= 500);
      if (!transient || attempt >= retries) throw error;
      await new Promise((resolve3) => setTimeout(resolve3, 1e3 * 2 ** attempt));
    }
  }
}
async function upload(ctx, check, reports, codeowners, out) {
  const fields = {
    commit_sha: ctx.commit,
    branch: ctx.branch,
    ...ctx.pr ? { pr_number: ctx.pr } : {},
    ...ctx.jobUrl ? { job_url: ctx.jobUrl } : {},
    ...ctx.variant ? { variant: ctx.variant } : {},
    ...check,
    ...codeowners !== void 0 ? { codeowners } : {}
  };
  const parts = partsOf(reports);
  let answer;
  if (parts.length === 1) answer = await sendPart(ctx, { ...fields, junit_xml: parts[0] }, 0);
  else {
    const id = randomUUID();
    out(`greenline: the reports are larger than one request: sending them in ${parts.length} parts`);
    answer = void 0;
    for (const [index, junit_xml] of parts.entries()) answer = await sendPart(ctx, { ...fields, junit_xml, part: { id, index, count: parts.length } }, 3);
    if (!answer.part?.complete) throw new Error(`the upload's parts were sent, but Greenline holds ${answer.part?.received ?? "?"} of ${parts.length}: it stores them as they are within 30 minutes`);
  }
  out(`greenline: uploaded ${answer.test_cases} tests (${answer.failures} failed) from ${reports.length} report(s) as ${answer.upload_id}`);
  if (check.check_name !== void 0 || check.check_run_id !== void 0) {
    out(`greenline: from check ${[check.check_name && JSON.stringify(check.check_name), check.check_run_id && `run ${check.check_run_id}`].filter(Boolean).join(", ")}`);
  }
  if (answer.unnamed_test_cases > 0) out(`greenline: ${answer.unnamed_test_cases} testcase(s) with neither name nor classname were not stored`);
  if (answer.run) out(`greenline: the results of merge-queue run ${answer.run.number} of ${answer.run.queue}`);
  if (answer.infrastructure_failure) out(`greenline: read as an infrastructure failure (${answer.infrastructure_failure_reason}): no test is marked flaky or broken by it`);
}
async function testUpload(options, out) {
  const ctx = context(options);
  const check = checkAttribution(options);
  const codeowners = readCodeowners(options.codeowners);
  const files = await reportFiles(options.junit);
  if (files.length === 0) {
    out(`greenline: no JUnit reports match ${options.junit.join(", ")}`);
    return UPLOAD_FAILED;
  }
  try {
    await upload(
      ctx,
      check,
      files.map((f) => readFileSync3(f, "utf8")),
      codeowners,
      out
    );
    return 0;
  } catch (error) {
    out(`greenline: upload failed: ${error.message}`);
    return UPLOAD_FAILED;
  }
}
var signature = (stat2) => `${stat2.ino}:${stat2.size}:${stat2.mtimeMs}`;
function statOrUndefined(file) {
  try {
    return statSync2(file);
  } catch {
    return void 0;
  }
}
function runCommand(command2) {
  return new Promise((resolve3) => {
    const child = spawn(command2[0], command2.slice(1), { stdio: "inherit" });
    child.on("error", (error) => {
      if (error.code === "ENOENT") resolve3({ code: 127, cannotStart: "no such command or file (ENOENT)" });
      else if (error.code === "EACCES") resolve3({ code: 126, cannotStart: "permission denied: not an executable file (EACCES)" });
      else resolve3({ code: 126, cannotStart: error.message });
    });
    child.on("exit", (exitCode, signal) => resolve3({ code: exitCode ?? 128 + (signal ? constants.signals[signal] ?? 0 : 0) }));
  });
}
var label = (test) => `${test.classname || test.parent || test.file || "(no class)"} ${test.name}`;
async function quarantinedTests(ctx, tests) {
  const ask = (some) => post(ctx, "check-quarantine", { variant: ctx.variant, tests: some });
  const answer = await ask(tests);
  const named = (a) => [...a.quarantined_test_ids, ...a.new_failure_test_ids ?? []];
  if (named(answer).length === 0) return { quarantined: /* @__PURE__ */ new Set(), newWays: /* @__PURE__ */ new Set() };
  const { host, owner, name } = ctx.scope.repo;
  const org = ctx.scope.org_url_slug.trim().toLowerCase();
  const byId = new Map(tests.map((t) => [testCaseId(org, `${host.trim()}/${owner.trim()}/${name.trim()}`, t, ctx.variant.trim(), t.id ?? ""), t]));
  if (named(answer).every((id) => byId.has(id))) return { quarantined: new Set(answer.quarantined_test_ids.map((id) => byId.get(id))), newWays: new Set((answer.new_failure_test_ids ?? []).map((id) => byId.get(id))) };
  const quarantined = /* @__PURE__ */ new Set();
  const newWays = /* @__PURE__ */ new Set();
  for (let i = 0; i < tests.length; i += 8) {
    const slice = tests.slice(i, i + 8);
    const answers = await Promise.all(slice.map((t) => ask([t])));
    answers.forEach((a, j) => {
      if (a.quarantined_test_ids.length > 0) quarantined.add(slice[j]);
      else if ((a.new_failure_test_ids ?? []).length > 0) newWays.add(slice[j]);
    });
  }
  return { quarantined, newWays };
}
async function testRun(options, command2, out) {
  if (command2.length === 0) throw new CliUsageError("test run needs a command after --");
  const ctx = context(options);
  const check = checkAttribution(options);
  const codeowners = readCodeowners(options.codeowners);
  const quarantine = !options["no-quarantine"];
  const before = new Map((await reportFiles(options.junit)).map((f) => [f, statOrUndefined(f)]));
  const started = Date.now();
  const { code, cannotStart } = await runCommand(command2);
  if (cannotStart) {
    out(`greenline: cannot start ${command2[0]}: ${cannotStart}; exiting ${code}, nothing uploaded`);
    return code;
  }
  const matched = await reportFiles(options.junit);
  const files = [];
  const stale = [];
  for (const file of matched) {
    const stat2 = statOrUndefined(file);
    if (!stat2) continue;
    const earlier = before.get(file);
    if (stat2.mtimeMs >= started || !earlier || signature(earlier) !== signature(stat2)) files.push(file);
    else stale.push(file);
  }
  if (stale.length > 0) {
    const shown2 = stale.slice(0, 5).join(", ") + (stale.length > 5 ? `, and ${stale.length - 5} more` : "");
    out(`greenline: ignored ${stale.length} report(s) older than the command (not written by this run; a stale report never decides the build): ${shown2}`);
  }
  if (files.length === 0) {
    const why = stale.length > 0 ? "the command wrote no JUnit report" : `no JUnit reports match ${options.junit.join(", ")}`;
    out(`greenline: ${why}; exit code ${code} stands`);
    return code;
  }
  const runs = /* @__PURE__ */ new Map();
  const reports = [];
  for (const file of files) {
    try {
      const report2 = readFileSync3(file, "utf8");
      parseJUnit(report2, (c) => {
        const key = JSON.stringify([c.file, c.classname, c.parent, c.name, c.explicitId]);
        const run2 = runs.get(key);
        if (run2) run2.flags = addTestCase(run2.flags, c);
        else runs.set(key, { test: { name: c.name, classname: c.classname, file: c.file, parent: c.parent, ...c.explicitId ? { id: c.explicitId } : {} }, flags: addTestCase(0, c) });
        const test = runs.get(key).test;
        if (!test.failure && c.failed)
          test.failure = {
            ...c.failureType ? { type: c.failureType } : {},
            // The parser bounds both as check-quarantine does (2,000 and 4,000 characters).
            ...c.message ? { message: c.message } : {},
            ...c.failureText ? { text: c.failureText } : {}
          };
      });
      reports.push(report2);
    } catch (error) {
      const why = error instanceof JUnitError ? `not a JUnit report: line ${error.line}, column ${error.column}: ${error.message}` : `cannot read it: ${error.code ?? error.message}`;
      out(`greenline: ${file}: ${why}; exit code ${code} stands, nothing uploaded`);
      return code;
    }
  }
  const tests = [...runs.values()].filter((r) => (r.flags & RESULT) === FAILED).map((r) => r.test);
  try {
    await upload(ctx, check, reports, codeowners, out);
    if (code === 0 || !quarantine) return code;
    if (tests.length === 0) {
      out(`greenline: the reports show no failing test; exit code ${code} stands`);
      return code;
    }
    const { quarantined, newWays } = await quarantinedTests(ctx, tests);
    out(`greenline: ${tests.length} failing test(s), ${quarantined.size} quarantined`);
    for (const test of tests) if (!quarantined.has(test) && !newWays.has(test)) out(`greenline: failed: ${label(test)}`);
    for (const test of tests) if (newWays.has(test)) out(`greenline: failed, quarantined as flaky but failing in a way first seen after its quarantine (it counts): ${label(test)}`);
    for (const test of tests) if (quarantined.has(test)) out(`greenline: failed, quarantined: ${label(test)}`);
    if (quarantined.size === tests.length) {
      out(`greenline: every failure is a quarantined test; exiting 0 instead of ${code}`);
      return 0;
    }
    return code;
  } catch (error) {
    out(`greenline: ${error.message}; exit code ${code} stands`);
    if (code !== 0 && quarantine) for (const test of tests) out(`greenline: failed (quarantine unknown): ${label(test)}`);
    return code;
  }
}
async function testQuarantine(options, testId, setting, out) {
  if (!testId) throw new CliUsageError("test quarantine needs a test id");
  const ctx = context({ commit: "-", branch: "-", ...options });
  const reason = options.reason?.trim();
  const answer = await post(ctx, "set-quarantine-setting", {
    test_id: testId,
    setting,
    ...reason ? { reason } : {}
  });
  const why = answer.test.quarantine_reason ? ` (reason: ${answer.test.quarantine_reason})` : "";
  out(`greenline: ${answer.test.name} (${answer.test.id}): ${setting}${why}; quarantined ${answer.test.quarantined ? "yes" : "no"}`);
  return 0;
}
function policySettings(options) {
  const settings = {};
  const number = (flag, field) => {
    const text = options[flag];
    if (typeof text !== "string") return;
    const value = Number(text.trim());
    if (text.trim() === "" || !Number.isFinite(value)) throw new CliUsageError(`--${flag} must be a number (got ${JSON.stringify(text)})`);
    settings[field] = value;
  };
  number("threshold", "flakyRate");
  number("broken-rate", "brokenRate");
  number("min-samples", "minSamples");
  number("window-days", "windowDays");
  number("recovery-days", "recoveryDays");
  const auto = options["auto-quarantine"]?.trim().toLowerCase();
  if (auto !== void 0) {
    if (auto !== "on" && auto !== "off") throw new CliUsageError(`--auto-quarantine must be on or off (got ${JSON.stringify(options["auto-quarantine"])})`);
    settings.autoQuarantine = auto === "on";
  }
  return settings;
}
async function testPolicyBacktest(options, out) {
  const since = (options.since ?? "30d").trim();
  const days = /^([1-9]\d*)d?$/.exec(since);
  if (!days) throw new CliUsageError(`--since must be a number of days, like 30d (got ${JSON.stringify(options.since)})`);
  const settings = policySettings(options);
  const ctx = context({ commit: "-", branch: "-", ...options });
  const answer = await post(ctx, "backtest-policy", { since_days: Number(days[1]), settings });
  if (options.json) {
    out(JSON.stringify(answer, null, 2));
    return 0;
  }
  const { current, proposed, changes } = answer;
  const changed = Object.keys(settings).map((k) => `${k} ${current.settings[k]} \u2192 ${proposed.settings[k]}`);
  out(
    `greenline: ${ctx.scope.repo.owner}/${ctx.scope.repo.name}, ${answer.period.from.slice(0, 10)} to ${answer.period.to.slice(0, 10)}, replayed under ${changed.length > 0 ? changed.join(", ") : "its own settings (no option changes one)"}`
  );
  const rows = [
    ["tests flaky at some time", "tests_flaky"],
    ["tests quarantined at some time", "tests_ever_quarantined"],
    ["quarantines started", "quarantines_started"],
    ["quarantines released", "releases"],
    ["tests quarantined at the end", "tests_quarantined"],
    ["tests broken at the end", "tests_broken"],
    ["failures excused by quarantine", "failures_excused"],
    ["queue runs with failures", "queue_runs_failed"],
    ["  of which excused (ejection avoided)", "queue_runs_excused"],
    ["regression failures excused", "regressions_excused"]
  ];
  const width = Math.max(...rows.map(([label2]) => label2.length));
  out(`${"".padEnd(width)}  ${"current".padStart(8)}  ${"proposed".padStart(8)}`);
  for (const [label2, field] of rows) out(`${label2.padEnd(width)}  ${String(current.outcome[field]).padStart(8)}  ${String(proposed.outcome[field]).padStart(8)}`);
  const list = (title, named) => {
    out(`${title}: ${named.total}`);
    for (const t of named.tests) out(`  ${t.name}${t.variant ? ` [${t.variant}]` : ""} (${t.id})`);
    if (named.total > named.tests.length) out(`  \u2026 and ${named.total - named.tests.length} more`);
  };
  list("newly quarantined", changes.newly_quarantined);
  list("no longer quarantined", changes.no_longer_quarantined);
  out(`queue ejections avoided: ${changes.ejections_avoided}, added: ${changes.ejections_added}`);
  list("tests whose regressions would be hidden", changes.regressions_hidden);
  return 0;
}

// src/cli/usage.ts
import { existsSync, readFileSync as readFileSync4 } from "node:fs";
import { dirname as dirname2, join } from "node:path";

// src/defaults.ts
var DEFAULT_DATABASE_URL = "file:./data/greenline.db";

// src/cli/usage.ts
function connectionOptions(column) {
  return [`${"--url <url>".padEnd(column)}Greenline's address (GREENLINE_URL)`, `${"--token <token>".padEnd(column)}an API token (GREENLINE_API_TOKEN)`];
}
var CONNECTION_OPTIONS = [
  ...connectionOptions(21),
  "--org <slug>         the organization (GREENLINE_ORG)",
  "--repo owner/name    the repository (default: from the CI, else the git remote origin)",
  "--host <host>        the code host (default: from the CI or remote, else github.com)"
];
var WHERE_OPTIONS = [
  "--commit <sha>       the commit tested (default: from the CI, else git HEAD)",
  "--branch <name>      its branch (default: from the CI, else git's current branch)",
  "--pr <number>        its pull request (default: from the CI)",
  "--variant <name>     a variant of the same tests (e.g. an OS), kept apart",
  "--codeowners <path>  a CODEOWNERS file to send with the results",
  "--junit <glob>       JUnit XML reports (repeat, or separate with commas)",
  "--check <name>       the CI check (job) the results come from, exactly as the code host names it (GREENLINE_CHECK)",
  "--check-run-id <id>  that job's check run id (GREENLINE_CHECK_RUN_ID); in GitHub Actions the job context's check_run_id",
  "                     The merge queue reads a failed check's failures only from results naming it. Neither is",
  "                     guessed from the CI: a job's name: or matrix makes its check's name differ from GITHUB_JOB,",
  "                     and no variable holds the check run id (only the job context)."
];
var QUEUE_CONNECTION = CONNECTION_OPTIONS.filter((o) => !o.startsWith("--org"));
var TARGET_BRANCH = "--target-branch <b>  the queue's branch: the one the PR merges into (default: from a pull request build's CI)";
var QUEUE_OPTIONS = [...QUEUE_CONNECTION, TARGET_BRANCH];
var PR_OPTIONS = [...QUEUE_OPTIONS, "--pr <number>        the pull request (default: from the CI)"];
var JSON_OPTION = "--json               print Greenline's answer as JSON";
var WEBHOOK_CONNECTION = connectionOptions(23);
var DATABASE_NOTE = `The database is DATABASE_URL (default ${DEFAULT_DATABASE_URL}).`;
var COMMANDS = {
  "token create": {
    usage: "greenline token create --org <slug> [--name <label>] [--role write|admin|read]",
    summary: "Create an API token; prints it as the last line.",
    service: true,
    options: [
      "--org <slug>         the organization it belongs to",
      "--name <label>       a label shown by token list (default: cli)",
      "--role write|admin|read  write: every operation (default); admin: also emergency merges; read: reads only (dashboard viewers)",
      DATABASE_NOTE
    ]
  },
  "token list": { usage: "greenline token list --org <slug>", summary: "List an organization's tokens (never the secrets).", options: ["--org <slug>         the organization", DATABASE_NOTE], service: true },
  "token revoke": {
    usage: "greenline token revoke <id>",
    summary: "Revoke a token (its id is in token list). Exit 1 when there is no such token.",
    options: [DATABASE_NOTE],
    service: true
  },
  "setup github": {
    usage: "greenline setup github --webhook-url <url> [--org <login>] [options]",
    brief: "Register Greenline's GitHub App (in a browser) and write its credentials to an env file.",
    summary: "Register Greenline's GitHub App from app.yml and write its credentials to an env file (mode 600):\nAPP_ID, PRIVATE_KEY, WEBHOOK_SECRET, GITHUB_CLIENT_ID, GITHUB_CLIENT_SECRET. GitHub's App manifest flow:\nit prints a local address to open in a browser; there GitHub asks you to name the App and create it,\nthen sends you back, and the command prints the App's page and its install link. Run it where the\nservice runs: the service reads .env from its working directory at start. Exit 1 when GitHub refuses.",
    options: [
      "--webhook-url <url>  required: the public address GitHub delivers webhooks to,",
      "                     https://<your host>/api/github/webhooks (a smee.io channel to forward while developing)",
      "--org <login>        register the App under this organization (you must own it; default: your account)",
      "--name <name>        the App's name (default: app.yml's; names are unique on GitHub, and GitHub's page lets you change it)",
      "--dotenv <path>      where the credentials are written (default: .env); other variables in it are kept",
      "--force              replace credentials already in the env file (default: refuse, register nothing)",
      "--port <port>        the local port of the setup page and GitHub's callback (default: 3456, on 127.0.0.1)",
      "--github-url <url>   GitHub's web address (default: https://github.com; GitHub Enterprise Server: https://<host>)",
      "--api-url <url>      GitHub's API (default: GITHUB_API_URL, else https://api.github.com, or <github-url>/api/v3 for",
      "                     an Enterprise Server); written as GITHUB_API_URL when not api.github.com",
      "The browser must run on the machine the command runs on (the callback is http://127.0.0.1:<port>/callback);",
      "on a remote server, forward the port (ssh -L 3456:127.0.0.1:3456 <server>). It gives up after 15 minutes."
    ],
    service: true
  },
  "db migrate": { usage: "greenline db migrate", summary: "Apply the database migrations.", options: [DATABASE_NOTE], service: true },
  "db backup": {
    usage: "greenline db backup --to <file>",
    summary: "Copy the SQLite database to a new file while the service runs (SQLite's online backup). PostgreSQL: pg_dump (docs/operations.md).",
    options: ["--to <file>          the backup's path; an existing file is never overwritten", DATABASE_NOTE],
    service: true
  },
  "test upload": {
    usage: "greenline test upload --junit <glob> [options]",
    summary: "Upload JUnit reports to Greenline. Exit 70 when the upload fails or no report matches.",
    options: [...CONNECTION_OPTIONS, ...WHERE_OPTIONS]
  },
  "test run": {
    usage: "greenline test run --junit <glob> [options] -- <command> [args...]",
    brief: "Run the command and upload its reports; exit 0 when every failure is a quarantined test.",
    summary: "Run the command, upload the reports it wrote, and exit 0 when every failure is a quarantined test;\notherwise with the command's own exit code (also when Greenline cannot answer or a report is malformed).",
    options: [...CONNECTION_OPTIONS, ...WHERE_OPTIONS, "--no-quarantine      only upload the reports the command wrote: its exit code always stands"]
  },
  "test quarantine": {
    usage: "greenline test quarantine <test-id> --always|--never|--auto [--reason <text>] [options]",
    summary: "Override a test's quarantine: always quarantined, never, or as its history decides.\nOne of --always, --never and --auto is required.",
    brief: "Override a test's quarantine: always quarantined, never, or as its history decides.",
    options: [
      "--always             quarantined whatever its history",
      "--never              never quarantined",
      "--auto               back to automatic: quarantined while its history finds it flaky (where every test starts)",
      "--reason <text>      why, shown with the test (up to 1000 characters; without it, a reason given before is cleared)",
      ...CONNECTION_OPTIONS
    ]
  },
  "test policy": {
    usage: "greenline test policy backtest [--since 30d] [--threshold R] [setting options] [options]",
    brief: "Replay the repository's stored results under other detection settings: what would have changed.",
    summary: "Replay the repository's stored test results of a period under its detection and quarantine settings and\nunder them changed by the options given, and print what would have changed: tests quarantined and released,\nqueue runs whose failures quarantine would have excused (ejections avoided or added), regressions it would\nhave hidden. Reads only: nothing is changed (change settings with the API's flaky-tests/update-settings).",
    options: [
      "--since <N>d         the period: the last N days (default 30d, at most 90d)",
      "--threshold <R>      the failure rate at or above which a test is flaky (0\u20131; the setting flakyRate)",
      "--broken-rate <R>    the failure rate at or above which a test is broken (brokenRate)",
      "--min-samples <N>    runs in the window before the rate rules judge a test (minSamples)",
      "--window-days <N>    the rate rules' window in days (windowDays)",
      "--recovery-days <N>  days without pass-on-retry evidence before a flaky test recovers (recoveryDays)",
      "--auto-quarantine <on|off>  quarantine tests found flaky (autoQuarantine)",
      "--json               print the API's answer as JSON",
      ...CONNECTION_OPTIONS
    ]
  },
  "pr submit": {
    usage: 'greenline pr submit [--pr N] [--target-branch B] [--priority P] [--no-batch] [--emergency "why"] [options]',
    summary: "Submit the pull request to the merge queue of its target branch (again: change its priority and batching).",
    options: [
      ...PR_OPTIONS,
      "--priority <p>       urgent, high, medium (the default), low, or 0 (first) to 255 (last)",
      "--no-batch           test it on its own, never in a batch",
      '--emergency "why"    an emergency merge (a hotfix): ahead of everything, merged even while the queue is frozen;',
      "                     needs an admin token (--hotfix is the same)",
      '--hotfix "why"       the same as --emergency'
    ]
  },
  "pr cancel": { usage: "greenline pr cancel [--pr N] [--target-branch B] [options]", summary: "Take the pull request out of the queue.", options: PR_OPTIONS },
  "pr status": {
    usage: "greenline pr status [--pr N] [--target-branch B] [--json] [options]",
    brief: "Show the pull request's state, position, failure reason and current test run; exit 1 when not in the queue.",
    summary: "Show the pull request's state, position, failure reason and current test run.\nExit 1 when it is not in the queue (never submitted, cancelled, failed or merged).",
    options: [...PR_OPTIONS, JSON_OPTION]
  },
  "pr restart": { usage: "greenline pr restart [--pr N] [--target-branch B] [options]", summary: "Run the queued pull request's tests again.", options: PR_OPTIONS },
  "queue show": {
    usage: "greenline queue show [--target-branch B] [--json] [options]",
    summary: "Show the queue's state and settings and its pull requests in order.",
    options: [...QUEUE_OPTIONS, JSON_OPTION]
  },
  doctor: {
    usage: "greenline doctor [--repo owner/name] [--branch B] [--mode push|draft_pr] [--json] [options]",
    brief: "Preflight: will each check the queue requires report on its testing commits? Exit 1 when not.",
    summary: "Preflight: reads the branch's required checks, the repository's workflow files and who reported checks on\nrecent pull requests, and says of each required check whether it will report on the queue's testing commits,\nwhy not and the fix. Exit 0 when every required check reports, 1 otherwise.",
    options: [
      ...QUEUE_CONNECTION,
      "--branch <name>      the queue's target branch (or --target-branch; default: from the CI)",
      "--mode <mode>        push (pushed greenline/** branches) or draft_pr (also a draft pull request); default: the queue's",
      JSON_OPTION
    ]
  },
  "queue pause": { usage: "greenline queue pause [--target-branch B] [options]", summary: "Pause the queue: no test run starts and nothing merges until it is resumed.", options: QUEUE_OPTIONS },
  "queue resume": { usage: "greenline queue resume [--target-branch B] [options]", summary: "Set the queue running again (after pause, or draining).", options: QUEUE_OPTIONS },
  "queue freeze": {
    usage: 'greenline queue freeze --reason "why" [--until T | --from T --until T | --days D --from HH:MM --until HH:MM --time-zone Z] [--no-testing] [options]',
    brief: "Freeze merges: now (until a time, or until unfrozen), in a one-off window, or every week; only hotfixes merge.",
    summary: "Freeze the queue's merges: nothing merges but hotfixes (`pr submit --hotfix`) while the freeze holds.\nNow (until --until, or until `queue unfreeze`), in a one-off window (--from and --until, ISO times), or every\nweek (--days with --from and --until as HH:MM local times in --time-zone). Pull requests are still submitted and\ntested (they merge once it ends) unless --no-testing.",
    options: [
      ...QUEUE_OPTIONS,
      `--reason "text"      why (shown on the pull requests' statuses and the dashboard; required)`,
      "--until <time>       when it ends: an ISO time with its offset (2026-12-24T18:00Z), or HH:MM with --days",
      "--from <time>        a one-off window's start (ISO time), or HH:MM with --days",
      "--days <days>        every week on these days: mon,tue,\u2026,sun or ranges (mon-fri); an --until not after --from ends the next day",
      "--time-zone <zone>   the IANA time zone of --days (Europe/Berlin, America/New_York; default UTC)",
      "--no-testing         hold testing too: nothing starts but hotfixes",
      JSON_OPTION
    ]
  },
  "queue unfreeze": {
    usage: "greenline queue unfreeze [--freeze-id ID] [options]",
    summary: "End the freezes holding now (a weekly one for its current window only), or remove one freeze by its id.",
    options: [...QUEUE_OPTIONS, "--freeze-id <id>     the freeze to remove (`queue freezes` lists them)", JSON_OPTION]
  },
  audit: {
    usage: "greenline audit [--repo owner/name] [--action A] [--limit N] [--page-token T] [--json] [options]",
    summary: "The organization's audit log, newest first: who did what, when, why and how (API token, comment, dashboard, CLI).",
    options: [
      ...connectionOptions(21),
      "--repo owner/name    only entries about this repository (--host: its code host, default github.com)",
      "--host <host>        the repository's code host",
      "--action <action>    only this action (queue.paused, pull_request.emergency, \u2026 as docs/audit.md lists)",
      "--limit <n>          entries a page, 1\u2013100 (default 50)",
      "--page-token <t>     the next page (as the previous page's last line says)",
      JSON_OPTION
    ]
  },
  "queue freezes": { usage: "greenline queue freezes [--json] [options]", summary: "Show whether the queue is frozen, until when, and its current and scheduled freezes.", options: [...QUEUE_OPTIONS, JSON_OPTION] },
  "targets set": {
    usage: "greenline targets set <file|-> [--pr N] [--commit SHA] [--target-branch B] [options]",
    brief: "Set the targets the pull request impacts (parallel mode), from a file or stdin (-).",
    summary: "Set the targets the pull request impacts (parallel mode), from a file or stdin (-).\nOne target a line, blank lines and surrounding spaces ignored; a file of only ALL impacts every target;\nan empty file impacts none.",
    options: [...PR_OPTIONS, "--commit <sha>       the head commit they were computed for (default: the PR's head from the CI, else git HEAD)"]
  },
  "webhooks create": {
    usage: "greenline webhooks create --endpoint-url <url> --events <types> [options]",
    summary: "Create an outbound webhook endpoint; prints its signing secret as the last line.",
    options: [
      ...WEBHOOK_CONNECTION,
      "--endpoint-url <url>   where events are POSTed (https://)",
      '--events <types>       event types separated by commas, or "*" (see docs/webhooks.md)',
      "--description <text>   a label",
      "--secret <whsec_\u2026>     a signing secret of your own (default: generated)"
    ]
  },
  "webhooks list": { usage: "greenline webhooks list", summary: "List the organization's webhook endpoints: id, URL, events, state.", options: WEBHOOK_CONNECTION },
  "webhooks update": {
    usage: "greenline webhooks update <id> [options]",
    summary: "Change an endpoint; --rotate-secret prints the new secret (the previous one signs too for 24 h).",
    options: [
      ...WEBHOOK_CONNECTION,
      "--endpoint-url <url>   a new URL",
      "--events <types>       a new event filter",
      "--description <text>   a new label",
      "--enable | --disable   enable it again (pending deliveries resume) or disable it",
      "--rotate-secret        a new signing secret"
    ]
  },
  "webhooks delete": { usage: "greenline webhooks delete <id>", summary: "Delete an endpoint and its deliveries.", options: WEBHOOK_CONNECTION },
  "webhooks deliveries": {
    usage: "greenline webhooks deliveries <id> [--limit <n>] [--page-token <t>]",
    summary: "List an endpoint's deliveries, newest first: status, attempts, last answer.",
    options: [...WEBHOOK_CONNECTION, "--limit <n>            at most n (1 to 500, default 50)", "--page-token <t>       the next page (printed after a full page)"]
  },
  "webhooks redeliver": { usage: "greenline webhooks redeliver <id> <delivery-id>", summary: "Send a delivery again, with the same webhook-id.", options: WEBHOOK_CONNECTION }
};
var EXIT_CODES = "Exit codes: 0 success, 1 failure, 2 usage error, 69 Greenline unreachable (or not Greenline at --url), 70 upload failed.";
var GLOBAL_OPTIONS = ["help", "version"];
function optionsOf(key) {
  const command2 = COMMANDS[key];
  if (!command2) return void 0;
  return /* @__PURE__ */ new Set([...GLOBAL_OPTIONS, ...(command2.options ?? []).flatMap((line) => [...(line.split(/\s{2,}/)[0] ?? "").matchAll(/--([a-z][a-z-]*)/g)].map((m) => m[1]))]);
}
function overview(client = false) {
  const width = Math.max(...Object.values(COMMANDS).map((c) => c.usage.length));
  const line = (c) => `  ${c.usage.padEnd(width)}  ${c.brief ?? c.summary}`;
  const all = Object.values(COMMANDS);
  const commands = client ? [...all.filter((c) => !c.service).map(line), "", "Run where the service runs (its checkout or container), not in this client:", ...all.filter((c) => c.service).map(line)] : all.map(line);
  return [
    "Usage: greenline <command> [options]",
    "",
    ...commands,
    "",
    "Run 'greenline help <command>' (or 'greenline <command> --help') for a command's options.",
    "greenline --version prints the version.",
    EXIT_CODES
  ].join("\n");
}
function commandHelp(words) {
  const key = words.join(" ");
  const command2 = COMMANDS[key];
  if (command2) return [`Usage: ${command2.usage}`, "", command2.summary, ...command2.options ? ["", "Options:", ...command2.options.map((o) => `  ${o}`)] : [], "", EXIT_CODES].join("\n");
  const group = Object.entries(COMMANDS).filter(([name]) => name.split(" ")[0] === key);
  if (words.length === 1 && group.length > 0) return ["Usage:", ...group.map(([, c]) => `  ${c.usage}`), "", `Run 'greenline help ${key} <command>' for a command's options.`].join("\n");
  return void 0;
}
function shortUsage(words) {
  const key = words.slice(0, 2).join(" ");
  const command2 = COMMANDS[key];
  if (command2) return `Usage: ${command2.usage}
Run 'greenline help ${key}' for its options.`;
  return "Usage: greenline <command> [options]\nRun 'greenline help' for the commands, 'greenline help <command>' for one.";
}
function version() {
  for (let dir = import.meta.dirname; ; dir = dirname2(dir)) {
    const file = join(dir, "package.json");
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync4(file, "utf8"));
      if (pkg.version && (pkg.name?.startsWith("greenline") || pkg.name?.startsWith("@greenline/"))) return pkg.version;
    }
    if (dirname2(dir) === dir) return "unknown";
  }
}

// src/cli/client-commands.ts
var OPTIONS = {
  org: { type: "string" },
  name: { type: "string" },
  role: { type: "string" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean", short: "V" },
  url: { type: "string" },
  token: { type: "string" },
  repo: { type: "string" },
  host: { type: "string" },
  commit: { type: "string" },
  branch: { type: "string" },
  pr: { type: "string" },
  variant: { type: "string" },
  codeowners: { type: "string" },
  check: { type: "string" },
  "check-run-id": { type: "string" },
  junit: { type: "string", multiple: true },
  "no-quarantine": { type: "boolean" },
  always: { type: "boolean" },
  never: { type: "boolean" },
  auto: { type: "boolean" },
  reason: { type: "string" },
  // test policy backtest
  since: { type: "string" },
  threshold: { type: "string" },
  "broken-rate": { type: "string" },
  "min-samples": { type: "string" },
  "window-days": { type: "string" },
  "recovery-days": { type: "string" },
  "auto-quarantine": { type: "string" },
  "target-branch": { type: "string" },
  mode: { type: "string" },
  priority: { type: "string" },
  "no-batch": { type: "boolean" },
  emergency: { type: "string" },
  hotfix: { type: "string" },
  // queue freeze / unfreeze
  from: { type: "string" },
  until: { type: "string" },
  days: { type: "string" },
  "time-zone": { type: "string" },
  "no-testing": { type: "boolean" },
  "freeze-id": { type: "string" },
  action: { type: "string" },
  json: { type: "boolean" },
  // db backup (the service's CLI)
  to: { type: "string" },
  // webhooks (webhook-commands.ts)
  "endpoint-url": { type: "string" },
  events: { type: "string" },
  description: { type: "string" },
  secret: { type: "string" },
  enable: { type: "boolean" },
  disable: { type: "boolean" },
  "rotate-secret": { type: "boolean" },
  limit: { type: "string" },
  "page-token": { type: "string" },
  // setup github (the service's command: main.ts); one option table, so the packaged client can say where it runs.
  "webhook-url": { type: "string" },
  port: { type: "string" },
  "github-url": { type: "string" },
  "api-url": { type: "string" },
  dotenv: { type: "string" },
  force: { type: "boolean" }
};
async function runClientCommand(key, values, rest, out) {
  switch (key) {
    case "test upload":
      return testUpload(values, out);
    case "test run":
      return testRun(values, rest, out);
    case "test quarantine": {
      const chosen = ["always", "never", "auto"].filter((s) => values[s]);
      if (chosen.length !== 1) throw new CliUsageError("test quarantine needs exactly one of --always, --never, --auto");
      return testQuarantine(values, rest[0], chosen[0], out);
    }
    case "test policy":
      if (rest[0] !== "backtest") throw new CliUsageError(`test policy needs a command: backtest${rest[0] ? ` (got ${JSON.stringify(rest[0])})` : ""}`);
      return testPolicyBacktest(values, out);
    case "pr submit":
      return prSubmit(values, out);
    case "pr cancel":
      return prCancel(values, out);
    case "pr status":
      return prStatus(values, out);
    case "pr restart":
      return prRestart(values, out);
    case "queue show":
      return queueShow(values, out);
    case "doctor":
      return doctor(values, out);
    case "queue pause":
      return queueSetState(values, "paused", out);
    case "queue resume":
      return queueSetState(values, "running", out);
    case "queue freeze":
      return queueFreeze(values, out);
    case "queue unfreeze":
      return queueUnfreeze(values, out);
    case "queue freezes":
      return queueFreezes(values, out);
    case "audit":
      return audit(values, out);
    case "targets set":
      return targetsSet(values, rest[0], out);
    case "webhooks create":
    case "webhooks list":
    case "webhooks update":
    case "webhooks delete":
    case "webhooks deliveries":
    case "webhooks redeliver":
      return webhookCommand(key.slice("webhooks ".length), rest, values, out);
    default:
      return void 0;
  }
}
function checkOptions(key, values) {
  const allowed = optionsOf(key);
  if (!allowed) return;
  const foreign = Object.keys(values).filter((name) => values[name] !== void 0 && !allowed.has(name));
  if (foreign.length > 0) throw new CliUsageError(`${key} does not take ${foreign.map((name) => `--${name}`).join(", ")}`);
}
async function runCli(argv, out, more, client = false) {
  const { values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true });
  const [group, command2, ...rest] = positionals;
  if (values.version) {
    out(version());
    return 0;
  }
  if (group === "help" || values.help) {
    const words = group === "help" ? positionals.slice(1, 3) : positionals.slice(0, 2);
    if (words.length === 0) {
      out(overview(client));
      return 0;
    }
    const help = commandHelp(words);
    if (!help) throw new CliUsageError(`no command ${words.join(" ")}`);
    out(help);
    return 0;
  }
  if (!group) throw new CliUsageError("a command is needed");
  const key = command2 === void 0 ? group : `${group} ${command2}`;
  checkOptions(key, values);
  const code = await runClientCommand(key, values, rest, out) ?? await more(key, values, rest, out);
  if (code === void 0) throw new CliUsageError(`unknown command: ${positionals.join(" ")}`);
  return code;
}
function runClient(argv, out) {
  return runCli(
    argv,
    out,
    async (key) => {
      if (!COMMANDS[key]) return void 0;
      throw new CliUsageError(
        `${key} works on the service's own database and settings, so it runs where the Greenline service runs, not in the packaged client: there, run \`npx greenline ${key} \u2026\` in its checkout (with its DATABASE_URL) or \`docker compose exec greenline node bin/greenline.js ${key} \u2026\` in its container`
      );
    },
    true
  );
}
function commandWords(argv) {
  const end = argv.indexOf("--");
  return (end === -1 ? argv : argv.slice(0, end)).filter((a) => !a.startsWith("-")).slice(0, 2);
}
function exitCodeOf(error, argv, err) {
  if (error instanceof CliUsageError || error.code?.startsWith("ERR_PARSE_ARGS")) {
    err(`greenline: ${error.message}
${shortUsage(commandWords(argv))}`);
    return 2;
  }
  if (error instanceof ServiceUnreachableError) {
    err(`greenline: ${error.message}`);
    return SERVICE_UNAVAILABLE;
  }
  err(`greenline: ${error instanceof Error ? error.message : String(error)}`);
  return 1;
}

// src/action/inputs.ts
import { join as join2 } from "node:path";
var INPUT_NAMES = ["token", "url", "org", "junit-paths", "run", "quarantine", "variant", "check", "check-run-id", "impacted-targets", "submit", "target-branch", "priority", "pr-number"];
var InputError = class extends Error {
};
function readInputs(env) {
  return Object.fromEntries(INPUT_NAMES.map((name) => [name, (env[`INPUT_${name.replace(/ /g, "_").toUpperCase()}`] ?? "").trim()]));
}
function booleanInput(inputs, name, fallback) {
  const value = inputs[name];
  if (value === "") return fallback;
  if (["true", "True", "TRUE"].includes(value)) return true;
  if (["false", "False", "FALSE"].includes(value)) return false;
  throw new InputError(`${name} must be true or false (got ${JSON.stringify(value)})`);
}
function shellCommand(run2) {
  return ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", run2];
}
function plan(inputs, env) {
  for (const name of ["token", "url"]) if (!inputs[name]) throw new InputError(`Input required and not supplied: ${name}`);
  const submit = booleanInput(inputs, "submit", false);
  const quarantine = booleanInput(inputs, "quarantine", true);
  const jobs = [
    ...inputs["junit-paths"] ? ["junit-paths (upload test results)"] : [],
    ...inputs["impacted-targets"] ? ["impacted-targets (set impacted targets)"] : [],
    ...submit ? ["submit: true (submit the pull request)"] : []
  ];
  if (jobs.length === 0) {
    throw new InputError(
      inputs.run ? "run needs junit-paths: the JUnit reports the command writes" : "nothing to do: set junit-paths (upload test results; with run, run the tests first), impacted-targets (a file, or ALL) or submit: true"
    );
  }
  if (jobs.length > 1) throw new InputError(`one job per step: ${jobs.join(" and ")} cannot be combined; use a step for each`);
  const job = inputs["junit-paths"] ? inputs.run ? "run" : "upload" : inputs["impacted-targets"] ? "targets" : "submit";
  const belongs = [
    ["run", ["run"], "junit-paths (it runs the tests that write them)"],
    ["variant", ["upload", "run"], "junit-paths (test results)"],
    ["check", ["upload", "run"], "junit-paths (test results)"],
    ["target-branch", ["targets", "submit"], "impacted-targets and submit"],
    ["priority", ["submit"], "submit"]
  ];
  for (const [name, jobsOf, where] of belongs) if (inputs[name] && !jobsOf.includes(job)) throw new InputError(`${name} applies only with ${where}`);
  if (inputs["check-run-id"] && (job === "upload" || job === "run") && !/^[1-9]\d{0,15}$/.test(inputs["check-run-id"])) {
    throw new InputError(`check-run-id must be a check run id, a positive integer (got ${JSON.stringify(inputs["check-run-id"])})`);
  }
  if (inputs["pr-number"] && !/^[1-9]\d{0,9}$/.test(inputs["pr-number"])) throw new InputError(`pr-number must be a pull request number (got ${JSON.stringify(inputs["pr-number"])})`);
  const connection = ["--url", inputs.url, "--token", inputs.token];
  const pr = inputs["pr-number"] ? ["--pr", inputs["pr-number"]] : [];
  const targetBranch = inputs["target-branch"] ? ["--target-branch", inputs["target-branch"]] : [];
  if (job === "upload" || job === "run") {
    if (!inputs.org && !env.GREENLINE_ORG?.trim()) throw new InputError("org is required to upload test results (or GREENLINE_ORG in the environment)");
    const junit = inputs["junit-paths"].split(/[\n,]/).map((p) => p.trim()).filter(Boolean).flatMap((p) => ["--junit", p]);
    const test = [...connection, ...inputs.org ? ["--org", inputs.org] : [], ...pr, ...inputs.variant ? ["--variant", inputs.variant] : [], ...checkArgs(inputs), ...junit];
    if (job === "upload") return { job, argv: ["test", "upload", ...test] };
    return { job, argv: ["test", "run", ...test, ...quarantine ? [] : ["--no-quarantine"], "--", ...shellCommand(inputs.run)] };
  }
  if (job === "targets") {
    const file = inputs["impacted-targets"];
    const allTargetsFile = file === "ALL" ? join2(env.RUNNER_TEMP || ".", "greenline-impacted-targets-all") : void 0;
    return { job, argv: ["targets", "set", allTargetsFile ?? file, ...connection, ...pr, ...targetBranch], ...allTargetsFile ? { allTargetsFile } : {} };
  }
  return { job, argv: ["pr", "submit", ...connection, ...pr, ...targetBranch, ...inputs.priority ? ["--priority", inputs.priority] : []] };
}
function checkArgs(inputs) {
  return [...inputs.check ? ["--check", inputs.check] : [], ...inputs["check-run-id"] ? ["--check-run-id", inputs["check-run-id"]] : []];
}
function shown(argv) {
  return argv.map((a, i) => argv[i - 1] === "--token" ? "***" : /[\s"'$`\\]/.test(a) ? JSON.stringify(a) : a).join(" ");
}

// src/action/main.ts
function escapeData(text) {
  return text.replace(/%/g, "%25").replace(/\r/g, "%0D").replace(/\n/g, "%0A");
}
function command(name, data) {
  process.stdout.write(`::${name}::${escapeData(data)}${EOL}`);
}
function setOutput(name, value) {
  const file = process.env.GITHUB_OUTPUT;
  if (!file) return;
  const delimiter = `ghadelimiter_${randomUUID2()}`;
  appendFileSync(file, `${name}<<${delimiter}${EOL}${value}${EOL}${delimiter}${EOL}`, "utf8");
}
async function greenline(argv) {
  const errors = [];
  const code = await runClient(argv, (line) => console.log(line)).catch((error) => exitCodeOf(error, argv, (line) => errors.push(line)));
  for (const line of errors) command("error", line);
  return code;
}
async function main() {
  const inputs = readInputs(process.env);
  if (inputs.token) command("add-mask", inputs.token);
  delete process.env.INPUT_TOKEN;
  let chosen;
  try {
    chosen = plan(inputs, process.env);
  } catch (error) {
    if (!(error instanceof InputError)) throw error;
    command("error", `greenline action: ${error.message}`);
    return 2;
  }
  setOutput("job", chosen.job);
  if (chosen.allTargetsFile) writeFileSync(chosen.allTargetsFile, "ALL\n");
  console.log(`greenline action: greenline ${shown(chosen.argv)}`);
  const code = await greenline(chosen.argv);
  setOutput("exit-code", String(code));
  if (code !== 0) command("error", `greenline action: the ${chosen.job} job failed (exit code ${code})`);
  return code;
}
main().then(
  (code) => process.exit(code),
  (error) => {
    command("error", `greenline action: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  }
);
