"""How long `import agentkit` takes in a fresh interpreter (median of 7), minus the interpreter's start.

    python benchmarks/import_time.py

Target: <= 150 ms. The core must not import matplotlib, ipywidgets, uvicorn, starlette or the MCP SDK;
the script checks that too.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

HEAVY = ["matplotlib", "ipywidgets", "uvicorn", "starlette", "mcp", "httpx", "jsonschema"]


def wall(code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - start


def main() -> None:
    base = statistics.median(wall("pass") for _ in range(7))
    full = statistics.median(wall("import agentkit") for _ in range(7))
    probe = ("import sys, agentkit; print(','.join(m for m in %r if m in sys.modules))" % HEAVY)
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    print(f"interpreter start: {base * 1000:.1f} ms")
    print(f"import agentkit:   {(full - base) * 1000:.1f} ms (on top of start; target <= 150 ms)")
    print(f"heavy modules loaded by import agentkit: {loaded or 'none'}")


if __name__ == "__main__":
    main()
