"""The check of Config.schedule: refuse an answer that repeats IDs received
before (client/repeat.go)."""

from __future__ import annotations

from typing import Dict, List, Tuple

from .decode import Schedule

_Key = Tuple[str, int, int]  # (layout, region number, machine): one stream


class Marks:
    """Remembers, per stream, the last ID received, and refuses a batch that
    does not start above it. The IDs of one stream strictly increase over
    time, across holders of the number, and one Client sends one request at
    a time, so this never refuses a sound answer. Owned by the refill
    thread."""

    def __init__(self, schedule: Schedule) -> None:
        self._schedule = schedule
        self._last: Dict[_Key, int] = {}

    def check(self, ids: List[int]) -> str:
        """Takes the IDs of one answer, strictly increasing, and returns why
        some of them may have been received before ("" if none can have
        been), remembering their marks only if none can. The first and last
        IDs are decoded; only when they are of different streams (a batch
        minted across a change of layout or of machine number) is every ID
        decoded, to split the batch into runs of one stream."""
        key = self._schedule.stream_of
        first, last = ids[0], ids[-1]
        k0 = key(first)
        runs: List[Tuple[_Key, int, int]] = [(k0, first, last)]
        if key(last) != k0:
            runs = []
            for id in ids:
                k = key(id)
                if runs and runs[-1][0] == k:
                    runs[-1] = (k, runs[-1][1], id)
                else:
                    runs.append((k, id, id))
        # A stream's later runs in the batch start above its earlier ones'
        # ends (the batch increases): checking each against the mark from
        # before the batch is enough.
        for k, lo, _ in runs:
            prev = self._last.get(k)
            if prev is not None and lo <= prev:
                return ("ID %d is not above ID %d, the last received before from machine %d of region %d (layout %s), "
                        "whose IDs only increase: the answer repeats IDs (a replayed or duplicated response)" % (lo, prev, k[2], k[1], k[0]))
        for k, _, hi in runs:
            self._last[k] = hi
        return ""
