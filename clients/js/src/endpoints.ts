/**
 * The health of every endpoint (a port of the Go client's endpoints.go).
 *
 * @module
 */
import type { EndpointURL, Logger } from "./config.js";

interface Endpoint {
  url: EndpointURL;
  inService: boolean;
  /** Consecutive failed requests. */
  fails: number;
  /** Consecutive healthy probes while out of service. */
  healthy: number;
}

/**
 * Endpoints tracks the health of every endpoint. An endpoint is in service
 * until failureThreshold consecutive requests to it fail; it is then probed
 * every probeInterval and is back in service after recoveryProbes
 * consecutive healthy probes. Requests go to the first endpoint in service,
 * so the client returns to a better endpoint only once it has proved
 * healthy; when none is in service, requests go to each in turn.
 */
export class Endpoints {
  private readonly list: Endpoint[];
  private readonly threshold: number;
  private readonly recovery: number;
  private readonly log: Logger;
  /** The endpoint tried when none is in service: they take turns. */
  private turn = 0;
  /** Called when an endpoint is taken out, to start the probes. */
  onOut: () => void = () => {};

  /**
   * @param urls the endpoints, in order of preference.
   * @param threshold consecutive failures that take one out.
   * @param recovery consecutive healthy probes that put one back.
   */
  constructor(urls: EndpointURL[], threshold: number, recovery: number, log: Logger) {
    this.list = urls.map((url) => ({ url, inService: true, fails: 0, healthy: 0 }));
    this.threshold = threshold;
    this.recovery = recovery;
    this.log = log;
  }

  /** The index of the endpoint the next request goes to: the first in service, or, when none is, each in turn. */
  pick(): number {
    const i = this.first();
    if (i >= 0) return i;
    const t = this.turn;
    this.turn = (t + 1) % this.list.length;
    return t;
  }

  /** The URLs of endpoint i. */
  url(i: number): EndpointURL {
    return this.list[i]!.url;
  }

  /** The index of the first endpoint in service, -1 if none is. */
  first(): number {
    for (let i = 0; i < this.list.length; i++) if (this.list[i]!.inService) return i;
    return -1;
  }

  /** Records a request to endpoint i that brought IDs. One out of service that answers while none is in service is back in service. */
  succeeded(i: number): void {
    const ep = this.list[i]!;
    ep.fails = 0;
    if (!ep.inService && this.first() < 0) {
      ep.inService = true;
      ep.healthy = 0;
      this.log.info("endpoint back in service: it answered while no endpoint was in service", { endpoint: ep.url.base });
    }
  }

  /**
   * Records a failed request to endpoint i. Returns whether the failure took
   * the endpoint out of service while another is still in service, so the
   * next request can go there at once.
   */
  failed(i: number, err: Error): boolean {
    const ep = this.list[i]!;
    ep.fails++;
    if (!ep.inService || ep.fails < this.threshold) return false;
    ep.inService = false;
    ep.healthy = 0;
    const next = this.first();
    if (next >= 0) {
      this.log.warn("endpoint out of service; failing over", { endpoint: ep.url.base, failures: ep.fails, error: err.message, to: this.list[next]!.url.base });
    } else {
      this.log.warn("endpoint out of service; no endpoint is in service", { endpoint: ep.url.base, failures: ep.fails, error: err.message });
    }
    this.onOut();
    return next >= 0;
  }

  /** The indexes of the endpoints out of service. */
  out(): number[] {
    const o: number[] = [];
    for (let i = 0; i < this.list.length; i++) if (!this.list[i]!.inService) o.push(i);
    return o;
  }

  /** Records a probe of endpoint i. */
  probed(i: number, healthy: boolean): void {
    const ep = this.list[i]!;
    if (ep.inService) return;
    if (!healthy) {
      ep.healthy = 0;
      return;
    }
    ep.healthy++;
    if (ep.healthy >= this.recovery) {
      ep.inService = true;
      ep.fails = 0;
      ep.healthy = 0;
      this.log.info("endpoint back in service", { endpoint: ep.url.base, healthy_probes: this.recovery });
    }
  }

  /** Whether each endpoint is in service. */
  inService(): boolean[] {
    return this.list.map((e) => e.inService);
  }
}
