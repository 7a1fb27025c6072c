"""Recent load failures per collection, as Milvus's ``meta.FailedLoadCache``.

Without it a load that never finishes (a corrupt file, no memory) ends as a bare
"collection not loaded".  Every failed segment load records its error here, counted
by code; ShowCollections answers a collection that is not loaded with the most
frequent recent one, and ShowPartitions appends its text.  Records expire after 24 h,
and a new load of the collection, or a load that finished, clears them.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable

from vecgrid import errors

EXPIRE_S = 24 * 3600.0


@dataclass
class _Failure:
    count: int
    error: errors.MilvusError
    last_at: float


class FailedLoadCache:
    def __init__(self, expire_s: float = EXPIRE_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.expire_s, self._clock = expire_s, clock
        self._records: dict[int, dict[int, _Failure]] = {}
        self._lock = threading.Lock()

    def put(self, cid: int, error: BaseException) -> None:
        if not isinstance(error, errors.MilvusError):
            error = errors.ServiceInternal(f"{type(error).__name__}: {error}")
        with self._lock:
            by_code = self._records.setdefault(cid, {})
            found = by_code.get(error.code)
            if found is None:
                by_code[error.code] = _Failure(1, error, self._clock())
            else:
                found.count, found.error, found.last_at = found.count + 1, error, self._clock()

    def get(self, cid: int) -> errors.MilvusError | None:
        """The most frequent unexpired failure of the collection's loads, or None."""
        with self._lock:
            by_code = self._records.get(cid, {})
            for code in [c for c, f in by_code.items() if self._clock() - f.last_at > self.expire_s]:
                del by_code[code]
            if not by_code:
                self._records.pop(cid, None)
                return None
            return max(by_code.values(), key=lambda f: f.count).error

    def remove(self, cid: int) -> None:
        with self._lock:
            self._records.pop(cid, None)
