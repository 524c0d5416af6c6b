"""Fake servers and helpers for the client's tests."""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, List, Optional
from urllib.parse import parse_qs, urlsplit

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src"))

import snowfence_client as sf  # noqa: E402


def batch_body(ids: List[int]) -> bytes:
    """The batch body of ``ids`` as the server writes it."""
    return ('{"ids":[' + ",".join('"%d"' % i for i in ids) + "]}").encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.server.owner._serve(self)  # type: ignore[attr-defined]

    def do_POST(self) -> None:
        self.server.owner._serve(self)  # type: ignore[attr-defined]


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that hung up (a timeout, close) is expected here


Script = Callable[["Req"], None]


class Req:
    """One request to a Scripted server and the means to answer it."""

    def __init__(self, h: BaseHTTPRequestHandler, owner: "Scripted") -> None:
        self.h = h
        self.owner = owner
        u = urlsplit(h.path)
        self.path = u.path
        self.query = u.query
        q = parse_qs(u.query)
        self.count = int(q["count"][0]) if "count" in q else -1

    def send(self, status: int, body: bytes, headers: Optional[dict] = None, content_type: str = "application/json") -> None:
        h = self.h
        h.send_response(status)
        if content_type:
            h.send_header("Content-Type", content_type)
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(body)))
        # Headers and body in one write: two small writes meet Nagle's
        # algorithm and the client's delayed ACK (40 ms a request).
        h._headers_buffer.append(b"\r\n")  # type: ignore[attr-defined]
        data = b"".join(h._headers_buffer) + body  # type: ignore[attr-defined]
        h._headers_buffer = []  # type: ignore[attr-defined]
        h.wfile.write(data)
        h.wfile.flush()

    def ok(self) -> List[int]:
        """Answers with a batch of the count asked for, from the server's counter."""
        ids = self.owner.take(self.count)
        self.send(200, batch_body(ids))
        return ids

    def error(self, status: int, retry_after: str = "", code: str = "fenced") -> None:
        hs = {"Retry-After": retry_after} if retry_after else {}
        self.send(status, json.dumps({"error": {"code": code, "message": "test refusal", "reason": "test"}}).encode(), hs)


class Scripted:
    """A fake server whose mint answers follow a script: each request takes
    the next function (the last repeats). /healthz answers ``health``. It
    counts requests and can notify a queue of each."""

    def __init__(self, *script: Script, health: int = 200) -> None:
        self.script = list(script) or [lambda r: r.ok()]
        self.health = health
        self.lock = threading.Lock()
        self.served = 0
        self.probes = 0
        self.next_id = 0
        self.queries: List[str] = []
        self.events: List[tuple] = []  # (is_probe, status-ish)
        self.cond = threading.Condition(self.lock)
        self.srv = _Server(("127.0.0.1", 0), Handler)
        self.srv.daemon_threads = True
        self.srv.owner = self  # type: ignore[attr-defined]
        self.url = "http://127.0.0.1:%d" % self.srv.server_address[1]
        self.thread = threading.Thread(target=self.srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def take(self, n: int) -> List[int]:
        with self.lock:
            ids = list(range(self.next_id + 1, self.next_id + n + 1))
            self.next_id += n
            return ids

    def _serve(self, h: BaseHTTPRequestHandler) -> None:
        r = Req(h, self)
        if r.path == "/healthz":
            with self.cond:
                self.probes += 1
                status = self.health
                self.events.append(("probe", status))
                self.cond.notify_all()
            r.send(status, b"ok\n", content_type="text/plain")
            return
        with self.cond:
            f = self.script[min(self.served, len(self.script) - 1)]
            self.served += 1
            self.queries.append(r.query)
            self.cond.notify_all()
        f(r)

    def count(self) -> int:
        with self.lock:
            return self.served

    def wait_requests(self, n: int, timeout: float = 10.0) -> None:
        """Waits until the server has seen ``n`` mint requests."""
        end = time.monotonic() + timeout
        with self.cond:
            while self.served < n:
                left = end - time.monotonic()
                if left <= 0:
                    raise AssertionError("the server saw %d requests, want %d" % (self.served, n))
                self.cond.wait(left)

    def close(self) -> None:
        self.srv.shutdown()
        self.srv.server_close()


def dead_url() -> str:
    """The address of a port nothing listens on: connections are refused."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return "http://127.0.0.1:%d" % port


class SleepLog(sf.FakeClock):
    """A clock whose sleep records its duration and moves the clock on at
    once, except waits of an hour or more (the prober's interval in these
    tests), which block as FakeClock's do: the test reads the refill's waits."""

    def __init__(self) -> None:
        super().__init__()
        self.waits: List[float] = []
        self.during: Optional[Callable[[], None]] = None

    def sleep(self, seconds: float, stop: threading.Event) -> bool:
        if seconds >= 3600:
            return super().sleep(seconds, stop)
        self.waits.append(seconds)
        if self.during is not None:
            self.during()
        self.advance(seconds)
        return not stop.is_set()


class RecordingClock(sf.FakeClock):
    """A FakeClock that records the duration of every sleep."""

    def __init__(self) -> None:
        super().__init__()
        self.slept: List[float] = []

    def sleep(self, seconds: float, stop: threading.Event) -> bool:
        self.slept.append(seconds)
        return super().sleep(seconds, stop)
