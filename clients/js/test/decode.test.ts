// Local decode against `snowfence decode --json`: the recorded table
// (decode-cases.json, written by decode-cases.sh from the CLI), and the CLI
// itself when SNOWFENCE_CLI names its binary.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { decode, idToString, InvalidIdError, InvalidScheduleError, parseId, Schedule } from "../src/index.js";

interface Case {
  schedule: string;
  id: string;
  decoded?: Record<string, unknown>;
  refused?: "id" | "schedule";
}

const cases: Case[] = JSON.parse(readFileSync(new URL("../../test/decode-cases.json", import.meta.url), "utf8"));

function ours(c: { schedule: string; id: string }): { decoded?: unknown; refused?: string } {
  try {
    return { decoded: decode(c.id, c.schedule) };
  } catch (e) {
    if (e instanceof InvalidIdError) return { refused: "id" };
    if (e instanceof InvalidScheduleError) return { refused: "schedule" };
    throw e;
  }
}

test("decode matches the CLI's recorded answers", () => {
  assert.ok(cases.length > 500, "the recorded table is there");
  for (const c of cases) {
    const got = ours(c);
    const want = c.decoded !== undefined ? { decoded: c.decoded } : { refused: c.refused };
    assert.deepEqual(got, want, `decode --schedule ${JSON.stringify(c.schedule)} ${JSON.stringify(c.id)}`);
    if (got.decoded !== undefined) {
      // Field for field, in the CLI's order: the JSON line is the CLI's.
      assert.equal(JSON.stringify(got.decoded), JSON.stringify(c.decoded));
    }
  }
});

test("decode matches the CLI itself (SNOWFENCE_CLI)", { skip: process.env.SNOWFENCE_CLI === undefined && "SNOWFENCE_CLI is not set" }, () => {
  const cli = process.env.SNOWFENCE_CLI!;
  const seen = new Set<string>();
  for (const c of cases) {
    if (seen.has(c.schedule)) continue;
    seen.add(c.schedule);
    for (const id of ["1", "683244571854022659", "122737110268530688", "9223372036854775807", "x"]) {
      let want: unknown;
      try {
        want = { decoded: JSON.parse(execFileSync(cli, ["decode", "--json", "--schedule", c.schedule, "--", id], { stdio: ["ignore", "pipe", "pipe"] }).toString()) };
      } catch {
        want = "refused";
      }
      const got = ours({ schedule: c.schedule, id });
      assert.deepEqual(got.decoded !== undefined ? { decoded: got.decoded } : "refused", want, `${c.schedule} ${id}`);
    }
  }
});

test("a Schedule decodes bigints and prints its text", () => {
  const s = Schedule.parse("v1,v2@2027-01-01T00:00:00Z");
  assert.equal(s.toString(), "v1,v2@2027-01-01T00:00:00.000Z");
  assert.equal(s.decode(683244571854022659n).layout, "v2");
  assert.equal(s.decode(1n).layout, "v1");
  assert.throws(() => s.decode(-1n), InvalidIdError);
  assert.throws(() => s.decode(1n << 63n), InvalidIdError);
  assert.equal(Schedule.parse("").toString(), "v1");
});

test("parseId is as strict as the Go library's ParseID", () => {
  assert.equal(parseId("0"), 0n);
  assert.equal(parseId("9223372036854775807"), 9223372036854775807n);
  assert.equal(parseId("97301141913751557"), 97301141913751557n);
  for (const bad of ["", "-1", "+1", " 1", "1 ", "01", "1.0", "1e3", "9223372036854775808", "99999999999999999999", "12a", "０"]) {
    assert.throws(() => parseId(bad), InvalidIdError, JSON.stringify(bad));
  }
  assert.throws(() => parseId(5 as unknown as string), InvalidIdError);
});

test("idToString refuses what is no ID", () => {
  assert.equal(idToString(9223372036854775807n), "9223372036854775807");
  assert.equal(idToString(0n), "0");
  assert.throws(() => idToString(-1n), InvalidIdError);
  assert.throws(() => idToString(1n << 63n), InvalidIdError);
  assert.throws(() => idToString(5 as unknown as bigint), InvalidIdError);
});
