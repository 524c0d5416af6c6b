"""The client's HTTP/1.1 exchange (_http.py) against a raw socket server:
the framings a server or proxy may use, and the answers it must refuse."""

from __future__ import annotations

import socket
import threading
import time
import unittest
from typing import List

from helpers import sf  # noqa: F401  (puts src on the path)
from snowfence_client._http import Connections, Target, TooLarge
from snowfence_client.errors import NetworkError


class RawServer:
    """Answers each request with the next scripted bytes (the last repeats);
    closes the connection after an answer when told to."""

    def __init__(self, test: unittest.TestCase, answers: List[bytes], close_after: bool = False) -> None:
        self.answers = answers
        self.close_after = close_after
        self.requests: List[bytes] = []
        self.conns = 0
        self.lock = threading.Lock()
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(8)
        self.url = "http://127.0.0.1:%d" % self.ls.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()
        test.addCleanup(self.ls.close)

    def _accept(self) -> None:
        while True:
            try:
                s, _ = self.ls.accept()
            except OSError:
                return
            with self.lock:
                self.conns += 1
            threading.Thread(target=self._serve, args=(s,), daemon=True).start()

    def _serve(self, s: socket.socket) -> None:
        buf = b""
        with s:
            while True:
                while b"\r\n\r\n" not in buf:
                    try:
                        chunk = s.recv(4096)
                    except OSError:
                        return
                    if not chunk:
                        return
                    buf += chunk
                head, buf = buf.split(b"\r\n\r\n", 1)
                with self.lock:
                    self.requests.append(head)
                    a = self.answers[min(len(self.requests) - 1, len(self.answers) - 1)]
                try:
                    s.sendall(a)
                except OSError:
                    return
                if self.close_after:
                    return


BODY = b'{"ids":["1","2"]}'
OK = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 17\r\n\r\n" + BODY


class TestExchange(unittest.TestCase):
    def ex(self, srv: RawServer, conns: Connections = None, timeout: float = 2.0):
        conns = conns or Connections(None)
        self.addCleanup(conns.close)
        t = Target(srv.url + "/v1/ids?count=")
        return conns.exchange(t, "POST", t.path + "2", timeout, 64 << 10, 4 << 10)

    def test_content_length_and_keep_alive(self):
        srv = RawServer(self, [OK])
        conns = Connections(None)
        for _ in range(3):
            status, headers, body = self.ex(srv, conns)
            self.assertEqual((status, headers["content-type"], body), (200, "application/json", BODY))
        self.assertEqual(srv.conns, 1, "the connection was not kept alive")
        req = srv.requests[0].split(b"\r\n")
        self.assertEqual(req[0], b"POST /v1/ids?count=2 HTTP/1.1")
        self.assertIn(b"Content-Length: 0", req)
        self.assertIn(b"Host: " + srv.url[len("http://"):].encode(), req)

    def test_chunked(self):
        chunked = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                   b"5;ext=1\r\n" + BODY[:5] + b"\r\nc\r\n" + BODY[5:] + b"\r\n0\r\nX-Trailer: y\r\n\r\n")
        srv = RawServer(self, [chunked])
        conns = Connections(None)
        for _ in range(2):
            self.assertEqual(self.ex(srv, conns)[2], BODY)
        self.assertEqual(srv.conns, 1)

    def test_interim_answer_skipped(self):
        srv = RawServer(self, [b"HTTP/1.1 100 Continue\r\n\r\n" + OK])
        self.assertEqual(self.ex(srv)[:1], (200,))

    def test_until_close_and_connection_close(self):
        srv = RawServer(self, [b"HTTP/1.0 200 OK\r\n\r\n" + BODY], close_after=True)
        self.assertEqual(self.ex(srv)[2], BODY)
        srv2 = RawServer(self, [OK.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n", 1)], close_after=True)
        conns = Connections(None)
        self.assertEqual(self.ex(srv2, conns)[2], BODY)
        self.assertEqual(self.ex(srv2, conns)[2], BODY)
        self.assertEqual(srv2.conns, 2, "a connection the server closes is not reused")

    def test_stale_connection_redialled_once(self):
        # The server closes each connection after its answer without saying
        # so: the next request on it finds it closed and is sent again on a
        # new one, in the same call.
        srv = RawServer(self, [OK], close_after=True)
        conns = Connections(None)
        self.assertEqual(self.ex(srv, conns)[2], BODY)
        self.assertEqual(self.ex(srv, conns)[2], BODY)
        self.assertEqual(srv.conns, 2)

    def test_refused(self):
        bad = {
            "truncated body": b"HTTP/1.1 200 OK\r\nContent-Length: 30\r\n\r\n" + BODY,
            "not HTTP": b"SSH-2.0-OpenSSH\r\n\r\n",
            "bad status": b"HTTP/1.1 2000 OK\r\n\r\n",
            "two lengths": b"HTTP/1.1 200 OK\r\nContent-Length: 17\r\nContent-Length: 18\r\n\r\n" + BODY,
            "signed length": b"HTTP/1.1 200 OK\r\nContent-Length: +17\r\n\r\n" + BODY,
            "folded header": b"HTTP/1.1 200 OK\r\nX: a\r\n b\r\nContent-Length: 17\r\n\r\n" + BODY,
            "bad chunk size": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            "chunk cut short": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n11\r\n" + BODY[:5],
            "other encoding": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
            "closed at once": b"",
        }
        for name, answer in bad.items():
            with self.subTest(name):
                srv = RawServer(self, [answer], close_after=True)
                with self.assertRaises(NetworkError):
                    self.ex(srv)

    def test_too_large(self):
        big = b"HTTP/1.1 200 OK\r\nContent-Length: 70000\r\n\r\n"
        with self.assertRaises(TooLarge):
            self.ex(RawServer(self, [big]))
        chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n11170\r\n" + b" " * 70000 + b"\r\n0\r\n\r\n"
        with self.assertRaises(TooLarge):
            self.ex(RawServer(self, [chunked]))
        # An error body over its limit is cut, not refused.
        err = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 9000\r\n\r\n" + b"x" * 9000
        status, _, body = self.ex(RawServer(self, [err]))
        self.assertEqual((status, len(body)), (503, 4 << 10))

    def test_timeout_bounds_the_whole_exchange(self):
        # A server that sends the head late, then a byte of the body every
        # 0.3 s, never the whole body: the exchange ends by its timeout
        # (1 s), not by the socket's timeout counted again from each byte,
        # which would let it run as long as the server drips (9 s). The
        # bound asserted, 5 s, sits far from both, so a loaded machine
        # cannot fail a sound client (real time: this is the network's own
        # timer).
        class Drip(RawServer):
            def _serve(self, s):
                with s:
                    s.recv(4096)
                    time.sleep(0.3)
                    try:
                        s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 40\r\n\r\n{")
                        for _ in range(30):
                            time.sleep(0.3)
                            s.sendall(b" ")
                    except OSError:
                        pass  # the client hung up, as it should

        srv = Drip(self, [])
        t0 = time.monotonic()
        with self.assertRaises(NetworkError) as cm:
            self.ex(srv, timeout=1.0)
        self.assertLess(time.monotonic() - t0, 5.0, "the exchange outlived its timeout")
        self.assertIn("request timeout", str(cm.exception))

    def test_target_paths(self):
        # As Go's URL.String: a base path with a space or non-ASCII is
        # percent-encoded in the request line; the Host header keeps the
        # port as given and brackets an IPv6 address.
        t = Target("http://ids.example/a b/\u00fc/v1/ids?count=")
        self.assertEqual((t.path, t.host_header, t.port), ("/a%20b/%C3%BC/v1/ids?count=", "ids.example", 80))
        t = Target("https://[::1]:8443/x%20y/healthz?a=b&c=d")
        self.assertEqual((t.path, t.host_header, t.port, t.https), ("/x%20y/healthz?a=b&c=d", "[::1]:8443", 8443, True))

    def test_closed_connections_refuse(self):
        srv = RawServer(self, [OK])
        conns = Connections(None)
        self.ex(srv, conns)
        conns.close()
        with self.assertRaises(NetworkError):
            self.ex(srv, conns)


if __name__ == "__main__":
    unittest.main()
