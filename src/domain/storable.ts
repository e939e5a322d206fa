import { z } from "zod";
import { unstorableCharacter } from "./text.js";

/**
 * The rule of every free-text request field: no NUL (PostgreSQL text refuses it) and no lone
 * surrogate (not Unicode), so what validation accepts every store can hold. JUnit reports are
 * held to it by their scanner, which names the line and column.
 */
export const storableText = z.superRefine<string>((value, ctx) => {
  const found = unstorableCharacter(value);
  if (!found) return;
  const message = found.kind === "nul" ? `must not contain NUL characters (NUL at index ${found.index})` : `must be valid Unicode (lone surrogate at index ${found.index})`;
  ctx.addIssue({ code: "custom", message, input: value });
});
