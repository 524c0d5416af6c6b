"""The configuration of a Client, its defaults, and its checks
(client/config.go)."""

from __future__ import annotations

import logging
import math
import ssl
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Union
from urllib.parse import urlsplit

from .clock import Clock
from .decode import Schedule
from .errors import InvalidConfigError, InvalidScheduleError

DEFAULT_MAX_AGE = 1.0
"""How long (seconds) a buffered ID may wait to be handed out, counted from
the moment the request that fetched it was sent."""
DEFAULT_MIN_REFILL = 8
"""The smallest refill: a caller taking one ID now and then gets a few more
with it, so a short burst needs one round trip, not one per ID."""
DEFAULT_MAX_BUFFER = 1 << 16
"""The most IDs a Client holds."""
DEFAULT_REQUEST_TIMEOUT = 2.0
"""The bound (seconds) on one request to an endpoint, its body included."""
DEFAULT_MAX_ATTEMPTS = 8
"""How many requests one refill sends before it gives up with UnavailableError."""
DEFAULT_BASE_BACKOFF = 0.05
"""The first wait (seconds) of the jittered exponential backoff."""
DEFAULT_MAX_BACKOFF = 2.0
"""The longest wait (seconds) of the backoff."""
DEFAULT_MAX_RETRY_AFTER = 10.0
"""The longest Retry-After (seconds) the client honours; a longer one is cut to it."""
DEFAULT_FAILURE_THRESHOLD = 3
"""How many consecutive failed requests take an endpoint out of service."""
DEFAULT_RECOVERY_PROBES = 3
"""How many consecutive healthy probes put an endpoint back in service."""
DEFAULT_PROBE_INTERVAL = 1.0
"""How often (seconds) an endpoint out of service is probed."""
MAX_BATCH = 1000
"""The most IDs one request asks for, and the most next_n takes."""

_MAX_MAX_BUFFER = 1 << 26


@dataclass
class Config:
    """Configures a Client. Every field but ``endpoints`` may be left as it
    is; a field left ``None`` (or set to 0, as in the Go client) takes its
    default. Durations are seconds (floats); negative numbers are refused."""

    endpoints: Sequence[str] = field(default_factory=list)
    """The base URLs of the servers, in order of preference: the local
    region first, backups after. Required; each an absolute http or https URL
    without a query or fragment; a trailing slash is ignored."""
    health_urls: Optional[Sequence[str]] = None
    """The URLs probed for each endpoint, in the order of ``endpoints``.
    None means each endpoint's /healthz."""
    tls: Optional[ssl.SSLContext] = None
    """The TLS configuration of https endpoints: for mutual TLS, a context
    with the client certificate (load_cert_chain) and the CA
    (load_verify_locations); :func:`tls_context` builds one from PEM files.
    None means ssl.create_default_context()."""
    request_timeout: Optional[float] = None
    """Bounds one request, its body included, in real time. Default 2 s."""
    max_age: Optional[float] = None
    """How long a buffered ID may wait: it is handed out only while less
    than max_age has passed since the request that fetched it was sent;
    older IDs are dropped, never handed out. Default 1 s. An ID handed out is
    up to max_age older than the moment next() returned it: a caller reading
    time from IDs or sorting records by ID sees that much disorder.
    Uniqueness does not depend on it."""
    refill_period: Optional[float] = None
    """The time one refill should last at the caller's observed rate: each
    refill asks for about rate × refill_period IDs, at most twice and at
    least half the previous refill, within min_refill and the room in the
    buffer. Default max_age / 4; must be less than max_age."""
    min_refill: Optional[int] = None
    """The smallest refill. Default 8."""
    max_buffer: Optional[int] = None
    """The most IDs the client holds. Default 65,536; at least min_refill."""
    low_water: Optional[int] = None
    """The number of buffered IDs at or below which next() starts a refill
    in the background. Default (None or 0): half the current refill size."""
    max_attempts: Optional[int] = None
    """How many requests a refill sends (retries and failovers included)
    before it gives up with UnavailableError. Default 8."""
    base_backoff: Optional[float] = None
    """The wait after a failed attempt is between half and all of
    base_backoff·2^k, at most max_backoff, where k counts the failures since
    the refill last failed over from an endpoint it had not failed over from
    before. Default 0.05 s."""
    max_backoff: Optional[float] = None
    """See base_backoff. Default 2 s."""
    max_retry_after: Optional[float] = None
    """Caps the Retry-After honoured after a 503 or 429. Default 10 s."""
    failure_threshold: Optional[int] = None
    """How many consecutive failed requests (5xx, connection errors,
    timeouts, malformed answers; not 429) take an endpoint out of service.
    Default 3."""
    recovery_probes: Optional[int] = None
    """How many consecutive 200s from an endpoint's health URL put it back in
    service. Default 3."""
    probe_interval: Optional[float] = None
    """How often endpoints out of service are probed. Default 1 s."""
    schedule: Union[Schedule, str, None] = None
    """If set (a Schedule or its text, e.g. "v1"), the client refuses an
    answer that repeats IDs it received before (a replayed response): it
    remembers the last ID received from each (layout, region, machine) and
    refuses an answer whose IDs of one of them do not start above it. None:
    no such check; the client trusts the servers never to answer the same
    IDs twice."""
    logger: Optional[logging.Logger] = None
    """Receives the client's few log lines (endpoints taken out and back,
    refills that failed). None means the logger "snowfence_client"."""
    clock: Optional[Clock] = None
    """Measures the age of buffered IDs and the consumption rate, and times
    the backoff and the probes. None means the system's clocks."""


def tls_context(ca_file: Optional[str] = None, cert_file: Optional[str] = None, key_file: Optional[str] = None) -> ssl.SSLContext:
    """Returns a TLS client context for ``Config.tls``: verifying servers
    against the CA in ``ca_file`` (PEM; None: the system's CAs) and, with
    ``cert_file`` (and ``key_file``, if the key is not in it), presenting that
    client certificate for mutual TLS."""
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=ca_file)
    if cert_file:
        ctx.load_cert_chain(cert_file, key_file)
    return ctx


class Settings:
    """A Config with its defaults filled in and its endpoints parsed."""

    def __init__(self) -> None:
        self.endpoints: List[str] = []
        self.mint_urls: List[str] = []
        self.health_urls: List[str] = []
        self.tls: Optional[ssl.SSLContext] = None
        self.request_timeout = DEFAULT_REQUEST_TIMEOUT
        self.max_age = DEFAULT_MAX_AGE
        self.refill_period = 0.0
        self.min_refill = DEFAULT_MIN_REFILL
        self.max_buffer = DEFAULT_MAX_BUFFER
        self.low_water = 0
        self.max_attempts = DEFAULT_MAX_ATTEMPTS
        self.base_backoff = DEFAULT_BASE_BACKOFF
        self.max_backoff = DEFAULT_MAX_BACKOFF
        self.max_retry_after = DEFAULT_MAX_RETRY_AFTER
        self.failure_threshold = DEFAULT_FAILURE_THRESHOLD
        self.recovery_probes = DEFAULT_RECOVERY_PROBES
        self.probe_interval = DEFAULT_PROBE_INTERVAL
        self.schedule: Optional[Schedule] = None
        self.logger = logging.getLogger("snowfence_client")
        self.clock: Optional[Clock] = None


def _invalid(msg: str) -> InvalidConfigError:
    return InvalidConfigError("invalid configuration: snowfence client: " + msg)


def check(cfg: Config) -> Settings:
    """Validates ``cfg`` and fills in its defaults; raises InvalidConfigError."""
    if not isinstance(cfg, Config):
        raise _invalid("want a snowfence_client.Config, got %r" % (cfg,))
    s = Settings()
    eps = cfg.endpoints
    if isinstance(eps, str):
        raise _invalid("Config.endpoints is one string; give a list of base URLs, the local region first")
    eps = list(eps or [])
    if not eps:
        raise _invalid("Config.endpoints is empty; give the base URL of at least one server, the local region first")
    health = cfg.health_urls
    if health is not None:
        if isinstance(health, str):
            raise _invalid("Config.health_urls is one string; give a list, one URL per endpoint")
        health = list(health)
        if len(health) != len(eps):
            raise _invalid("Config.health_urls has %d URLs for %d endpoints; give one per endpoint, or None for each endpoint's /healthz" % (len(health), len(eps)))
    for i, e in enumerate(eps):
        why = _url_problem(e, base=True)
        if why:
            raise _invalid("Config.endpoints[%d] %r: %s" % (i, e, why))
        base = e.rstrip("/")
        s.endpoints.append(base)
        s.mint_urls.append(base + "/v1/ids?count=")
        h = base + "/healthz"
        if health is not None:
            why = _url_problem(health[i], base=False)
            if why:
                raise _invalid("Config.health_urls[%d] %r: %s" % (i, health[i], why))
            h = health[i]
        s.health_urls.append(h)
    if cfg.tls is not None and not isinstance(cfg.tls, ssl.SSLContext):
        raise _invalid("Config.tls is %r; give an ssl.SSLContext (tls_context builds one from PEM files)" % (cfg.tls,))
    s.tls = cfg.tls
    for name, default in (
        ("request_timeout", DEFAULT_REQUEST_TIMEOUT),
        ("max_age", DEFAULT_MAX_AGE),
        ("base_backoff", DEFAULT_BASE_BACKOFF),
        ("max_backoff", DEFAULT_MAX_BACKOFF),
        ("max_retry_after", DEFAULT_MAX_RETRY_AFTER),
        ("probe_interval", DEFAULT_PROBE_INTERVAL),
        ("refill_period", 0.0),
    ):
        v = getattr(cfg, name)
        if v is None:
            v = 0
        if isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v) or math.isinf(v):
            raise _invalid("Config.%s is %r; give a number of seconds, or None for the default" % (name, v))
        if v < 0:
            raise _invalid("Config.%s is %r; use a positive duration in seconds, or None for the default" % (name, v))
        setattr(s, name, float(v) if v else default)
    if s.refill_period == 0:
        s.refill_period = s.max_age / 4
    if s.refill_period >= s.max_age:
        raise _invalid("Config.refill_period (%gs) is not less than max_age (%gs); IDs would expire before a refill is used up" % (s.refill_period, s.max_age))
    if s.max_backoff < s.base_backoff:
        raise _invalid("Config.max_backoff (%gs) is less than base_backoff (%gs)" % (s.max_backoff, s.base_backoff))
    for name, default in (
        ("min_refill", DEFAULT_MIN_REFILL),
        ("max_buffer", DEFAULT_MAX_BUFFER),
        ("low_water", 0),
        ("max_attempts", DEFAULT_MAX_ATTEMPTS),
        ("failure_threshold", DEFAULT_FAILURE_THRESHOLD),
        ("recovery_probes", DEFAULT_RECOVERY_PROBES),
    ):
        v = getattr(cfg, name)
        if v is None:
            v = 0
        if isinstance(v, bool) or not isinstance(v, int):
            raise _invalid("Config.%s is %r; give a whole number, or None for the default" % (name, v))
        if v < 0:
            raise _invalid("Config.%s is %d; use a positive number, or None for the default" % (name, v))
        setattr(s, name, v or default)
    if s.max_buffer < s.min_refill:
        raise _invalid("Config.max_buffer (%d) is less than min_refill (%d)" % (s.max_buffer, s.min_refill))
    if s.max_buffer > _MAX_MAX_BUFFER:
        raise _invalid("Config.max_buffer (%d) is over %d; a buffer that large holds more than max_age lets a caller use" % (s.max_buffer, _MAX_MAX_BUFFER))
    if s.low_water >= s.max_buffer:
        raise _invalid("Config.low_water (%d) is not less than max_buffer (%d); the client would refill without end" % (s.low_water, s.max_buffer))
    if cfg.schedule is not None:
        if isinstance(cfg.schedule, Schedule):
            s.schedule = cfg.schedule
        elif isinstance(cfg.schedule, str) and cfg.schedule.strip():
            try:
                s.schedule = Schedule.parse(cfg.schedule)
            except InvalidScheduleError as e:
                raise _invalid("Config.schedule: %s" % e) from e
        else:
            raise _invalid("Config.schedule is %r; give the servers' schedule (\"v1\", or a Schedule), or None for no check of repeated IDs" % (cfg.schedule,))
    if cfg.logger is not None:
        s.logger = cfg.logger
    s.clock = cfg.clock
    return s


def _url_problem(url: object, base: bool) -> str:
    """Why ``url`` is not an absolute http(s) URL ("" if it is)."""
    if not isinstance(url, str):
        return "not a string"
    try:
        u = urlsplit(url)
        u.port  # raises ValueError for a port that is not a number
    except ValueError as e:
        return str(e)
    if u.scheme not in ("http", "https") or not u.netloc or not u.hostname:
        return "not an absolute http or https URL (such as https://ids.example:8080)"
    if base and (u.query or u.fragment or "?" in url or "#" in url):
        return "a base URL takes no query or fragment"
    return ""
