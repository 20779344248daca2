"""The simulator's prompt cache: which request prefixes it holds, and for how long.

A request marks breakpoints (Anthropic's `cache_control`); its server half turns them into a `CachePlan`
(`sim.wire.common`): for each position in the prompt prefix, a digest of the prefix up to there and how
many tokens it holds. After the model answered, the app settles the plan here, as the real API does:

* the longest prefix this cache holds, looked up within `plan.lookback` positions before a breakpoint, is
  a cache **read** (`cached_tokens`); reading it keeps it for its lifetime again;
* every breakpoint after that prefix is a cache **write** (`cache_write_tokens`, the one-hour part in
  `cache_write_1h_tokens`): the tokens from the end of the read (or the last write) to the breakpoint;
* a prefix shorter than the model's minimum cacheable length is neither read nor written.

    cache = PromptCache()
    cache.settle(plan, Usage(5000, 20))      # first time: Usage(5000, 20, cache_write_tokens=4800)
    cache.settle(plan, Usage(5000, 20))      # same prefix again: Usage(5000, 20, cached_tokens=4800)

What is kept: a digest per written prefix and the moment it expires (5 minutes, or 1 hour for `ttl: "1h"`,
after it was last written or read), in this process's memory only, at most `max_entries` (the oldest go
first). The prompt itself is never stored. The clock is injectable, so tests need not wait.

Left out on purpose: the limit of four breakpoints per request (the extra ones are used, not refused),
caches shared between workspaces or organisations, and a cache entry becoming available only once the
first response has begun (here it is there as soon as the answer is written).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import replace
from threading import Lock

from ..core.types import Usage
from .wire.common import CachePlan

#: Seconds a cache entry lives after it was written or read, per `ttl`.
LIFETIMES = {"5m": 300.0, "1h": 3600.0}
DEFAULT_MAX_ENTRIES = 4096


class PromptCache:
    """digest -> (expiry, ttl); settled once per answered request (thread-safe: answers run concurrently)."""

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES, clock: Callable[[], float] = time.monotonic):
        self.max_entries, self.clock = max_entries, clock
        self._entries: OrderedDict[str, tuple[float, str]] = OrderedDict()
        self._lock = Lock()

    def settle(self, plan: CachePlan | None, usage: Usage) -> Usage:
        """`usage` with the cache reads and writes of `plan` filled in (kept within its input tokens)."""
        if plan is None or not any(p.ttl for p in plan.positions):
            return usage
        with self._lock:
            now = self.clock()
            read_at = self._longest_held(plan, now)
            read = plan.positions[read_at].tokens if read_at is not None else 0
            written, written_1h, start = 0, 0, read
            for i, position in enumerate(plan.positions):
                if not position.ttl or (read_at is not None and i <= read_at) or position.tokens < plan.minimum:
                    continue
                size = max(0, position.tokens - start)
                written += size
                written_1h += size if position.ttl == "1h" else 0
                start = max(start, position.tokens)
                self._keep(position.digest, position.ttl, now)
            if read_at is not None:
                self._keep(plan.positions[read_at].digest, self._entries[plan.positions[read_at].digest][1], now)
        read = min(read, usage.input_tokens)
        written = min(written, usage.input_tokens - read)
        return replace(usage, cached_tokens=read, cache_write_tokens=written,
                       cache_write_1h_tokens=min(written_1h, written))

    def _longest_held(self, plan: CachePlan, now: float) -> int | None:
        """The last position within the lookback window of some breakpoint whose prefix is held, unexpired."""
        best = None
        for b, position in enumerate(plan.positions):
            if not position.ttl:
                continue
            for i in range(b, max(-1, b - plan.lookback - 1), -1):
                entry = self._entries.get(plan.positions[i].digest)
                if entry is not None and entry[0] > now and plan.positions[i].tokens >= plan.minimum:
                    best = i if best is None else max(best, i)
                    break
        return best

    def _keep(self, digest: str, ttl: str, now: float) -> None:
        self._entries[digest] = (now + LIFETIMES.get(ttl, LIFETIMES["5m"]), ttl)
        self._entries.move_to_end(digest)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)
