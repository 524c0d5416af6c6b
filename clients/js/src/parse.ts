/**
 * The strict parser of a batch answer's body, a port of the Go client's
 * parseBatch (client/parse.go): the same rules, in the same order.
 *
 * @module
 */

/** The most IDs one request asks for. */
export const MAX_BATCH = 1000;

// Powers of ten, exact as doubles up to 10^22.
const P10: number[] = [1];
for (let i = 1; i <= 22; i++) P10.push(P10[i - 1]! * 10);

const TWO32 = 4294967296;

/** Whether the 32-bit word x holds four ASCII digits (one per byte). */
function fourDigits(x: number): boolean {
  return ((x & 0xf0f0f0f0) | (((x + 0x06060606) & 0xf0f0f0f0) >>> 4)) === 0x33333333;
}

/** The value of the four ASCII digits of x, the first digit in the low byte. */
function fourValue(x: number): number {
  x = (x - 0x30303030) | 0;
  x = (Math.imul(x, 10) + (x >>> 8)) & 0x00ff00ff; // pairs of digits in bytes 0 and 2
  return (x & 0xff) * 100 + (x >>> 16);
}

/**
 * Reads `b[0:len]`, the body of a 200 answer to a request for `n` IDs, into
 * `out`: ID k as its low 32 bits at `out[2k]` and its high 32 bits at
 * `out[2k+1]`. It takes exactly the documented shape, `{"ids":["…",…]}`, with
 * optional JSON white space between tokens: one object whose only member is
 * "ids" (spelled without escapes), an array of exactly n strings, each an ID
 * in canonical decimal (1 to 19 digits, no leading zero, at most 2^63 − 1)
 * greater than zero and greater than the one before it, and nothing after the
 * object. It returns "" when the body is sound, else why it is not; then the
 * content of `out` means nothing and no ID of the body may be used.
 *
 * It is written by hand, on bytes, because it is the client's only cost per
 * ID besides the hand-out. The IDs never become JavaScript numbers or
 * strings: sixteen digits are read four at a time from 32-bit words (SWAR),
 * and the value is carried as two exact 32-bit halves in doubles, which the
 * buffer stores in a BigInt64Array's memory, so no bigint is made until an ID
 * is handed out. JSON.parse and then BigInt of each string costs about four
 * times as much (bench/parse.ts) and would still need the checks of order
 * and count made here.
 */
export function parseBatch(b: Uint8Array, len: number, n: number, out: Uint32Array): string {
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const fail = (i: number, what: string): string => `${what} at offset ${i}`;
  let i = space(b, len, 0);
  if (i >= len || b[i] !== 0x7b) return fail(i, 'not a JSON object {"ids":[…]}');
  i = space(b, len, i + 1);
  // "ids"
  if (len - i < 5 || b[i] !== 0x22 || b[i + 1] !== 0x69 || b[i + 2] !== 0x64 || b[i + 3] !== 0x73 || b[i + 4] !== 0x22) {
    return fail(i, 'the object\'s member is not "ids"');
  }
  i = space(b, len, i + 5);
  if (i >= len || b[i] !== 0x3a) return fail(i, `expected ':' after "ids"`);
  i = space(b, len, i + 1);
  if (i >= len || b[i] !== 0x5b) return fail(i, '"ids" is not an array');
  i = space(b, len, i + 1);
  let prevHi = 0;
  let prevLo = 0;
  for (let k = 0; ; k++) {
    if (k === n) return fail(i, `more than the ${n} IDs asked for`);
    if (i >= len || b[i] !== 0x22) return fail(i, "expected an ID in double quotes");
    i++;
    const d = i;
    let hi: number;
    let lo: number;
    if (
      len - i >= 17 &&
      fourDigits(dv.getUint32(i, true)) &&
      fourDigits(dv.getUint32(i + 4, true)) &&
      fourDigits(dv.getUint32(i + 8, true)) &&
      fourDigits(dv.getUint32(i + 12, true))
    ) {
      // Sixteen digits four at a time: an ID of today has 17 to 19, and
      // digit by digit is a chain of 19 dependent multiply-adds.
      const a = fourValue(dv.getUint32(i, true)) * 10000 + fourValue(dv.getUint32(i + 4, true)); // < 10^8
      let v = fourValue(dv.getUint32(i + 8, true)) * 10000 + fourValue(dv.getUint32(i + 12, true));
      i += 16;
      let r = 0;
      let c: number;
      while (i < len && i - d < 20 && (c = b[i]! - 48) >= 0 && c <= 9) {
        v = v * 10 + c; // < 10^12: exact
        i++;
        r++;
      }
      // value = a·m + v with m = 10^(8+r) < 2^40, computed exactly in
      // pieces under 2^53: m = qh·2^16 + ql, a·qh = xh·2^16 + xl.
      const m = P10[8 + r]!;
      const qh = Math.floor(m / 65536);
      const ql = m - qh * 65536;
      const x = a * qh;
      const xh = Math.floor(x / 65536);
      const xl = x - xh * 65536;
      const s = xl * 65536 + a * ql + v; // < 2^45
      lo = s >>> 0;
      hi = xh + (s - lo) / TWO32;
    } else {
      // Digit by digit on the two halves, each step exact.
      hi = 0;
      lo = 0;
      let c: number;
      while (i < len && i - d < 20 && (c = b[i]! - 48) >= 0 && c <= 9) {
        const t = lo * 10 + c;
        const carry = Math.floor(t / TWO32);
        lo = t - carry * TWO32;
        hi = hi * 10 + carry;
        i++;
      }
    }
    const nd = i - d;
    if (nd === 0) return fail(i, "an ID is not 1 to 19 decimal digits");
    if (nd > 19) return fail(d, "an ID has more than 19 digits");
    if (b[d] === 48 && nd > 1) return fail(d, "an ID has a leading zero");
    if (hi > 0x7fffffff) return fail(d, "an ID is larger than 9223372036854775807");
    if (i >= len || b[i] !== 0x22) return fail(i, "an ID is not 1 to 19 decimal digits");
    i++;
    if (hi < prevHi || (hi === prevHi && lo <= prevLo)) {
      if (k === 0) return fail(d, "an ID is zero");
      return fail(d, "the IDs are not strictly increasing");
    }
    out[2 * k] = lo;
    out[2 * k + 1] = hi;
    prevHi = hi;
    prevLo = lo;
    i = space(b, len, i);
    if (i < len && b[i] === 0x2c) {
      i = space(b, len, i + 1);
      continue;
    }
    if (i < len && b[i] === 0x5d) {
      if (k + 1 !== n) return fail(i, `${k + 1} IDs where ${n} were asked for`);
      break;
    }
    return fail(i, "expected ',' or ']' after an ID");
  }
  i = space(b, len, i + 1);
  if (i >= len || b[i] !== 0x7d) return fail(i, `expected '}' after the array; the object has only "ids"`);
  i = space(b, len, i + 1);
  if (i !== len) return fail(i, "data after the object");
  return "";
}

/** Skips JSON white space from i. */
function space(b: Uint8Array, len: number, i: number): number {
  while (i < len) {
    const c = b[i];
    if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) i++;
    else return i;
  }
  return i;
}

/** The ID whose halves parseBatch wrote at index k of out, as a bigint (for tests and checks, not the hot path). */
export function idAt(out: Uint32Array, k: number): bigint {
  return (BigInt(out[2 * k + 1]!) << 32n) | BigInt(out[2 * k]!);
}
