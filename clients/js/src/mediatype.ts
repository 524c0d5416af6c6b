/**
 * The check of a 200's Content-Type: a port of what Go's
 * mime.ParseMediaType accepts, since the Go client refuses a batch whose
 * Content-Type it cannot parse or that is not application/json.
 *
 * @module
 */

// Go's unicode.IsSpace over Latin-1, the range of a header value.
function isSpace(c: number): boolean {
  return c === 0x20 || (c >= 0x09 && c <= 0x0d) || c === 0x85 || c === 0xa0;
}

function trimLeft(s: string): string {
  let i = 0;
  while (i < s.length && isSpace(s.charCodeAt(i))) i++;
  return s.slice(i);
}

// RFC 1521 token characters, as Go's mime.isTokenChar.
function isTokenChar(c: number): boolean {
  return c > 0x20 && c < 0x7f && !'()<>@,;:\\"/[]?='.includes(String.fromCharCode(c));
}

function consumeToken(v: string): [string, string] {
  let i = 0;
  while (i < v.length && isTokenChar(v.charCodeAt(i))) i++;
  return [v.slice(0, i), v.slice(i)];
}

function consumeValue(v: string): [string, string] {
  if (v === "") return ["", v];
  if (v[0] !== '"') return consumeToken(v);
  let out = "";
  for (let i = 1; i < v.length; i++) {
    const r = v[i]!;
    if (r === '"') return [out, v.slice(i + 1)];
    if (r === "\\" && i + 1 < v.length && isTSpecial(v.charCodeAt(i + 1))) {
      out += v[i + 1];
      i++;
    } else if (r === "\r" || r === "\n") {
      return ["", v];
    } else {
      out += r;
    }
  }
  return ["", v]; // no closing quote
}

function isTSpecial(c: number): boolean {
  return '()<>@,;:\\"/[]?='.includes(String.fromCharCode(c));
}

function consumeParam(v: string): [string, string, string] {
  let rest = trimLeft(v);
  if (!rest.startsWith(";")) return ["", "", v];
  rest = trimLeft(rest.slice(1));
  let param: string;
  [param, rest] = consumeToken(rest);
  param = param.toLowerCase();
  if (param === "") return ["", "", v];
  rest = trimLeft(rest);
  if (!rest.startsWith("=")) return ["", "", v];
  rest = trimLeft(rest.slice(1));
  const [value, rest2] = consumeValue(rest);
  if (value === "" && rest2 === rest) return ["", "", v];
  return [param, value, rest2];
}

/**
 * Whether a Content-Type header value is application/json (any case, any
 * well-formed parameters), by the rules of Go's mime.ParseMediaType: a
 * malformed type or parameter, or a parameter given twice with two values,
 * is not.
 */
export function isJSONMediaType(v: string): boolean {
  const semi = v.indexOf(";");
  const base = semi < 0 ? v : v.slice(0, semi);
  const mediatype = base.toLowerCase().replace(/^[\s\u0085\u00a0]+|[\s\u0085\u00a0]+$/g, "");
  // checkMediaTypeDisposition
  const [typ, rest] = consumeToken(mediatype);
  if (typ === "") return false;
  if (rest !== "") {
    if (!rest.startsWith("/")) return false;
    const [sub, rest2] = consumeToken(rest.slice(1));
    if (sub === "" || rest2 !== "") return false;
  }
  let params = semi < 0 ? "" : v.slice(semi);
  const seen = new Map<string, string>();
  while (params.length > 0) {
    params = trimLeft(params);
    if (params.length === 0) break;
    const [key, value, rest3] = consumeParam(params);
    if (key === "") {
      if (rest3.trim() === ";") break; // a trailing semicolon is no error
      return false;
    }
    // A parameter given twice is refused, unless with the same value.
    const before = seen.get(key);
    if (before !== undefined && before !== value) return false;
    seen.set(key, value);
    params = rest3;
  }
  return mediatype === "application/json";
}
