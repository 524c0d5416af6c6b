// The strict batch parser: the Go client's cases (client/parse_test.go), and
// a randomized comparison with JSON.parse + BigInt.
import { test } from "node:test";
import assert from "node:assert/strict";
import { parseBatch, idAt } from "../src/parse.js";

function parse(body: string | Uint8Array, n: number): { ids: bigint[]; why: string } {
  const b = typeof body === "string" ? new TextEncoder().encode(body) : body;
  // Room after the body, as the client's buffer has: the parser must not read past len.
  const buf = new Uint8Array(b.length + 64).fill(0x37);
  buf.set(b);
  const out = new Uint32Array(2 * Math.max(n, 1));
  const why = parseBatch(buf, b.length, n, out);
  const ids: bigint[] = [];
  if (why === "") for (let k = 0; k < n; k++) ids.push(idAt(out, k));
  return { ids, why };
}

test("parseBatch takes sound bodies", () => {
  const good: Array<[string, string, number, bigint[]]> = [
    ["server's form", `{"ids":["1","2","97301141913751557"]}`, 3, [1n, 2n, 97301141913751557n]],
    ["white space", ' {\n "ids" : [ "5" ,\t"6" ] } \r\n', 2, [5n, 6n]],
    ["16 and 17 digits", `{"ids":["1234567890123456","12345678901234567"]}`, 2, [1234567890123456n, 12345678901234567n]],
    ["largest ID", `{"ids":["9223372036854775806","9223372036854775807"]}`, 2, [9223372036854775806n, 9223372036854775807n]],
    ["above 2^53", `{"ids":["9007199254740993","9007199254740995"]}`, 2, [9007199254740993n, 9007199254740995n]],
    ["15 digits, then 19", `{"ids":["999999999999999","1000000000000000000"]}`, 2, [999999999999999n, 1000000000000000000n]],
    ["high half carries", `{"ids":["4294967295","4294967296","8589934591"]}`, 3, [4294967295n, 4294967296n, 8589934591n]],
  ];
  for (const [name, body, n, want] of good) {
    const { ids, why } = parse(body, n);
    assert.equal(why, "", name);
    assert.deepEqual(ids, want, name);
  }
});

test("parseBatch refuses every body that breaks a rule", () => {
  const bad: Array<[string, string, number]> = [
    ["empty", ``, 1],
    ["not an object", `["1"]`, 1],
    ["other member", `{"id":"1"}`, 1],
    ["extra member", `{"ids":["1"],"more":1}`, 1],
    ["repeated member", `{"ids":["1"],"ids":["2"]}`, 1],
    ["escaped name", `{"\\u0069ds":["1"]}`, 1],
    ["name case", `{"IDS":["1"]}`, 1],
    ["not an array", `{"ids":"1"}`, 1],
    ["empty array", `{"ids":[]}`, 1],
    ["too few", `{"ids":["1","2"]}`, 3],
    ["too many", `{"ids":["1","2","3"]}`, 2],
    ["number, not string", `{"ids":[1]}`, 1],
    ["zero", `{"ids":["0"]}`, 1],
    ["negative", `{"ids":["-1"]}`, 1],
    ["leading zero", `{"ids":["01"]}`, 1],
    ["leading zero, long", `{"ids":["01234567890123456"]}`, 1],
    ["plus sign", `{"ids":["+1"]}`, 1],
    ["space inside", `{"ids":[" 1"]}`, 1],
    ["fraction", `{"ids":["1.0"]}`, 1],
    ["escape in ID", `{"ids":["\\u0031"]}`, 1],
    ["over 2^63-1", `{"ids":["9223372036854775808"]}`, 1],
    ["19 nines", `{"ids":["9999999999999999999"]}`, 1],
    ["letter in a long ID", `{"ids":["1234567812345a78901"]}`, 1],
    ["colon in a long ID", `{"ids":["12345678:2345678901"]}`, 1],
    ["slash in a long ID", `{"ids":["1234567/12345678901"]}`, 1],
    ["20 digits", `{"ids":["10000000000000000000"]}`, 1],
    ["equal", `{"ids":["5","5"]}`, 2],
    ["decreasing", `{"ids":["6","5"]}`, 2],
    ["decreasing above 2^32", `{"ids":["8589934592","8589934591"]}`, 2],
    ["equal above 2^53", `{"ids":["9007199254740993","9007199254740993"]}`, 2],
    ["trailing comma", `{"ids":["1",]}`, 1],
    ["unterminated", `{"ids":["1"]`, 1],
    ["cut short", `{"ids":["1","2`, 2],
    ["cut inside a long ID", `{"ids":["12345678901234567`, 1],
    ["trailing data", `{"ids":["1"]}x`, 1],
    ["two objects", `{"ids":["1"]}{"ids":["2"]}`, 1],
    ["null", `null`, 1],
    ["unquoted long ID", `{"ids":[12345678901234567]}`, 1],
  ];
  for (const [name, body, n] of bad) {
    const { why } = parse(body, n);
    assert.notEqual(why, "", `${name}: ${body} accepted`);
  }
});

test("parseBatch reads the digits at the body's end without reading past it", () => {
  // The bytes after len are digits: a parser that read past the body would
  // take them for the rest of the ID.
  const body = new TextEncoder().encode(`{"ids":["12345678901234567`);
  const buf = new Uint8Array(body.length + 40).fill(0x35);
  buf.set(body);
  assert.notEqual(parseBatch(buf, body.length, 1, new Uint32Array(2)), "");
});

/** A deterministic generator (xorshift) so failures reproduce. */
function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 4294967296;
  };
}

/** The reference: JSON.parse, then the API's rules, then BigInt of each string. */
function reference(body: string, n: number): bigint[] | undefined {
  let v: unknown;
  try {
    v = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (v === null || typeof v !== "object" || Array.isArray(v)) return undefined;
  const keys = Object.keys(v);
  if (keys.length !== 1 || keys[0] !== "ids") return undefined;
  const ids = (v as { ids: unknown }).ids;
  if (!Array.isArray(ids) || ids.length !== n) return undefined;
  const out: bigint[] = [];
  for (const s of ids) {
    if (typeof s !== "string" || !/^[1-9][0-9]{0,18}$/.test(s)) return undefined;
    const id = BigInt(s);
    if (id > 9223372036854775807n) return undefined;
    if (out.length > 0 && id <= out[out.length - 1]!) return undefined;
    out.push(id);
  }
  return out;
}

test("parseBatch agrees with JSON.parse + BigInt on random bodies and mutations", () => {
  const r = rng(29);
  const randomId = (): bigint => {
    const digits = 1 + Math.floor(r() * 19);
    let s = String(1 + Math.floor(r() * 9));
    for (let i = 1; i < digits; i++) s += String(Math.floor(r() * 10));
    return BigInt(s);
  };
  for (let round = 0; round < 3000; round++) {
    const n = 1 + Math.floor(r() * 8);
    const ids = Array.from({ length: n }, randomId).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    let body = `{"ids":[${ids.map((id) => `"${id}"`).join(",")}]}`;
    if (round % 2 === 1) {
      // Mutate one byte: a digit, a quote, a bracket, a space, a letter.
      const at = Math.floor(r() * body.length);
      const chars = `0123456789" ,[]{}:a-+.\n`;
      body = body.slice(0, at) + chars[Math.floor(r() * chars.length)] + body.slice(at + 1);
    }
    const want = reference(body, n);
    const { ids: got, why } = parse(body, n);
    if (want === undefined) {
      assert.notEqual(why, "", `accepted ${body}, which the reference refuses`);
    } else {
      assert.equal(why, "", `refused ${body} (${why}), which the reference accepts`);
      assert.deepEqual(got, want, body);
    }
  }
});

test("parseBatch reads a full batch of 19-digit IDs exactly", () => {
  const ids: bigint[] = [];
  let v = 9223372036854000000n;
  for (let i = 0; i < 1000; i++) ids.push((v += 1n + BigInt(i % 777)));
  const { ids: got, why } = parse(`{"ids":[${ids.map((id) => `"${id}"`).join(",")}]}`, 1000);
  assert.equal(why, "");
  assert.deepEqual(got, ids);
});
