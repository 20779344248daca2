"""Where the kit keeps files for its user between runs: one folder, the user's cache.

    cache_root()     # AGENTKIT_CACHE, else $XDG_CACHE_HOME/agentkit, else ~/.cache/agentkit

What lives there: BFCL's data (`agentkit.bench.bfcl`, in bfcl-<version>/) and the simulator's signing key
(`agentkit.sim.wire.common`, sim-signing-key: the key its reasoning-state signatures are made with, so a
run saved today resumes tomorrow). Nothing in it is needed: delete the folder and the kit makes it again.

Left out on purpose: cleaning the cache, and any file that holds a user's data (results go where you say).
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """AGENTKIT_CACHE, else $XDG_CACHE_HOME/agentkit, else ~/.cache/agentkit (not created here)."""
    root = os.environ.get("AGENTKIT_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "agentkit")
    return Path(root).expanduser()
