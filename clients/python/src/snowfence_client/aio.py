"""asyncio support: an AsyncClient whose next() never blocks the event loop."""

from __future__ import annotations

import asyncio
from typing import Any, List, Optional

from .client import Client, Stats, _Want
from .config import MAX_BATCH, Config
from .errors import InvalidCountError, WaitTimeoutError


class AsyncClient:
    """The asyncio face of a :class:`Client` (which it owns; ``client``).
    ``await next()`` serves from the buffer at once when it holds IDs, and
    otherwise awaits the refill, which runs on the client's thread and wakes
    the waiting task through ``loop.call_soon_threadsafe``: the event loop is
    never blocked beyond the client's lock, held only for a few list
    operations. Several tasks (and threads using ``client``) may take IDs at
    once; each ID goes to one of them. Use ``async with`` or ``await
    aclose()``.
    """

    def __init__(self, config: Optional[Config] = None, **fields: Any) -> None:
        """Creates the Client (see :class:`Client`); raises InvalidConfigError."""
        self.client = Client(config, **fields)
        """The underlying thread-safe Client."""

    async def next(self, timeout: Optional[float] = None) -> int:
        """Returns the next ID, as Client.next, awaiting the refill when the
        buffer is empty (at most ``timeout`` seconds: WaitTimeoutError)."""
        c = self.client
        # The warm path of Client.next, without a wait.
        with c._lock:
            b = c._buf
            i = b.pos
            if i < b.end and c._now() < b.deadline:
                b.pos = i + 1
                if i >= b.kick:
                    c._start_refill_locked()
                return b.cur[i]
        return (await self._take(1, timeout))[0]

    async def next_n(self, n: int, timeout: Optional[float] = None) -> List[int]:
        """Returns ``n`` IDs (1 ≤ n ≤ 1000), as Client.next_n."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 1 or n > MAX_BATCH:
            raise InvalidCountError("invalid count: %r; ask for 1 to %d IDs" % (n, MAX_BATCH))
        return await self._take(n, timeout)

    async def _take(self, n: int, timeout: Optional[float]) -> List[int]:
        c = self.client
        loop = asyncio.get_running_loop()
        w = _Want(n)
        end = None if timeout is None else loop.time() + timeout
        while True:
            with c._lock:
                if c._step_locked(w):
                    return w.dst
                fut: asyncio.Future[None] = loop.create_future()

                def wake(fut: "asyncio.Future[None]" = fut) -> None:
                    loop.call_soon_threadsafe(_resolve, fut)

                c._async_waiters.append(wake)
            err: Optional[BaseException] = None
            try:
                if end is None:
                    await fut
                else:
                    await asyncio.wait_for(fut, max(end - loop.time(), 0))
            except asyncio.TimeoutError:
                err = WaitTimeoutError("snowfence client: no IDs within %gs; the refill goes on in the background" % timeout)
            except BaseException as e:  # cancelled: give back the wait, then re-raise
                err = e
            with c._lock:
                try:
                    c._async_waiters.remove(wake)
                except ValueError:
                    pass
                c._woken_locked(w, err)

    async def aclose(self) -> None:
        """Closes the client (in a thread: close joins the client's threads)."""
        await asyncio.get_running_loop().run_in_executor(None, self.client.close)

    def close(self) -> None:
        """Closes the client, blocking (see Client.close)."""
        self.client.close()

    def stats(self) -> Stats:
        """The client's counters."""
        return self.client.stats()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _resolve(fut: "asyncio.Future[None]") -> None:
    if not fut.done():
        fut.set_result(None)



