"""How well the benchmark runner overlaps slow model calls, and whether its memory stays flat.

    python benchmarks/bench_concurrency.py              # both parts (about a minute on 2 cores)
    python benchmarks/bench_concurrency.py --part speedup --repeat 9
    python benchmarks/bench_concurrency.py --part memory --cases 10000

Part 1, speed-up: 200 BFCL cases (one model call each) against the simulator's oracle model with every
answer 100 ms late (`faults="slow=100"`), 32 cases in flight. The speed-up is the serial time (measured:
20 cases one at a time, times 10) over the time with 32 in flight; the ideal speed-up is 200 / ceil(200
/ 32) = 28.6 (7 waves), and the figure is their ratio (target >= 0.85). Also printed: the wall time
against 7 waves of exactly 100 ms (0.70 s), which counts every millisecond of the run's own work too.

Part 2, memory: 10,000 cases in one process (BFCL simple_python, cycled under new ids), no added
latency, 32 in flight, results appended to a JSONL file. The resident set size is sampled every 1,000
cases; flat means the growth from 2,000 to 10,000 cases is a few MB, not proportional to the cases.

The simulator runs in a child process (its own interpreter, so its own GIL and its own core), the
way a real provider is somewhere else: in one process the client's and the server's work share one
GIL, and about 4-5 ms of CPU per case (half of it the server's) would be the limit instead of the
runner. `--in-process` measures that variant too.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentkit.bench import bfcl  # noqa: E402
from agentkit.bench.oracle import serve_with_oracle  # noqa: E402
from agentkit.bench.runner import HTTPModels, run_benchmark  # noqa: E402
from agentkit.bench.suites import Case, load_cases  # noqa: E402


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


SERVER = """
import sys, time
from agentkit.bench.oracle import serve_with_oracle
from agentkit.bench.suites import load_cases
spec, limit, latency = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
faults = f"slow={latency}" if latency else True
with serve_with_oracle(load_cases(spec, limit=limit), faults=faults) as server:
    print(server.url, flush=True)
    sys.stdin.read()  # until the parent closes our stdin
"""


@contextlib.contextmanager
def simulator(spec: str, limit: int, latency_ms: int, in_process: bool):
    """The oracle's simulator: a child process by default, or a thread of this one."""
    if in_process:
        with serve_with_oracle(load_cases(spec, limit=limit), faults=f"slow={latency_ms}" if latency_ms
                               else True) as server:
            yield server.url
        return
    child = subprocess.Popen([sys.executable, "-c", SERVER, spec, str(limit), str(latency_ms)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             cwd=Path(__file__).resolve().parents[1])
    try:
        yield child.stdout.readline().strip()
    finally:
        child.stdin.close()
        child.wait(timeout=10)


def speedup(cases_n: int = 200, in_flight: int = 32, latency_ms: int = 100, in_process: bool = False) -> float:
    cases = load_cases("bfcl:simple_python", limit=cases_n)
    with simulator("bfcl:simple_python", cases_n, latency_ms, in_process) as url, \
            tempfile.TemporaryDirectory() as tmp:
        def model() -> HTTPModels:  # one HTTPModel (one connection pool) per worker
            return HTTPModels("oracle", base_url=url + "/v1", api_key="sim")

        async def timed(subset, concurrency, name) -> tuple[float, float]:
            started, cpu = time.perf_counter(), time.process_time()
            await run_benchmark(subset, make_model=model(), out=Path(tmp) / f"{name}.jsonl",
                                concurrency=concurrency, progress=False)
            return time.perf_counter() - started, time.process_time() - cpu

        asyncio.run(timed(cases[:8], 8, "warm-up"))
        serial = asyncio.run(timed(cases[:20], 1, "serial"))[0] / 20
        parallel, cpu = asyncio.run(timed(cases, in_flight, "parallel"))
    waves = math.ceil(cases_n / in_flight)
    ideal_wall = waves * latency_ms / 1000
    speedup, ideal_speedup = serial * cases_n / parallel, cases_n / waves
    where = "this process" if in_process else "a child process"
    print(f"speed-up: {cases_n} cases, {latency_ms} ms per answer, {in_flight} in flight, simulator in {where}")
    print(f"  serial, per case:         {serial * 1000:7.1f} ms   (the {latency_ms} ms answer plus the run's own work)")
    print(f"  {in_flight} in flight, all:    {parallel:7.3f} s")
    print(f"  speed-up over serial:     {speedup:7.1f} x  (ideal {ideal_speedup:.1f} x: {waves} waves)")
    print(f"  speed-up / ideal:         {speedup / ideal_speedup:7.3f}    (target >= 0.85)")
    print(f"  wall vs {waves} x {latency_ms} ms:     {ideal_wall / parallel:7.3f}    "
          f"(ideal {ideal_wall:.2f} s / measured)")
    print(f"  this process's CPU:       {cpu * 1000 / cases_n:7.2f} ms per case ({cpu:.3f} s in all; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    return speedup / ideal_speedup


def memory(cases_n: int = 10_000, in_flight: int = 32, in_process: bool = False, trace_heap: bool = False) -> None:
    base = load_cases("bfcl:simple_python")
    cases = [Case(f"{c.id}#{i}", c.suite, c.category, c.source)
             for i, c in ((i, base[i % len(base)]) for i in range(cases_n))]
    samples: list[tuple[int, float]] = []
    done = [0]

    heap: dict[int, Any] = {}

    def on_record(record: dict) -> None:
        done[0] += 1
        if done[0] % 1000 == 0:
            samples.append((done[0], rss_mb()))
        if trace_heap and done[0] in (1000, cases_n):
            gc.collect()
            heap[done[0]] = tracemalloc.take_snapshot()

    if trace_heap:
        tracemalloc.start(8)

    with simulator("bfcl:simple_python", len(base), 0, in_process) as url, tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        summary = asyncio.run(run_benchmark(cases, make_model=HTTPModels("oracle", base_url=url + "/v1", api_key="sim"),
                                            out=Path(tmp) / "m.jsonl",
                                            concurrency=in_flight, progress=False, on_record=on_record))
        seconds = time.perf_counter() - started
        size = os.path.getsize(Path(tmp) / "m.jsonl") / 1e6
    print(f"memory: {summary.done} cases, {in_flight} in flight, {seconds:.1f} s ({summary.done / seconds:.0f} "
          f"cases/s), {summary.passed} passed, results file {size:.1f} MB")
    print("  cases done   RSS (MB)")
    for n, mb in samples:
        print(f"  {n:10,d}   {mb:8.1f}")
    if trace_heap and len(heap) == 2:
        growth = heap[cases_n].compare_to(heap[1000], "traceback")
        print(f"  Python heap, case 1,000 to {cases_n:,}: {sum(g.size_diff for g in growth) / 1024:+.0f} KB in all; "
              "largest growing allocation sites:")
        for g in sorted(growth, key=lambda g: g.size_diff, reverse=True)[:3]:
            print(f"    {g.size_diff / 1024:+7.1f} KB  {g.traceback.format()[-1].strip()}")
    if len(samples) >= 2:
        (n0, first), (n1, last) = samples[1] if len(samples) > 2 else samples[0], samples[-1]
        print(f"  growth from {n0:,} to {n1:,} cases: {last - first:+.1f} MB "
              f"({(last - first) * 1024 / max(1, n1 - n0):.2f} KB per case)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--part", choices=["speedup", "memory", "both"], default="both")
    parser.add_argument("--cases", type=int, default=10_000, help="cases for the memory part")
    parser.add_argument("--repeat", type=int, default=1, help="run the speed-up part this many times")
    parser.add_argument("--in-process", action="store_true", help="the simulator on a thread of this process")
    parser.add_argument("--trace-heap", action="store_true", help="memory part: compare Python heap snapshots "
                                                                  "(tracemalloc; slower)")
    args = parser.parse_args()
    bfcl.fetch()
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} cores")
    if args.part in ("speedup", "both"):
        ratios = [speedup(in_process=args.in_process) for _ in range(args.repeat)]
        if len(ratios) > 1:
            print(f"speed-up / ideal over {len(ratios)} runs: median {statistics.median(ratios):.3f}, "
                  f"min {min(ratios):.3f}, max {max(ratios):.3f}; runs >= 0.85: {sum(r >= 0.85 for r in ratios)}")
    if args.part in ("memory", "both"):
        memory(args.cases, in_process=args.in_process, trace_heap=args.trace_heap)


if __name__ == "__main__":
    main()
