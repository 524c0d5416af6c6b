/**
 * The check of Config.schedule: refuse an answer that repeats IDs received
 * before (a port of the Go client's repeat.go).
 *
 * @module
 */
import type { Schedule } from "./decode.js";

interface Run {
  key: string;
  first: bigint;
  last: bigint;
  layout: string;
  region: number;
  machine: number;
}

/**
 * Marks remembers, per stream (layout, region number, machine number), the
 * last ID the client received, and refuses a batch that does not start above
 * it. One machine number's IDs strictly increase over time, even across
 * holders, and one client sends one request at a time, so a sound answer is
 * never refused. At most layouts × regions × machines streams are
 * remembered.
 */
export class Marks {
  private readonly schedule: Schedule;
  private readonly last = new Map<string, bigint>();

  /** @param schedule the servers' schedule. */
  constructor(schedule: Schedule) {
    this.schedule = schedule;
  }

  private run(id: bigint): Run {
    const f = this.schedule.fields(id);
    return { key: `${f.layout.name}/${f.region}/${f.machine}`, first: id, last: id, layout: f.layout.name, region: f.region, machine: f.machine };
  }

  /**
   * Takes the IDs of one answer, strictly increasing (`at(k)` for k in
   * 0..n-1), and returns why some of them may have been received before (""
   * if none can have been), remembering their marks only if none can. Only
   * the first and last IDs are decoded, unless they are of different streams
   * (a batch minted across a change of layout or machine number): then every
   * ID is, to split the batch into runs of one stream.
   */
  check(n: number, at: (k: number) => bigint): string {
    const first = at(0);
    const last = at(n - 1);
    let runs: Run[] = [this.run(first)];
    runs[0]!.last = last;
    if (this.run(last).key !== runs[0]!.key) {
      runs = [];
      for (let k = 0; k < n; k++) {
        const id = at(k);
        const r = this.run(id);
        const prev = runs[runs.length - 1];
        if (prev !== undefined && prev.key === r.key) prev.last = id;
        else runs.push(r);
      }
    }
    // A stream's later runs in the batch start above its earlier ones'
    // ends (the batch increases), so checking each against the mark from
    // before the batch is enough.
    for (const r of runs) {
      const prev = this.last.get(r.key);
      if (prev !== undefined && r.first <= prev) {
        return `ID ${r.first} is not above ID ${prev}, the last received before from machine ${r.machine} of region ${r.region} (layout ${r.layout}), whose IDs only increase: the answer repeats IDs (a replayed or duplicated response)`;
      }
    }
    for (const r of runs) this.last.set(r.key, r.last);
    return "";
  }
}
