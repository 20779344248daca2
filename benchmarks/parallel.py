"""Wall time of one batch of N sync tools that each sleep 1 s, on threads and on asyncio.

    python benchmarks/parallel.py

The model emits N calls in one turn, then answers. Ideal: 1 s for every N. Python's default pool has
min(32, cpu_count + 4) workers (6 on 2 cores), so a pool sized by the CPU count runs 8 calls in two
waves (2 s) and 16 in three (3 s). Target: within 20 ms of 1 s for N = 2, 8, 16.
"""

from __future__ import annotations

import asyncio
import gc
import time

import agentkit
from agentkit import tool
from agentkit.models import parallel_calls

SLEEP = 1.0


@tool
def sleepy(i: int) -> int:
    """Sleep one second (a slow API)."""
    time.sleep(SLEEP)
    return i


def measure(n: int, driver: str) -> float:
    model = parallel_calls("sleepy", n)
    gc.collect()  # a full collection of import-time garbage (~50 ms) must not land inside the timing
    start = time.perf_counter()
    if driver == "run/threads":
        r = agentkit.run(model, "go", tools=[sleepy], executor="threads")
    else:
        r = asyncio.run(agentkit.arun(model, "go", tools=[sleepy], executor="asyncio"))
    elapsed = time.perf_counter() - start
    assert r.tool_runs == n and r.stop_reason == "final_answer"
    return elapsed


def warm_up() -> None:
    """One tiny run first: imports and the first validator compile are not what we measure."""
    @tool
    def instant(i: int) -> int:
        """No wait."""
        return i

    agentkit.run(parallel_calls("instant", 16), "go", tools=[instant])
    asyncio.run(agentkit.arun(parallel_calls("instant", 16), "go", tools=[instant]))


def main() -> None:
    warm_up()
    print(f"{'driver/executor':<16} {'N':>3} {'wall s':>8} {'over 1 s (ms)':>14}")
    worst = 0.0
    for driver in ("run/threads", "arun/asyncio"):
        for n in (2, 8, 16):
            wall = measure(n, driver)
            worst = max(worst, wall - SLEEP)
            print(f"{driver:<16} {n:>3} {wall:>8.3f} {1000 * (wall - SLEEP):>14.1f}")
    print(f"worst overhead: {1000 * worst:.1f} ms (target <= 20 ms; LangGraph: 2.016 s for N=8)")


if __name__ == "__main__":
    main()
