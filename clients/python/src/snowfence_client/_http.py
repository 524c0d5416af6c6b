"""HTTP/1.1 exchanges on kept-alive connections, one per (scheme, host,
port) and thread, each request bounded by a deadline."""

from __future__ import annotations

import http.client
import socket
import ssl
import threading
import time
from typing import Dict, Optional, Tuple
from urllib.parse import urlsplit

from .errors import NetworkError

_HEADERS = {"Accept": "application/json", "User-Agent": "snowfence-client"}


class TooLarge(Exception):
    """A body longer than the caller takes."""


class Target:
    """A URL split once: its connection key and its path (with the query)."""

    __slots__ = ("key", "host", "port", "path", "https")

    def __init__(self, url: str) -> None:
        u = urlsplit(url)
        self.https = u.scheme == "https"
        self.host = u.hostname or ""
        self.port = u.port or (443 if self.https else 80)
        self.path = (u.path or "/") + ("?" + u.query if u.query else "")
        self.key = (self.https, self.host, self.port)


class Connections:
    """The kept-alive connections of one thread. Close may be called from
    another thread (Client.close): it shuts the sockets down, which ends a
    request blocked on one at once."""

    def __init__(self, tls: Optional[ssl.SSLContext]) -> None:
        self._tls = tls
        self._lock = threading.Lock()
        self._conns: Dict[Tuple[bool, str, int], http.client.HTTPConnection] = {}
        self._used: Dict[Tuple[bool, str, int], bool] = {}
        self._closed = False

    def _get(self, t: Target, timeout: float) -> http.client.HTTPConnection:
        c = self._conns.get(t.key)
        if c is None:
            if t.https:
                ctx = self._tls if self._tls is not None else ssl.create_default_context()
                c = http.client.HTTPSConnection(t.host, t.port, timeout=timeout, context=ctx)
            else:
                c = http.client.HTTPConnection(t.host, t.port, timeout=timeout)
            with self._lock:
                if self._closed:
                    raise NetworkError("snowfence client: closed")
                self._conns[t.key] = c
            self._used[t.key] = False
        return c

    def drop(self, t: Target) -> None:
        """Closes the connection to ``t``'s host, if any."""
        with self._lock:
            c = self._conns.pop(t.key, None)
        self._used.pop(t.key, None)
        if c is not None:
            c.close()

    def close(self) -> None:
        """Shuts every connection down; later requests fail."""
        with self._lock:
            self._closed = True
            conns = list(self._conns.values())
            self._conns.clear()
        for c in conns:
            s = c.sock
            if s is not None:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            c.close()

    def exchange(self, t: Target, method: str, path: str, timeout: float, limit_ok: int, limit_other: int) -> Tuple[int, http.client.HTTPMessage, bytes]:
        """Sends one request for ``path`` without a body to ``t``'s host and
        returns (status, headers, body). The whole exchange, the connection
        and the body included, ends by ``timeout`` seconds from now (real
        time): each wait on the socket is bounded by what is left. A 200
        body over ``limit_ok`` bytes raises TooLarge; another status's body
        is read up to ``limit_other`` bytes (the connection then closed if
        there was more). A connection kept alive that the server closed
        while idle is dialled again once, in the same call. Any failure
        raises NetworkError, with the cause chained, and closes the
        connection."""
        deadline = time.monotonic() + timeout
        for again in (True, False):
            c = self._get(t, timeout)
            reused = self._used.get(t.key, False)
            try:
                return self._exchange(c, t, method, path, deadline, limit_ok, limit_other)
            except TooLarge:
                self.drop(t)
                raise
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as e:
                self.drop(t)
                if again and reused and time.monotonic() < deadline:
                    continue
                raise NetworkError("snowfence client: %s %s%s: %s" % (method, _origin(t), path, _describe(e))) from e
            except Exception as e:  # OSError, HTTPException, ssl errors, ...
                self.drop(t)
                raise NetworkError("snowfence client: %s %s%s: %s" % (method, _origin(t), path, _describe(e))) from e
        raise AssertionError("unreachable")

    def _exchange(self, c: http.client.HTTPConnection, t: Target, method: str, path: str, deadline: float, limit_ok: int, limit_other: int) -> Tuple[int, http.client.HTTPMessage, bytes]:
        left = deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout("timed out")
        c.timeout = left
        if c.sock is not None:
            c.sock.settimeout(left)
        c.request(method, path, headers=_HEADERS)
        _bound(c, deadline)
        r = c.getresponse()
        length = r.length
        whole = r.status == 200
        limit = limit_ok if whole else limit_other
        if length is not None and length > limit and whole:
            raise TooLarge(length)
        parts = []
        got = 0
        while True:
            _bound(c, deadline)
            want = limit + 1 - got if length is None else min(length - got, limit + 1 - got)
            if want <= 0:
                break
            chunk = r.read1(want)
            if not chunk:
                break
            parts.append(chunk)
            got += len(chunk)
        body = parts[0] if len(parts) == 1 else b"".join(parts)
        if length is not None and got < length and got <= limit:
            raise http.client.IncompleteRead(body, length - got)
        if got > limit:
            if whole:
                raise TooLarge(got)
            self.drop(t)
            body = body[:limit]
        elif r.will_close:
            self.drop(t)
        else:
            # Read to its end: closing the response leaves the connection
            # ready for the next request.
            r.close()
            self._used[t.key] = True
        return r.status, r.msg, body


def _bound(c: http.client.HTTPConnection, deadline: float) -> None:
    left = deadline - time.monotonic()
    if left <= 0:
        raise socket.timeout("timed out")
    if c.sock is not None:
        c.sock.settimeout(left)


def _origin(t: Target) -> str:
    return "%s://%s:%d" % ("https" if t.https else "http", t.host, t.port)


def _describe(e: BaseException) -> str:
    if isinstance(e, socket.timeout):
        return "no answer within the request timeout (Config.request_timeout)"
    if isinstance(e, http.client.IncompleteRead):
        return "the answer was cut short (%d bytes missing); no IDs taken from it" % (e.expected or 0)
    return "%s: %s" % (type(e).__name__, e)
