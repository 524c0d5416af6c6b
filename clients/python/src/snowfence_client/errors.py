"""The errors of the snowfence client: one class per kind of failure.

Every error the client raises is a :class:`SnowfenceError`; catch the
subclass for the kind that matters to you. Each message says what went
wrong and what to do.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Optional


class SnowfenceError(Exception):
    """The base class of every error the client raises."""


class InvalidConfigError(SnowfenceError, ValueError):
    """A configuration the client cannot use; raised when the client is
    created, never later. The message names the field and what to give."""


class InvalidCountError(SnowfenceError, ValueError):
    """``next_n`` was asked for fewer than 1 or more than 1,000 IDs."""


class ClosedError(SnowfenceError):
    """A call on a closed client, or a call that was waiting for IDs when the
    client was closed."""

    def __init__(self, message: str = "snowfence client: closed; create a new Client to get more IDs") -> None:
        super().__init__(message)


class WaitTimeoutError(SnowfenceError, TimeoutError):
    """A call given a ``timeout`` waited that long for a refill and got no
    IDs (the refill goes on in the background)."""


class UnavailableError(SnowfenceError):
    """A refill gave up: ``attempts`` requests, across every endpoint, brought
    no IDs. ``last`` is the last attempt's failure (also the ``__cause__``)."""

    def __init__(self, attempts: int, last: Optional[BaseException]) -> None:
        self.attempts = attempts
        """How many requests the refill sent."""
        self.last = last
        """The last attempt's failure."""
        super().__init__(
            "snowfence client: no endpoint issued IDs after %d attempts; check that a server in "
            "Config.endpoints is reachable and issuing (GET /healthz): last failure: %s" % (attempts, last)
        )
        self.__cause__ = last


class ServerError(SnowfenceError):
    """A non-200 answer from an endpoint. The client raises one of its
    subclasses by status: :class:`RateLimitedError` (429),
    :class:`RejectedError` (another 4xx) or :class:`RefusedError` (5xx and
    anything else)."""

    def __init__(
        self,
        endpoint: str,
        status: int,
        code: str = "",
        message: str = "",
        reason: str = "",
        retry_after: float = 0.0,
    ) -> None:
        self.endpoint = endpoint
        """The base URL that answered."""
        self.status = status
        """The HTTP status."""
        self.code = code
        """The error body's ``code`` ("" when the body was not the server's JSON error, e.g. from a proxy)."""
        self.message = message
        """The error body's ``message``."""
        self.reason = reason
        """The error body's ``reason``."""
        self.retry_after = retry_after
        """The Retry-After header in seconds, 0 without one."""
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = ""
        s = "snowfence client: %s answered %d %s" % (endpoint, status, phrase)
        if code:
            s += " (" + code + (", " + reason if reason else "") + ")"
        if message:
            s += ": " + message
        super().__init__(s)

    @property
    def retryable(self) -> bool:
        """Whether another attempt may succeed: not for a 4xx other than 429
        (and 408, a timeout)."""
        s = self.status
        return s >= 500 or s == 429 or s == 408 or s < 400


class RefusedError(ServerError):
    """A 503 (or another 5xx): the server is up but not issuing (fenced,
    clock trouble, draining). Retried."""


class RateLimitedError(ServerError):
    """A 429: this caller is over its quota. Retried after Retry-After on the
    same endpoint, which stays in service."""


class RejectedError(ServerError):
    """A 4xx other than 429: the server will not take the request as sent (a
    wrong URL, a missing permission). Not retried: fix the request or the
    server's configuration."""


def server_error(endpoint: str, status: int, code: str = "", message: str = "", reason: str = "", retry_after: float = 0.0) -> ServerError:
    """Returns the :class:`ServerError` subclass of ``status``."""
    if status == 429:
        cls = RateLimitedError
    elif 400 <= status < 500:
        cls = RejectedError
    else:
        cls = RefusedError
    return cls(endpoint, status, code, message, reason, retry_after)


class BadResponseError(SnowfenceError):
    """A 200 whose body is not exactly a batch of the count asked for, in
    strictly increasing order, or (with ``Config.schedule``) one that repeats
    IDs received before: it yields no IDs and counts as a failure of the
    endpoint."""

    def __init__(self, endpoint: str, what: str) -> None:
        self.endpoint = endpoint
        """The base URL that answered."""
        super().__init__("snowfence client: malformed response from %s: %s" % (endpoint, what))


class NetworkError(SnowfenceError):
    """A request that got no complete answer: a connection refused or reset,
    a TLS handshake refused, a timeout, a body cut short. ``__cause__`` is
    the underlying error."""


class InvalidScheduleError(SnowfenceError, ValueError):
    """A layout schedule text that cannot be used (unknown layout, a cutover
    that is not an RFC 3339 instant after the epoch on a millisecond, ...)."""


class InvalidIdError(SnowfenceError, ValueError):
    """Not an ID: IDs are 1 to 19 decimal digits, no sign, no leading zero,
    at most 9223372036854775807."""
