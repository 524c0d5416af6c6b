"""HTTP/1.1 exchanges on kept-alive connections, one per (scheme, host,
port) and thread, each request bounded by a deadline.

It is a small HTTP/1.1 client written on the socket module rather than
http.client because the refill's cost per request is the client's cost per
1,000 IDs, paid under the GIL beside the callers of next(): http.client
parses every answer's headers with the email package and reads through a
buffered file object, about 80 µs of CPU a request here against about 25 µs
for this one, and more system calls (each one releases the GIL, which the
thread then waits to get back). It speaks only what the client needs: a
request without a body, an answer with Content-Length, chunked, or until the
connection closes, interim 1xx answers skipped, keep-alive unless the server
says close.
"""

from __future__ import annotations

import socket
import ssl
import threading
import time
from typing import Dict, List, Optional, Tuple
from urllib.parse import quote, urlsplit

from .errors import NetworkError

_MAX_HEAD = 64 << 10
_PATH_SAFE = "/%!$&'()*+,;=:@-._~"
_QUERY_SAFE = _PATH_SAFE + "?"
_RECV = 1 << 16


class TooLarge(Exception):
    """A 200 body longer than the caller takes."""


class _Stale(Exception):
    """A kept-alive connection the server had closed: nothing came back."""


class _Protocol(Exception):
    """An answer that is not HTTP/1.x as this client reads it."""


class Target:
    """A URL split once: its connection key, the Host header and its path
    (with the query)."""

    __slots__ = ("key", "host", "port", "path", "https", "host_header")

    def __init__(self, url: str) -> None:
        u = urlsplit(url)
        self.https = u.scheme == "https"
        self.host = u.hostname or ""
        self.port = u.port or (443 if self.https else 80)
        # As Go's URL.String: characters a request line cannot carry
        # (spaces, non-ASCII) percent-encoded, the rest as given.
        self.path = quote(u.path or "/", safe=_PATH_SAFE) + ("?" + quote(u.query, safe=_QUERY_SAFE) if u.query else "")
        self.key = (self.https, self.host, self.port)
        h = "[%s]" % self.host if ":" in self.host else self.host
        self.host_header = h if u.port is None else "%s:%d" % (h, u.port)


class _Conn:
    __slots__ = ("sock", "used", "timeout")

    def __init__(self, sock: socket.socket, timeout: float) -> None:
        self.sock = sock
        self.used = False  # it carried an exchange before: the server may have closed it since
        self.timeout = timeout  # the socket's timeout now


class Connections:
    """The kept-alive connections of one thread. ``close`` may be called from
    another thread (Client.close): it shuts the sockets down, which ends a
    request blocked on one at once."""

    def __init__(self, tls: Optional[ssl.SSLContext]) -> None:
        self._tls = tls
        self._lock = threading.Lock()
        self._conns: Dict[Tuple[bool, str, int], _Conn] = {}
        self._closed = False

    def _dial(self, t: Target, timeout: float) -> _Conn:
        sock = socket.create_connection((t.host, t.port), timeout=timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if t.https:
                ctx = self._tls if self._tls is not None else ssl.create_default_context()
                sock = ctx.wrap_socket(sock, server_hostname=t.host)
        except BaseException:
            sock.close()
            raise
        c = _Conn(sock, timeout)
        with self._lock:
            if self._closed:
                sock.close()
                raise NetworkError("snowfence client: closed")
            self._conns[t.key] = c
        return c

    def drop(self, t: Target) -> None:
        """Closes the connection to ``t``'s host, if any."""
        with self._lock:
            c = self._conns.pop(t.key, None)
        if c is not None:
            c.sock.close()

    def close(self) -> None:
        """Shuts every connection down; later requests fail."""
        with self._lock:
            self._closed = True
            conns = list(self._conns.values())
            self._conns.clear()
        for c in conns:
            try:
                c.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            c.sock.close()

    def exchange(self, t: Target, method: str, path: str, timeout: float, limit_ok: int, limit_other: int) -> Tuple[int, Dict[str, str], bytes]:
        """Sends one request for ``path`` without a body to ``t``'s host and
        returns (status, headers with lower-case names, body). The whole
        exchange, the connection and the body included, ends by ``timeout``
        seconds from now (real time): each wait on the socket is bounded by
        what is left. A 200 body over ``limit_ok`` bytes raises TooLarge;
        another status's body is read up to ``limit_other`` bytes (the
        connection closed if there was more). A kept-alive connection the
        server closed while idle is dialled again once, in the same call.
        Any other failure raises NetworkError, the cause chained, and closes
        the connection."""
        deadline = time.monotonic() + timeout
        req = ("%s %s HTTP/1.1\r\nHost: %s\r\nAccept: application/json\r\nUser-Agent: snowfence-client\r\n%s\r\n"
               % (method, path, t.host_header, "Content-Length: 0\r\n" if method == "POST" else "")).encode("latin-1")
        for again in (True, False):
            try:
                c = self._conns.get(t.key)
                if c is None:
                    c = self._dial(t, timeout)
                try:
                    return self._exchange(c, t, req, deadline, timeout, limit_ok, limit_other)
                except (_Stale, BrokenPipeError, ConnectionResetError):
                    self.drop(t)
                    if again and c.used and time.monotonic() < deadline:
                        continue
                    raise
            except TooLarge:
                self.drop(t)
                raise
            except NetworkError:
                self.drop(t)
                raise
            except Exception as e:  # OSError, ssl errors, _Protocol, ...
                self.drop(t)
                raise NetworkError("snowfence client: %s %s://%s%s: %s" % (
                    method, "https" if t.https else "http", t.host_header, path, _describe(e))) from e
        raise AssertionError("unreachable")

    def _exchange(self, c: _Conn, t: Target, req: bytes, deadline: float, timeout: float, limit_ok: int, limit_other: int) -> Tuple[int, Dict[str, str], bytes]:
        sock = c.sock
        # The socket keeps the request timeout as its timeout: changing it is
        # a system call, made only when less than that is left.
        _bound(c, deadline)
        sock.sendall(req)
        buf = b""
        got_any = False
        while True:  # the head, skipping interim 1xx answers
            end = buf.find(b"\r\n\r\n")
            while end < 0:
                if len(buf) > _MAX_HEAD:
                    raise _Protocol("a response head over %d bytes" % _MAX_HEAD)
                _bound(c, deadline)
                chunk = sock.recv(_RECV)
                if not chunk:
                    if not got_any:
                        raise _Stale()
                    raise _Protocol("the connection closed in the middle of the response head")
                got_any = True
                buf += chunk
                end = buf.find(b"\r\n\r\n", max(0, len(buf) - len(chunk) - 3))
            head, buf = buf[:end], buf[end + 4:]
            lines = head.split(b"\r\n")
            parts = lines[0].split(b" ", 2)
            if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or len(parts[1]) != 3 or not parts[1].isdigit():
                raise _Protocol("not an HTTP/1.x status line: %r" % lines[0][:80])
            status = int(parts[1])
            if 100 <= status < 200 and status != 101:
                continue
            break
        headers: Dict[str, str] = {}
        lengths: List[bytes] = []
        for line in lines[1:]:
            name, colon, value = line.partition(b":")
            if not colon or not name or name != name.strip() or line[:1] in (b" ", b"\t"):
                raise _Protocol("a malformed header line: %r" % line[:80])
            k = name.decode("latin-1").lower()
            v = value.strip(b" \t").decode("latin-1")
            if k == "content-length":
                lengths.append(value.strip(b" \t"))
            headers[k] = v if k not in headers else headers[k] + ", " + v
        keep = parts[0] == b"HTTP/1.1" and "close" not in headers.get("connection", "").lower()
        limit = limit_ok if status == 200 else limit_other
        te = headers.get("transfer-encoding")
        if status in (204, 304):
            body = b""
        elif te is not None:
            if te.lower().replace(" ", "").split(",")[-1] != "chunked":
                raise _Protocol("Transfer-Encoding %r" % te)
            body, buf = self._chunked(c, buf, deadline, limit, status == 200)
        elif lengths:
            if any(x != lengths[0] for x in lengths) or not lengths[0].isdigit() or len(lengths[0]) > 18:
                raise _Protocol("Content-Length %r" % b", ".join(lengths))
            n = int(lengths[0])
            if n > limit:
                if status == 200:
                    raise TooLarge(n)
                keep = False
                n = limit
            while len(buf) < n:
                _bound(c, deadline)
                chunk = sock.recv(max(_RECV, n - len(buf)))
                if not chunk:
                    raise _Protocol("the answer was cut short: %d of %d bytes of the body came" % (len(buf), n))
                buf += chunk
            body, buf = buf[:n], buf[n:]
        else:
            keep = False
            while len(buf) <= limit:
                _bound(c, deadline)
                chunk = sock.recv(_RECV)
                if not chunk:
                    break
                buf += chunk
            if len(buf) > limit:
                if status == 200:
                    raise TooLarge(len(buf))
                buf = buf[:limit]
            body, buf = buf, b""
        if buf or not keep:
            # Bytes nobody asked for, or the server closes: no reuse.
            self.drop(t)
        else:
            c.used = True
            if c.timeout != timeout:
                sock.settimeout(timeout)
                c.timeout = timeout
        return status, headers, body

    def _chunked(self, c: _Conn, buf: bytes, deadline: float, limit: int, strict: bool) -> Tuple[bytes, bytes]:
        """Reads a chunked body from ``buf`` and the socket; returns (body,
        what is left of ``buf``)."""
        sock = c.sock
        out: List[bytes] = []
        size = 0

        def more(buf: bytes) -> bytes:
            _bound(c, deadline)
            chunk = sock.recv(_RECV)
            if not chunk:
                raise _Protocol("the answer was cut short in a chunk")
            return buf + chunk

        while True:
            i = buf.find(b"\r\n")
            while i < 0:
                if len(buf) > _MAX_HEAD:
                    raise _Protocol("a chunk size line over %d bytes" % _MAX_HEAD)
                buf = more(buf)
                i = buf.find(b"\r\n")
            line = buf[:i].split(b";", 1)[0].strip(b" \t")
            buf = buf[i + 2:]
            if not line or len(line) > 15 or any(ch not in b"0123456789abcdefABCDEF" for ch in line):
                raise _Protocol("a malformed chunk size %r" % line[:20])
            n = int(line, 16)
            if n == 0:
                # Trailers, up to the empty line.
                while True:
                    i = buf.find(b"\r\n")
                    while i < 0:
                        buf = more(buf)
                        i = buf.find(b"\r\n")
                    empty = i == 0
                    buf = buf[i + 2:]
                    if empty:
                        return b"".join(out), buf
            if size + n > limit:
                if strict:
                    raise TooLarge(size + n)
                raise _Protocol("an error body over %d bytes" % limit)
            while len(buf) < n + 2:
                buf = more(buf)
            if buf[n:n + 2] != b"\r\n":
                raise _Protocol("a chunk not followed by CRLF")
            out.append(buf[:n])
            size += n
            buf = buf[n + 2:]


def _bound(c: _Conn, deadline: float) -> None:
    """Raises socket.timeout once ``deadline`` has passed; lowers the socket's
    timeout to what is left when that is less than it."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise socket.timeout("timed out")
    if left < c.timeout:
        c.sock.settimeout(left)
        c.timeout = left


def _describe(e: BaseException) -> str:
    if isinstance(e, socket.timeout):
        return "no answer within the request timeout (Config.request_timeout)"
    if isinstance(e, _Stale):
        return "the connection closed before an answer came"
    if isinstance(e, _Protocol):
        return "%s; no IDs taken from it" % e
    return "%s: %s" % (type(e).__name__, e)
