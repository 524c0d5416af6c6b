// The Content-Type check against Go's mime.ParseMediaType: each value with
// whether the Go client takes it as application/json (recorded from Go).
import { test } from "node:test";
import assert from "node:assert/strict";
import { isJSONMediaType } from "../src/mediatype.js";

const goVerdicts: Array<[string, boolean]> = [
  ["", false],
  [" application/json ", true],
  ["/json", false],
  ["Application/JSON", true],
  ["app lication/json", false],
  ["application", false],
  ["application/", false],
  ["application/json", true],
  ["application/json\t", true],
  ["application/json ; a=1", true],
  ["application/json x", false],
  ["application/json, text/plain", false],
  ["application/json/x", false],
  ["application/json;", true],
  ["application/json;\ta=1", true],
  ["application/json; ", true],
  ["application/json; =utf-8", false],
  ["application/json; CHARSET=a; charset=b", false],
  ["application/json; a=\"\"", true],
  ["application/json; a=\"x\\\"y\"", true],
  ["application/json; a=(x)", false],
  ["application/json; a=1; ;", false],
  ["application/json; a=1; b=2", true],
  ["application/json; a=b c", false],
  ["application/json; a=x@y", false],
  ["application/json; charset", false],
  ["application/json; charset=", false],
  ["application/json; charset=\"utf-8", false],
  ["application/json; charset=\"utf-8\"", true],
  ["application/json; charset=utf-8", true],
  ["application/json; charset=utf-8 ", true],
  ["application/json; charset=utf-8; charset=latin1", false],
  ["application/json; charset=utf-8; charset=utf-8", true],
  ["application/json; title*0=a; title*1=b", true],
  ["application/json; title*=utf-8''x", true],
  ["application/json;;", false],
  ["application/json;a=1 ;", true],
  ["application/json;a=1;", true],
  ["application/json;charset=utf-8", true],
  ["application/jsonp", false],
  ["text/plain", false],
  ["\u00a0application/json", true],
];

test("the Content-Type of a batch is read as Go's mime.ParseMediaType reads it", () => {
  for (const [v, want] of goVerdicts) assert.equal(isJSONMediaType(v), want, JSON.stringify(v));
});
