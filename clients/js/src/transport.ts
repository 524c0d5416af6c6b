/**
 * The client's HTTP: one mint request, one health probe, on keep-alive
 * Agents of node:http and node:https.
 *
 * @module
 */
import * as http from "node:http";
import * as https from "node:https";
import type { Clock } from "./clock.js";
import type { EndpointURL, Settings } from "./config.js";
import { BadResponseError, ClosedError, serverError, TransportError } from "./errors.js";
import { isJSONMediaType } from "./mediatype.js";

/** The largest 200 body read: 1,000 IDs of 19 digits in quotes take 22,010 bytes; the rest is room for white space. */
export const MAX_BATCH_BODY = 64 << 10;
/** How much of an error body is read. */
const MAX_ERROR_BODY = 4 << 10;
/** How much of a probe's body is read. */
const MAX_PROBE_BODY = 64 << 10;

const MINT_HEADERS = { Accept: "application/json", "User-Agent": "snowfence-client", "Content-Length": "0" };
const PROBE_HEADERS = { "User-Agent": "snowfence-client" };

/**
 * Transport sends the client's requests. It keeps one http and one https
 * Agent with keep-alive (node:http rather than fetch: fetch's mutual TLS
 * needs undici's dispatcher, a dependency), and bounds each request by a
 * timer that destroys it.
 */
export class Transport {
  /** The body of the last 200 answer of mint (valid up to the length mint resolved). */
  readonly body = new Uint8Array(MAX_BATCH_BODY + 1);
  private readonly s: Settings;
  private readonly clock: Clock;
  private httpAgent: http.Agent | undefined;
  private httpsAgent: https.Agent | undefined;
  /** The requests in flight, each with the function that ends it with an error. */
  private readonly inflight = new Map<http.ClientRequest, (err: Error) => void>();
  private closed = false;

  /** @param s the client's settings. */
  constructor(s: Settings) {
    this.s = s;
    this.clock = s.clock;
  }

  private agent(u: URL): http.Agent {
    if (u.protocol === "https:") {
      this.httpsAgent ??= new https.Agent({
        keepAlive: true,
        // Close idle connections before the server does (120 s), so a
        // request rarely meets a connection the server just closed.
        timeout: 60_000,
        ca: this.s.tls?.ca,
        cert: this.s.tls?.cert,
        key: this.s.tls?.key,
        passphrase: this.s.tls?.passphrase,
        servername: this.s.tls?.servername,
      });
      return this.httpsAgent;
    }
    this.httpAgent ??= new http.Agent({ keepAlive: true, timeout: 60_000 });
    return this.httpAgent;
  }

  /**
   * Sends POST <base>/v1/ids:batch?count=n and resolves the length of the
   * 200 body it read into `body`, or rejects: TransportError (no answer, a
   * timeout, a body cut short), ServerError (a non-200), BadResponseError (a
   * 200 that is not JSON, or too long), ClosedError (close()). Only a
   * complete body resolves.
   */
  mint(ep: EndpointURL, n: number): Promise<number> {
    return new Promise((resolve, reject) => this.sendMint(ep, n, resolve, reject, true));
  }

  private sendMint(ep: EndpointURL, n: number, resolve: (len: number) => void, reject: (err: Error) => void, mayRetry: boolean): void {
    if (this.closed) {
      reject(new ClosedError());
      return;
    }
    const u = ep.url;
    const base = ep.base;
    const req = (u.protocol === "https:" ? https : http).request({
      protocol: u.protocol,
      hostname: u.hostname.startsWith("[") ? u.hostname.slice(1, -1) : u.hostname,
      port: u.port,
      path: ep.mintPath + n,
      method: "POST",
      agent: this.agent(u),
      headers: MINT_HEADERS,
    });
    let done = false;
    let answered = false;
    const finish = (): void => {
      done = true;
      clearTimeout(timer);
      this.inflight.delete(req);
    };
    const fail = (err: Error): void => {
      if (done) return;
      finish();
      req.destroy();
      reject(err);
    };
    const timer = setTimeout(() => {
      fail(new TransportError(base, `no whole answer within ${this.s.requestTimeoutMs} ms (Config.requestTimeoutMs); no IDs taken from it`, true));
    }, this.s.requestTimeoutMs);
    this.inflight.set(req, fail);
    req.on("error", (err: NodeJS.ErrnoException) => {
      if (done) return;
      // A kept-alive connection the server closed while it was idle: the
      // request never reached it. Send it once more on a new connection,
      // as Go's transport does, rather than count a failure.
      if (mayRetry && !answered && req.reusedSocket && (err.code === "ECONNRESET" || err.code === "EPIPE")) {
        finish();
        this.sendMint(ep, n, resolve, reject, false);
        return;
      }
      fail(new TransportError(base, `the request failed (${err.code ?? err.message}); no IDs taken`, false, { cause: err }));
    });
    req.on("response", (res: http.IncomingMessage) => {
      answered = true;
      res.on("error", (err) => fail(new TransportError(base, `reading the answer failed (${err.message}); no IDs taken from it`, false, { cause: err })));
      res.on("close", () => fail(new TransportError(base, "the connection closed before the whole answer arrived; no IDs taken from it", false)));
      const status = res.statusCode ?? 0;
      if (status !== 200) {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (c: Buffer) => {
          if (size < MAX_ERROR_BODY) chunks.push(c);
          size += c.length;
        });
        res.on("end", () => {
          if (done) return;
          finish();
          reject(this.serverError(base, status, res.headers["retry-after"], Buffer.concat(chunks).subarray(0, MAX_ERROR_BODY)));
        });
        return;
      }
      const ct = res.headers["content-type"] ?? "";
      if (!isJSONMediaType(ct)) {
        fail(new BadResponseError(base, `Content-Type ${JSON.stringify(ct)} is not application/json`));
        return;
      }
      const cl = res.headers["content-length"];
      if (cl !== undefined && Number(cl) > MAX_BATCH_BODY) {
        fail(new BadResponseError(base, `a body of ${cl} bytes, more than a batch takes`));
        return;
      }
      const body = this.body;
      let len = 0;
      res.on("data", (c: Buffer) => {
        if (done) return;
        if (len + c.length > MAX_BATCH_BODY) {
          fail(new BadResponseError(base, `the body is over ${MAX_BATCH_BODY} bytes`));
          return;
        }
        body.set(c, len);
        len += c.length;
      });
      res.on("end", () => {
        if (done) return;
        if (!res.complete) {
          fail(new TransportError(base, "the connection closed before the whole answer arrived; no IDs taken from it", false));
          return;
        }
        finish();
        resolve(len);
      });
    });
    req.end();
  }

  /** Reads a non-200 answer into the ServerError of its status. */
  private serverError(base: string, status: number, retryAfter: string | undefined, body: Buffer): Error {
    let code = "";
    let detail = "";
    let reason = "";
    try {
      const v: unknown = JSON.parse(body.toString("utf8"));
      const e = (v as { error?: { code?: unknown; message?: unknown; reason?: unknown } } | null)?.error;
      if (e !== null && typeof e === "object") {
        if (typeof e.code === "string") code = e.code;
        if (typeof e.message === "string") detail = e.message;
        if (typeof e.reason === "string") reason = e.reason;
      }
    } catch {
      // Not the server's JSON error (a proxy's page): the status tells.
    }
    return serverError({ endpoint: base, status, code, detail, reason, retryAfterMs: this.retryAfterMs(retryAfter) });
  }

  /**
   * Reads a Retry-After header: whole seconds, or an HTTP date (measured
   * against the clock's wall time). Anything else is 0.
   */
  retryAfterMs(h: string | undefined): number {
    if (h === undefined || h === "") return 0;
    if (/^[0-9]+$/.test(h)) {
      const s = Number(h);
      return s < 2 ** 32 ? s * 1000 : 0;
    }
    const t = parseHTTPDate(h);
    if (t !== undefined) {
      const d = t - this.clock.wallMs();
      if (d > 0) return d;
    }
    return 0;
  }

  /**
   * Reports whether GET url answers 200 within the request timeout. The
   * probe's socket and timer do not keep the process alive.
   */
  probe(url: URL): Promise<boolean> {
    if (this.closed) return Promise.resolve(false);
    return new Promise((resolve) => {
      let done = false;
      const req = (url.protocol === "https:" ? https : http).request(url, { method: "GET", agent: this.agent(url), headers: PROBE_HEADERS });
      const end = (ok: boolean): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        this.inflight.delete(req);
        if (!ok) req.destroy();
        resolve(ok);
      };
      const timer = setTimeout(() => end(false), this.s.requestTimeoutMs);
      timer.unref();
      this.inflight.set(req, () => end(false));
      req.on("socket", (sock) => sock.unref());
      req.on("error", () => end(false));
      req.on("response", (res) => {
        let size = 0;
        res.on("data", (c: Buffer) => {
          size += c.length;
          if (size > MAX_PROBE_BODY) end(false);
        });
        res.on("end", () => end(res.statusCode === 200 && res.complete));
        res.on("error", () => end(false));
        res.on("close", () => end(false));
      });
      req.end();
    });
  }

  /** Ends every request in flight with ClosedError and closes the connections. */
  close(): void {
    this.closed = true;
    for (const fail of [...this.inflight.values()]) fail(new ClosedError());
    this.inflight.clear();
    this.httpAgent?.destroy();
    this.httpsAgent?.destroy();
  }
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const M = "(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)";
// The three forms of an HTTP date (RFC 9110 §5.6.7), as Go's http.ParseTime takes them.
const IMF_FIXDATE = new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\\d{2}) ${M} (\\d{4}) (\\d{2}):(\\d{2}):(\\d{2}) GMT$`);
const RFC850 = new RegExp(`^(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (\\d{2})-${M}-(\\d{2}) (\\d{2}):(\\d{2}):(\\d{2}) GMT$`);
const ASCTIME = new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) ${M} ([ \\d]\\d) (\\d{2}):(\\d{2}):(\\d{2}) (\\d{4})$`);

/** Unix ms of an HTTP date (all three forms are UTC), or undefined. */
export function parseHTTPDate(h: string): number | undefined {
  let day: string, mon: string, year: number, hh: string, mm: string, ss: string;
  let m: RegExpExecArray | null;
  if ((m = IMF_FIXDATE.exec(h)) !== null) {
    [day, mon, year, hh, mm, ss] = [m[1]!, m[2]!, Number(m[3]), m[4]!, m[5]!, m[6]!];
  } else if ((m = RFC850.exec(h)) !== null) {
    const yy = Number(m[3]);
    [day, mon, year, hh, mm, ss] = [m[1]!, m[2]!, yy < 69 ? 2000 + yy : 1900 + yy, m[4]!, m[5]!, m[6]!];
  } else if ((m = ASCTIME.exec(h)) !== null) {
    [mon, day, hh, mm, ss, year] = [m[1]!, m[2]!.trim(), m[3]!, m[4]!, m[5]!, Number(m[6])];
  } else {
    return undefined;
  }
  const [d, H, Mi, S] = [Number(day), Number(hh), Number(mm), Number(ss)];
  if (d < 1 || d > 31 || H > 23 || Mi > 59 || S > 59) return undefined;
  const t = Date.UTC(year, MONTHS.indexOf(mon), d, H, Mi, S);
  return new Date(t).getUTCDate() === d ? t : undefined;
}
