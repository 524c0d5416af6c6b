"""The conformance runner of the Python client (clients/conformance/PROTOCOL.md):
one JSON request per line on stdin, one JSON answer per line on stdout. It
holds no logic beyond turning a request into a call on the library."""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any, Dict, List, Optional

import snowfence_client as sf

_DURATIONS = {
    "request_timeout_ms": "request_timeout", "max_age_ms": "max_age", "refill_period_ms": "refill_period",
    "base_backoff_ms": "base_backoff", "max_backoff_ms": "max_backoff", "max_retry_after_ms": "max_retry_after",
    "probe_interval_ms": "probe_interval",
}
_COUNTS = ("min_refill", "max_buffer", "low_water", "max_attempts", "failure_threshold", "recovery_probes")


class BadRequest(Exception):
    pass


def kind_of(e: BaseException) -> str:
    for cls, kind in (
        (sf.UnavailableError, "unavailable"), (sf.RejectedError, "rejected"), (sf.ClosedError, "closed"),
        (sf.InvalidConfigError, "invalid_config"), (sf.InvalidCountError, "invalid_count"),
        (sf.InvalidScheduleError, "invalid_schedule"), (sf.InvalidIdError, "invalid_id"), (BadRequest, "bad_request"),
    ):
        if isinstance(e, cls):
            return kind
    return "other"


def config_of(c: Dict[str, Any]) -> sf.Config:
    if not isinstance(c, dict):
        raise BadRequest("config is not an object")
    cfg = sf.Config(endpoints=c.get("endpoints", []))
    for key, value in c.items():
        if key in ("endpoints",):
            continue
        if key == "health_urls":
            cfg.health_urls = value
        elif key in _DURATIONS:
            # Milliseconds to seconds; a negative value stays negative, for
            # the library to refuse.
            cfg.__dict__[_DURATIONS[key]] = value / 1000.0 if isinstance(value, (int, float)) else value
        elif key in _COUNTS:
            cfg.__dict__[key] = value
        elif key == "schedule":
            cfg.schedule = value
        elif key == "tls":
            if value is not None:
                cfg.tls = sf.tls_context(value.get("ca_file"), value.get("cert_file"), value.get("key_file"))
        else:
            raise BadRequest("unknown config key %r" % key)
    return cfg


class Runner:
    def __init__(self) -> None:
        self.client: Optional[sf.Client] = None

    def need(self) -> sf.Client:
        if self.client is None:
            raise BadRequest("no client is open; send op open first")
        return self.client

    def handle(self, req: Dict[str, Any]) -> Dict[str, Any]:
        op = req.get("op")
        if op == "open":
            if self.client is not None:
                self.client.close()
                self.client = None
            self.client = sf.Client(config_of(req.get("config", {})))
            return {"ok": True}
        if op == "next":
            c = self.need()
            ids: List[int] = []
            try:
                for _ in range(int(req["count"])):
                    ids.append(c.next())
            except sf.SnowfenceError as e:
                return {"ok": False, "error": {"kind": kind_of(e), "message": str(e)}, "ids": [str(i) for i in ids]}
            return {"ok": True, "ids": [str(i) for i in ids]}
        if op == "next_n":
            return {"ok": True, "ids": [str(i) for i in self.need().next_n(req["n"])]}
        if op == "next_concurrent":
            return self.concurrent(self.need(), int(req["threads"]), int(req["count"]))
        if op == "run":
            return self.run(self.need(), req["ms"] / 1000.0)
        if op == "decode":
            return {"ok": True, "decoded": sf.decode(req["id"], req["schedule"]).to_dict()}
        if op == "close":
            if self.client is not None:
                self.client.close()
            return {"ok": True}
        raise BadRequest("unknown op %r" % (op,))

    def concurrent(self, c: sf.Client, threads: int, count: int) -> Dict[str, Any]:
        got: List[List[int]] = [[] for _ in range(threads)]
        errs: List[BaseException] = []

        def work(k: int) -> None:
            mine = got[k]
            try:
                for _ in range(count):
                    mine.append(c.next())
            except BaseException as e:
                errs.append(e)

        ts = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        if errs:
            raise errs[0]
        return {"ok": True, "ids": [str(i) for ids in got for i in ids]}

    def run(self, c: sf.Client, seconds: float) -> Dict[str, Any]:
        nxt = c.next
        mono = time.monotonic
        start = time.monotonic_ns()
        end = mono() + seconds
        first = prev = nxt()
        count, not_increasing = 1, 0
        while mono() < end:
            for _ in range(1024):
                i = nxt()
                if i <= prev:
                    not_increasing += 1
                prev = i
            count += 1024
        return {"ok": True, "count": count, "first": str(first), "last": str(prev),
                "not_increasing": not_increasing, "elapsed_ns": time.monotonic_ns() - start}


def main() -> int:
    r = Runner()
    out = sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        t0 = time.monotonic()
        try:
            req = json.loads(line)
            if not isinstance(req, dict):
                raise BadRequest("a request is a JSON object")
            ans = r.handle(req)
        except (sf.SnowfenceError, BadRequest) as e:
            ans = {"ok": False, "error": {"kind": kind_of(e), "message": str(e)}}
        except (ValueError, KeyError, TypeError) as e:
            ans = {"ok": False, "error": {"kind": "bad_request", "message": "%s: %s" % (type(e).__name__, e)}}
        except Exception as e:
            ans = {"ok": False, "error": {"kind": "other", "message": "%s: %s" % (type(e).__name__, e)}}
        ans["elapsed_ms"] = (time.monotonic() - t0) * 1000.0
        out.write(json.dumps(ans) + "\n")
        out.flush()
    if r.client is not None:
        r.client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
