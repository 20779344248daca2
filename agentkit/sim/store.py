"""What a stateful API remembers between requests: a bounded table of stored responses.

OpenAI's Responses API keeps every response made with `store` (the default), so a later request can
continue from it by id (`previous_response_id`) and send only the new items, and a reasoning item or a
call can be named by its id alone. The simulator keeps the same records here — what each format's server half
(`sim/wire/`) says to keep with `stored_records`, read back through its `resolve_stored` — and nothing else: the table
does not know any format.

    store = ResponseStore(max_entries=4)
    store.keep({"resp_1": {"input": [...], "output": [...]}})
    store.recall("resp_1")        # the record; None for an id it never kept, or has let go of

Left out on purpose: expiry by time (the real API keeps responses for 30 days; here the oldest entries
go first once the table is full, which a long benchmark can reach) and deleting a response by id.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

#: Enough for every conversation a notebook or a test holds at once; a response keeps a few entries
#: (its own id, its reasoning items, its calls), and each holds the whole input it answered.
DEFAULT_MAX_ENTRIES = 1024


class ResponseStore:
    """id -> record, least recently used first out once more than `max_entries` are kept."""

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES):
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self.max_entries = max_entries
        self._records: OrderedDict[str, Any] = OrderedDict()

    def recall(self, key: str) -> Any:
        """The record kept under `key`, or None; a record read is kept longer."""
        if key not in self._records:
            return None
        self._records.move_to_end(key)
        return self._records[key]

    def keep(self, records: dict[str, Any]) -> None:
        """Keep these records (replacing any under the same ids), then let the oldest go past the bound."""
        for key, record in records.items():
            self._records[key] = record
            self._records.move_to_end(key)
        while len(self._records) > self.max_entries:
            self._records.popitem(last=False)

    def __len__(self) -> int:
        return len(self._records)
