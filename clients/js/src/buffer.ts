/**
 * The ring of buffered IDs (a port of the Go client's buffer.go).
 *
 * @module
 */

// Whether this machine stores the low half of a 64-bit integer first.
const LITTLE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const LO = LITTLE ? 0 : 1;
const HI = LITTLE ? 1 : 0;

/**
 * IdBuffer holds the IDs received and not yet handed out, oldest first, in
 * a ring of 64-bit integers (a BigInt64Array), with one chunk record per
 * response: where its IDs end and when they expire.
 *
 * It is written this way because it is the whole cost of a warm `next()`:
 * the parser writes each ID's two 32-bit halves straight into the ring's
 * memory, and the hand-out is one typed-array read (the only allocation per
 * ID is the bigint that read makes, which the caller needs anyway); and a
 * per-chunk deadline makes the age check one comparison per call instead of
 * a timestamp per ID. Chunks are kept in their own ring of two
 * Float64Arrays, so pushing and popping them allocates nothing either.
 */
export class IdBuffer {
  private readonly ring64: BigInt64Array;
  private readonly ring32: Uint32Array;
  private readonly mask: number;
  /** Positions since the start: IDs [head, tail) are buffered, at ring64[p & mask]. */
  private head = 0;
  private tail = 0;
  // The chunk ring: chunks [cHead, cTail) are buffered, oldest first, at
  // index c & cMask; a chunk's IDs are those before cEnd not yet handed out.
  private cEnd: Float64Array;
  private cDeadline: Float64Array;
  private cMask: number;
  private cHead = 0;
  private cTail = 0;
  /** IDs dropped for age. */
  expired = 0;
  /** The earliest deadline of the chunks the last takeN took IDs from (Infinity if none). */
  takenDeadline = Infinity;

  /** @param capacity the most IDs held; rounded up to a power of two. */
  constructor(capacity: number) {
    let n = 1;
    while (n < capacity) n *= 2;
    this.ring64 = new BigInt64Array(n);
    this.ring32 = new Uint32Array(this.ring64.buffer);
    this.mask = n - 1;
    const c = Math.min(n, 64);
    this.cEnd = new Float64Array(c);
    this.cDeadline = new Float64Array(c);
    this.cMask = c - 1;
  }

  /** The number of IDs buffered, expired ones included. */
  get length(): number {
    return this.tail - this.head;
  }

  /**
   * Hands out the oldest ID that has not expired at now (the monotonic
   * clock, ms), dropping the expired ones before it; undefined when none is
   * left.
   */
  take(now: number): bigint | undefined {
    while (this.cHead !== this.cTail) {
      const c = this.cHead & this.cMask;
      const end = this.cEnd[c]!;
      if (now < this.cDeadline[c]!) {
        const id = this.ring64[this.head & this.mask]!;
        if (++this.head === end) this.cHead++;
        return id;
      }
      this.expired += end - this.head;
      this.head = end;
      this.cHead++;
    }
    return undefined;
  }

  /**
   * Appends up to n IDs that have not expired at now to dst, as take does,
   * and sets takenDeadline to the earliest deadline of the chunks it took
   * IDs from. Returns how many it appended.
   */
  takeN(dst: bigint[], n: number, now: number): number {
    let got = 0;
    this.takenDeadline = Infinity;
    while (got < n && this.cHead !== this.cTail) {
      const c = this.cHead & this.cMask;
      const end = this.cEnd[c]!;
      const deadline = this.cDeadline[c]!;
      if (now >= deadline) {
        this.expired += end - this.head;
        this.head = end;
        this.cHead++;
        continue;
      }
      if (deadline < this.takenDeadline) this.takenDeadline = deadline;
      const k = Math.min(n - got, end - this.head);
      for (let j = 0; j < k; j++) dst.push(this.ring64[(this.head + j) & this.mask]!);
      this.head += k;
      got += k;
      if (this.head === end) this.cHead++;
    }
    return got;
  }

  /** Drops the chunks expired at now. */
  dropExpired(now: number): void {
    while (this.cHead !== this.cTail) {
      const c = this.cHead & this.cMask;
      if (now < this.cDeadline[c]!) return;
      const end = this.cEnd[c]!;
      this.expired += end - this.head;
      this.head = end;
      this.cHead++;
    }
  }

  /**
   * Adds the `count` IDs of one response, which must fit, expiring at
   * deadline: ID k's low half at src[2k], its high half at src[2k+1] (as
   * parseBatch writes them).
   */
  push(src: Uint32Array, count: number, deadline: number): void {
    if (count === 0) return;
    if (this.cTail - this.cHead > this.cMask) this.growChunks();
    const r = this.ring32;
    const mask = this.mask;
    let p = this.tail;
    for (let k = 0; k < count; k++, p++) {
      const q = (p & mask) * 2;
      r[q + LO] = src[2 * k]!;
      r[q + HI] = src[2 * k + 1]!;
    }
    this.tail = p;
    const c = this.cTail & this.cMask;
    this.cEnd[c] = p;
    this.cDeadline[c] = deadline;
    this.cTail++;
  }

  /** Doubles the chunk ring, keeping the chunks in order. */
  private growChunks(): void {
    const n = (this.cMask + 1) * 2;
    const end = new Float64Array(n);
    const deadline = new Float64Array(n);
    let j = 0;
    for (let c = this.cHead; c !== this.cTail; c++, j++) {
      end[j] = this.cEnd[c & this.cMask]!;
      deadline[j] = this.cDeadline[c & this.cMask]!;
    }
    this.cEnd = end;
    this.cDeadline = deadline;
    this.cMask = n - 1;
    this.cHead = 0;
    this.cTail = j;
  }

  /** Drops every ID and returns how many there were. */
  clear(): number {
    const n = this.length;
    this.head = this.tail;
    this.cHead = this.cTail = 0;
    return n;
  }
}
