"""snowfence_client: a client of the snowfence ID service.

It fetches 64-bit IDs in batches (POST /v1/ids?count=N) into a buffer ahead
of need and hands them out one by one as Python ints, refilling in the
background, retrying and failing over across an ordered list of endpoints::

    from snowfence_client import Client

    with Client(endpoints=["https://ids.eu-west.corp", "https://ids.us-east.corp"]) as c:
        id = c.next()

It has the semantics of the Go client (package client of the snowfence
module); see README.md. No dependency beyond the standard library.
"""

import logging as _logging

from .aio import AsyncClient
from .client import Client, Stats
from .clock import Clock, FakeClock, SystemClock
from .config import (DEFAULT_BASE_BACKOFF, DEFAULT_FAILURE_THRESHOLD, DEFAULT_MAX_AGE, DEFAULT_MAX_ATTEMPTS,
                     DEFAULT_MAX_BACKOFF, DEFAULT_MAX_BUFFER, DEFAULT_MAX_RETRY_AFTER, DEFAULT_MIN_REFILL,
                     DEFAULT_PROBE_INTERVAL, DEFAULT_RECOVERY_PROBES, DEFAULT_REQUEST_TIMEOUT, MAX_BATCH, Config,
                     tls_context)
from .decode import DEFAULT_SCHEDULE, MAX_ID, V1, V2, Decoded, Layout, Schedule, decode, parse_id
from .errors import (BadResponseError, ClosedError, InvalidConfigError, InvalidCountError, InvalidIdError,
                     InvalidScheduleError, NetworkError, RateLimitedError, RefusedError, RejectedError, ServerError,
                     SnowfenceError, UnavailableError, WaitTimeoutError)

__version__ = "0.1.0"

# A library logs to its logger and lets the application decide where lines go.
_logging.getLogger("snowfence_client").addHandler(_logging.NullHandler())

__all__ = [
    "AsyncClient", "Client", "Stats", "Config", "tls_context",
    "Clock", "SystemClock", "FakeClock",
    "decode", "parse_id", "Schedule", "Layout", "Decoded", "V1", "V2", "DEFAULT_SCHEDULE", "MAX_ID", "MAX_BATCH",
    "DEFAULT_MAX_AGE", "DEFAULT_MIN_REFILL", "DEFAULT_MAX_BUFFER", "DEFAULT_REQUEST_TIMEOUT", "DEFAULT_MAX_ATTEMPTS",
    "DEFAULT_BASE_BACKOFF", "DEFAULT_MAX_BACKOFF", "DEFAULT_MAX_RETRY_AFTER", "DEFAULT_FAILURE_THRESHOLD",
    "DEFAULT_RECOVERY_PROBES", "DEFAULT_PROBE_INTERVAL",
    "SnowfenceError", "InvalidConfigError", "InvalidCountError", "ClosedError", "WaitTimeoutError",
    "UnavailableError", "ServerError", "RefusedError", "RateLimitedError", "RejectedError", "BadResponseError",
    "NetworkError", "InvalidScheduleError", "InvalidIdError",
]
