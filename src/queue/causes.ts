import type { Principal } from "../auth/tokens.js";
import type { Cause } from "../domain/timeline.js";

/** Who acts through a principal, and how (the API operation or the comment command). */
export function causeOf(principal: Principal): Cause {
  return { actor: principal.actor ?? { kind: "token", name: principal.tokenId }, ...(principal.via ? { command: principal.via } : {}) };
}
