"""Configurations the client refuses at creation (client/client_test.go's
TestConfigErrors), and the defaults."""

from __future__ import annotations

import ssl
import unittest

from helpers import sf

EP = ["http://127.0.0.1:1"]

BAD = [
    ("no endpoints", dict(endpoints=[])),
    ("endpoints as one string", dict(endpoints="http://127.0.0.1:1")),
    ("relative endpoint", dict(endpoints=["ids.example"])),
    ("other scheme", dict(endpoints=["ftp://ids.example"])),
    ("no host", dict(endpoints=["http://"])),
    ("bad port", dict(endpoints=["http://ids.example:port"])),
    ("endpoint with a query", dict(endpoints=["http://ids.example/?a=1"])),
    ("endpoint with a fragment", dict(endpoints=["http://ids.example/#a"])),
    ("health URLs of another length", dict(endpoints=EP, health_urls=["http://a/healthz", "http://b/healthz"])),
    ("bad health URL", dict(endpoints=EP, health_urls=["/healthz"])),
    ("tls not a context", dict(endpoints=EP, tls="ca.pem")),
    ("negative max_age", dict(endpoints=EP, max_age=-1)),
    ("NaN max_age", dict(endpoints=EP, max_age=float("nan"))),
    ("max_age as text", dict(endpoints=EP, max_age="1s")),
    ("refill_period not below max_age", dict(endpoints=EP, max_age=1, refill_period=1)),
    ("max_backoff below base_backoff", dict(endpoints=EP, base_backoff=1, max_backoff=0.001)),
    ("negative min_refill", dict(endpoints=EP, min_refill=-1)),
    ("fractional min_refill", dict(endpoints=EP, min_refill=1.5)),
    ("max_buffer below min_refill", dict(endpoints=EP, min_refill=100, max_buffer=10)),
    ("huge max_buffer", dict(endpoints=EP, max_buffer=1 << 30)),
    ("low_water not below max_buffer", dict(endpoints=EP, max_buffer=100, low_water=100)),
    ("negative failure_threshold", dict(endpoints=EP, failure_threshold=-3)),
    ("bad schedule", dict(endpoints=EP, schedule="v9")),
    ("empty schedule", dict(endpoints=EP, schedule="")),
    ("unknown field", dict(endpoints=EP, max_ages=1)),
]


class TestConfig(unittest.TestCase):
    def test_refused(self):
        for name, fields in BAD:
            with self.subTest(name):
                with self.assertRaises(sf.InvalidConfigError) as cm:
                    sf.Client(**fields)
                self.assertIn("snowfence client", str(cm.exception))

    def test_config_object_and_defaults(self):
        c = sf.Client(sf.Config(endpoints=["http://127.0.0.1:1/"]))
        self.addCleanup(c.close)
        s = c._s
        self.assertEqual(s.endpoints, ["http://127.0.0.1:1"])
        self.assertEqual(s.health_urls, ["http://127.0.0.1:1/healthz"])
        self.assertEqual(
            (s.max_age, s.refill_period, s.min_refill, s.max_buffer, s.request_timeout, s.max_attempts, s.base_backoff,
             s.max_backoff, s.max_retry_after, s.failure_threshold, s.recovery_probes, s.probe_interval),
            (1.0, 0.25, 8, 65536, 2.0, 8, 0.05, 2.0, 10.0, 3, 3, 1.0))
        self.assertEqual(c._low, 4, "low water: half the first refill")
        # Zero is the default too, as in the Go client.
        c2 = sf.Client(endpoints=EP, max_age=0, min_refill=0)
        self.addCleanup(c2.close)
        self.assertEqual((c2._s.max_age, c2._s.min_refill), (1.0, 8))
        with self.assertRaises(sf.InvalidConfigError):
            sf.Client(sf.Config(endpoints=EP), max_age=1)

    def test_tls_context(self):
        ctx = sf.tls_context()
        self.assertIsInstance(ctx, ssl.SSLContext)
        self.assertEqual(ctx.verify_mode, ssl.CERT_REQUIRED)
        with self.assertRaises(OSError):
            sf.tls_context(ca_file="/nonexistent/ca.pem")


if __name__ == "__main__":
    unittest.main()
