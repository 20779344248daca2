"""Where a paused run's token is claimed when it is resumed, so that it is resumed once (see `resume`).

    ledger = FileLedger("~/.local/state/myapp/resumed")   # shared by every process that uses the folder
    ledger.claim(token)     # True the first time, False ever after

A ledger is anything with `claim(token: str) -> bool` that answers True once per token. Two ship:
`MemoryLedger` (one process; `PROCESS_LEDGER` is the default of `resume`) and `FileLedger` (every process
on the machine that uses the same folder). A database row with a unique key or a Redis SETNX will do as well.

Left out on purpose: forgetting tokens (a claimed pause stays claimed; the files are empty and tiny).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

__all__ = ["MemoryLedger", "FileLedger", "PROCESS_LEDGER"]


class MemoryLedger:
    """Tokens claimed in this process (a set behind a lock)."""

    def __init__(self) -> None:
        self._claimed: set[str] = set()
        self._lock = threading.Lock()

    def claim(self, token: str) -> bool:
        """True the first time `token` is claimed, False ever after."""
        with self._lock:
            if token in self._claimed:
                return False
            self._claimed.add(token)
            return True


class FileLedger:
    """Tokens claimed by any process that uses the same folder: one empty file per claimed token, created
    with O_CREAT | O_EXCL (only one creator wins), readable and writable by its owner only."""

    def __init__(self, folder: str | os.PathLike):
        self.folder = Path(folder).expanduser()

    def claim(self, token: str) -> bool:
        self.folder.mkdir(parents=True, exist_ok=True)
        try:
            os.close(os.open(self.folder / f"{token}.resumed", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        except FileExistsError:
            return False
        return True


#: The default ledger: the pauses this process has resumed.
PROCESS_LEDGER = MemoryLedger()
