/**
 * IDs as `bigint`, with their canonical decimal text in and out. An ID is
 * never a JavaScript `number`: numbers are exact only up to 2^53 − 1, and the
 * IDs of a running fleet are far above it.
 *
 * @module
 */
import { InvalidIdError } from "./errors.js";

/** The largest ID, 2^63 − 1: bit 63 is always zero, so IDs fit a signed BIGINT column. */
export const MAX_ID = 0x7fffffffffffffffn;

/**
 * Reads the canonical decimal form of an ID, as the Go library's ParseID
 * does: 1 to 19 ASCII digits, no sign, no spaces, no leading zero, at most
 * 9223372036854775807. Throws {@link InvalidIdError} for anything else.
 */
export function parseId(s: string): bigint {
  if (typeof s !== "string") {
    throw new InvalidIdError(String(s), `not a string but a ${typeof s}; pass the ID's decimal text`);
  }
  if (s === "") throw new InvalidIdError(s, "empty; an ID is 1 to 19 decimal digits");
  if (s.length > 19) throw new InvalidIdError(s, "more than 19 characters; the largest ID is 9223372036854775807");
  if (s.length > 1 && s.charCodeAt(0) === 48) throw new InvalidIdError(s, "leading zero; write the ID without one");
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) {
      throw new InvalidIdError(s, `character ${JSON.stringify(s[i])} at offset ${i} is not a decimal digit (no signs, spaces or separators)`);
    }
  }
  const v = BigInt(s);
  if (v > MAX_ID) throw new InvalidIdError(s, "larger than 9223372036854775807, the largest ID");
  return v;
}

/**
 * Returns the canonical decimal text of an ID. Throws {@link InvalidIdError}
 * for a bigint outside 0 … 2^63 − 1, which is no ID.
 */
export function idToString(id: bigint): string {
  if (typeof id !== "bigint") {
    throw new InvalidIdError(String(id), `not a bigint but a ${typeof id}; IDs are bigint (a number loses digits above 2^53)`);
  }
  if (id < 0n || id > MAX_ID) throw new InvalidIdError(id.toString(), "outside 0 … 9223372036854775807");
  return id.toString();
}
