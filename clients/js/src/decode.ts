/**
 * Local decode of IDs: the v1 and v2 layouts and layout schedules, giving
 * exactly what `snowfence decode --json --schedule S ID` prints (a port of
 * layout.go and schedule.go at the Go module's root).
 *
 * @module
 */
import { InvalidIdError, InvalidScheduleError } from "./errors.js";
import { parseId, MAX_ID } from "./id.js";

/** How a 64-bit ID is cut into fields: from the top, after bit 63 (always 0), timestamp, region, machine, sequence. */
export interface Layout {
  /** The layout's name in decoded output ("v1", "v2"). */
  readonly name: string;
  /** The instant of timestamp 0, Unix milliseconds. */
  readonly epochMs: number;
  /** The length of one timestamp tick, milliseconds. */
  readonly unitMs: number;
  /** The width of the timestamp field; the four widths sum to 63. */
  readonly timeBits: number;
  /** The width of the region field (0 in v1). */
  readonly regionBits: number;
  /** The width of the machine field. */
  readonly machineBits: number;
  /** The width of the sequence field. */
  readonly sequenceBits: number;
}

const EPOCH_2026 = Date.UTC(2026, 0, 1);

/** v1: 41 bits of milliseconds since 2026-01-01T00:00:00Z, 10 bits of machine, 12 bits of sequence. */
export const V1: Layout = Object.freeze({ name: "v1", epochMs: EPOCH_2026, unitMs: 1, timeBits: 41, regionBits: 0, machineBits: 10, sequenceBits: 12 });
/** v2: 41 bits of milliseconds since 2026-01-01T00:00:00Z, 3 bits of region, 9 bits of machine, 10 bits of sequence. */
export const V2: Layout = Object.freeze({ name: "v2", epochMs: EPOCH_2026, unitMs: 1, timeBits: 41, regionBits: 3, machineBits: 9, sequenceBits: 10 });

/**
 * An ID taken apart: exactly the object `snowfence decode --json` prints
 * (without a lease store), with its field names, in its order, so
 * `JSON.stringify(decoded)` is the CLI's line.
 */
export interface Decoded {
  /** The ID in decimal. */
  id: string;
  /** The layout in force at the ID's timestamp. */
  layout: string;
  /** The ID's timestamp in UTC with three fraction digits, e.g. "2031-03-01T09:30:00.000Z". */
  created_at: string;
  /** The region number as text (the CLI gives names only with a lease store). */
  region: string;
  /** The region number (0 in v1, which has no region bits). */
  region_number: number;
  /** The machine number. */
  machine: number;
  /** The sequence within the millisecond. */
  sequence: number;
}

interface Step {
  layout: Layout;
  /** The first tick of the step (0 for the first). */
  fromTick: number;
  /** The instant it starts, Unix ms (for String()). */
  fromMs: number;
}

/**
 * A layout schedule: which layout is in force from which instant on. Every
 * layout of one schedule keeps the timestamp in the same bits, so an ID's
 * timestamp is read first and then the layout in force at it.
 */
export class Schedule {
  private readonly steps: readonly Step[];

  private constructor(steps: Step[]) {
    this.steps = steps;
  }

  /**
   * Reads the text `snowfence decode --schedule` takes: `v1`, or
   * `v1,v2@2027-01-01T00:00:00Z` (preset layout names separated by commas,
   * each after the first with the RFC 3339 instant it takes effect, on a
   * millisecond, after the epoch, in increasing order, each changing the
   * layout). Blank text is the default schedule, v1. Throws
   * {@link InvalidScheduleError} for anything ParseSchedule refuses.
   */
  static parse(text: string): Schedule {
    if (typeof text !== "string") throw new InvalidScheduleError(`snowfence: invalid schedule: not text but ${typeof text}; give text such as "v1"`);
    if (goTrimSpace(text) === "") return Schedule.parse("v1");
    const steps: Step[] = [];
    const parts = text.split(",");
    for (let i = 0; i < parts.length; i++) {
      const part = goTrimSpace(parts[i]!);
      const at = part.indexOf("@");
      const name = at < 0 ? part : part.slice(0, at);
      const layout = name === "v1" ? V1 : name === "v2" ? V2 : undefined;
      if (layout === undefined) {
        throw new InvalidScheduleError(`snowfence: invalid schedule: unknown layout ${JSON.stringify(name)} (known: v1, v2)`);
      }
      if (at >= 0 !== i > 0) {
        throw new InvalidScheduleError(
          `snowfence: invalid schedule: in ${JSON.stringify(text)}, every layout but the first needs @<RFC 3339 instant> and the first takes none`,
        );
      }
      if (i === 0) {
        steps.push({ layout, fromTick: 0, fromMs: 0 });
        continue;
      }
      const instant = part.slice(at + 1);
      const t = parseRFC3339(instant);
      if (t === undefined) {
        throw new InvalidScheduleError(
          `snowfence: invalid schedule: cutover ${JSON.stringify(instant)} is not an RFC 3339 instant such as 2028-01-01T00:00:00Z`,
        );
      }
      const shown = new Date(t.ms).toISOString();
      if (steps[i - 1]!.layout === layout) {
        throw new InvalidScheduleError(
          `snowfence: invalid schedule: layout ${layout.name} at ${shown} repeats the layout in force before it; leave the step out`,
        );
      }
      const first = steps[0]!.layout;
      const d = t.ms - first.epochMs;
      if (d <= 0 || d % first.unitMs !== 0 || !t.wholeMs) {
        throw new InvalidScheduleError(
          `snowfence: invalid schedule: cutover to ${layout.name} at ${shown} must be after the epoch (2026-01-01T00:00:00Z) and on a ${first.unitMs}ms boundary`,
        );
      }
      const fromTick = d / first.unitMs;
      if (fromTick <= steps[i - 1]!.fromTick) {
        throw new InvalidScheduleError(`snowfence: invalid schedule: cutovers must be in increasing order (${layout.name} at ${shown})`);
      }
      steps.push({ layout, fromTick, fromMs: t.ms });
    }
    return new Schedule(steps);
  }

  /** The textual form parse reads, e.g. "v1,v2@2027-01-01T00:00:00.000Z". */
  toString(): string {
    return this.steps.map((s, i) => (i === 0 ? s.layout.name : `${s.layout.name}@${new Date(s.fromMs).toISOString()}`)).join(",");
  }

  /** The layout in force at a tick of the schedule's timestamp. */
  layoutAtTick(tick: number): Layout {
    let l = this.steps[0]!.layout;
    for (const s of this.steps) {
      if (s.fromTick > tick) break;
      l = s.layout;
    }
    return l;
  }

  /**
   * Takes an ID apart (a bigint, or its decimal text, read strictly as
   * {@link parseId} does), picking the layout by the ID's timestamp. Throws
   * {@link InvalidIdError} for input that is no ID.
   */
  decode(id: bigint | string): Decoded {
    let v: bigint;
    if (typeof id === "string") v = parseId(id);
    else if (typeof id === "bigint") v = id;
    else throw new InvalidIdError(String(id), `not a bigint or decimal text but a ${typeof id}`);
    if (v < 0n) throw new InvalidIdError(v.toString(), "IDs are never negative");
    if (v > MAX_ID) throw new InvalidIdError(v.toString(), "larger than 9223372036854775807, the largest ID");
    const f = this.fields(v);
    return {
      id: v.toString(),
      layout: f.layout.name,
      created_at: new Date(f.layout.epochMs + f.tick * f.layout.unitMs).toISOString(),
      region: String(f.region),
      region_number: f.region,
      machine: f.machine,
      sequence: f.sequence,
    };
  }

  /** The layout and fields of a valid ID (0 … 2^63 − 1). */
  fields(v: bigint): { layout: Layout; tick: number; region: number; machine: number; sequence: number } {
    const first = this.steps[0]!.layout;
    const tick = Number(v >> BigInt(63 - first.timeBits));
    const l = this.layoutAtTick(tick);
    // Everything below the timestamp fits in 22 bits for v1 and v2, and
    // in 62 bits for any layout: read it as a bigint, then numbers.
    const low = v & ((1n << BigInt(63 - l.timeBits)) - 1n);
    const seq = Number(low & ((1n << BigInt(l.sequenceBits)) - 1n));
    const machine = Number((low >> BigInt(l.sequenceBits)) & ((1n << BigInt(l.machineBits)) - 1n));
    const region = Number((low >> BigInt(l.sequenceBits + l.machineBits)) & ((1n << BigInt(l.regionBits)) - 1n));
    return { layout: l, tick, region, machine, sequence: seq };
  }
}

/**
 * Decodes an ID with a schedule (text, default "v1", or a {@link Schedule}):
 * exactly the fields of `snowfence decode --json --schedule S ID`. Throws
 * {@link InvalidIdError} (checked first, as the CLI does) or
 * {@link InvalidScheduleError}.
 */
export function decode(id: bigint | string, schedule: string | Schedule = "v1"): Decoded {
  // The ID first, as the CLI reads it: input bad in both ways is an
  // invalid ID.
  const v = typeof id === "string" ? parseId(id) : id;
  const s = schedule instanceof Schedule ? schedule : Schedule.parse(schedule);
  return s.decode(v);
}

// Go's unicode.IsSpace, which strings.TrimSpace trims (JavaScript's trim()
// differs: it trims U+FEFF and not U+0085).
function isGoSpace(c: number): boolean {
  switch (c) {
    case 0x09:
    case 0x0a:
    case 0x0b:
    case 0x0c:
    case 0x0d:
    case 0x20:
    case 0x85:
    case 0xa0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202f:
    case 0x205f:
    case 0x3000:
      return true;
  }
  return c >= 0x2000 && c <= 0x200a;
}

function goTrimSpace(s: string): string {
  let a = 0;
  let b = s.length;
  while (a < b && isGoSpace(s.charCodeAt(a))) a++;
  while (b > a && isGoSpace(s.charCodeAt(b - 1))) b--;
  return s.slice(a, b);
}

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|([+-])(\d{2}):(\d{2}))$/;

/**
 * Parses an RFC 3339 instant as Go's time.Parse(time.RFC3339Nano, …) does:
 * 'T' and 'Z' upper case, seconds required, any number of fraction digits
 * (those past nanoseconds ignored), an offset of at most 24:60. Returns Unix
 * milliseconds and whether the instant is on a whole millisecond.
 */
function parseRFC3339(s: string): { ms: number; wholeMs: boolean } | undefined {
  const m = RFC3339.exec(s);
  if (m === null) return undefined;
  const [year, month, day, hour, min, sec] = [m[1], m[2], m[3], m[4], m[5], m[6]].map(Number) as [number, number, number, number, number, number];
  if (month < 1 || month > 12) return undefined;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]!;
  if (day < 1 || day > days || hour > 23 || min > 59 || sec > 59) return undefined;
  const frac = (m[7] ?? "").slice(0, 9).padEnd(9, "0");
  const fracMs = Number(frac.slice(0, 3));
  const wholeMs = /^0*$/.test(frac.slice(3));
  let offsetMin = 0;
  if (m[8] !== "Z") {
    const oh = Number(m[10]);
    const om = Number(m[11]);
    if (oh > 24 || om > 60) return undefined;
    offsetMin = (oh * 60 + om) * (m[9] === "-" ? -1 : 1);
  }
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day);
  d.setUTCHours(hour, min, sec, fracMs);
  return { ms: d.getTime() - offsetMin * 60000, wholeMs };
}
