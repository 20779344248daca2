"""Parallel tool calls, measured: one batch of slow calls on an executor, and how its wall time grows.

    from agentkit.experiments import parallel
    run = parallel.batch(8, executor="threads", seconds=0.1)              # a Run; its trace has the spans
    parallel.timing(run)                                                  # Timing(calls=8, seconds=0.10, ...)
    parallel.scaling([1, 8, 64], executor="threads", workers=6)           # [Timing, ...] for a chart
    parallel.one_batch(calls=8, executor="asyncio", tools="async")        # a Gantt chart (the playground)

The model is `agentkit.models.parallel_calls`: it asks for N calls of one tool in its first turn and
answers once the results are in, so the tools are the only thing that takes time. Each call sleeps
`seconds` — `time.sleep` in a sync tool, `asyncio.sleep` in an async one — which is what a slow API
looks like to the thread or task that waits for it.

Two kinds of pool (`workers`):
- None: agentkit's default, a pool sized to the batch (one thread per call, up to 64);
- a number: a pool capped at that many threads. `CAPPED = 6` is what Python's own pools give on a
  2-core machine — `ThreadPoolExecutor()` and the event loop's default executor (`asyncio.to_thread`)
  have min(32, cpu_count + 4) workers — and what LangGraph's ToolNode and the OpenAI Agents SDK ran
  sync tools on when measured for this series (their figures are in notebook 05 and benchmarks/README.md).
  A capped pool runs a batch in waves: ceil(calls / workers) of them. Async tools on asyncio need no
  thread, so no pool holds them up.

Every figure comes from the run's own trace: `seconds` is the time of its last event (the whole run),
`workers` how many threads (or asyncio tasks) ran the calls, `waves` the most calls one of them ran one
after another.

Left out on purpose: process pools (tools share the run's state), and real I/O.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import Counter
from typing import Any, NamedTuple, Sequence

from .. import viz
from ..core import drive
from ..core.execute import AsyncioExecutor, Executor, SequentialExecutor, ThreadExecutor
from ..core.runs import Run
from ..core.tools import Tool, tool
from ..models import parallel_calls

__all__ = ["CAPPED", "EXECUTORS", "POOLS", "TOOL_KINDS", "Timing", "batch", "executor_for", "finish_order",
           "one_batch", "python_default_workers", "scaling", "sleeping_tool", "timing"]

EXECUTORS = ("sequential", "threads", "asyncio")
TOOL_KINDS = ("sync", "async")


def python_default_workers(cpu_count: int) -> int:
    """How many threads Python's ThreadPoolExecutor() gets on a machine with `cpu_count` CPUs."""
    return min(32, cpu_count + 4)


#: The pool a 2-core machine gets by default (this project's CI, and the machine of README claim C11).
CAPPED = python_default_workers(2)

#: The playground's pool choices: a label for the drop-down -> `workers`.
POOLS = {"sized to the batch": None, f"capped at {CAPPED} (cpu_count + 4 on 2 cores)": CAPPED}


def sleeping_tool(seconds: float, kind: str = "sync") -> Tool:
    """A tool that waits `seconds` like a slow API and returns its argument: `slow_api(i: int) -> int`."""
    if kind not in TOOL_KINDS:
        raise ValueError(f"kind={kind!r}: use one of {TOOL_KINDS}")
    if not 0 <= seconds <= 60:
        raise ValueError(f"seconds={seconds!r}: use 0 to 60")
    if kind == "sync":
        def slow_api(i: int) -> int:
            """A slow API: waits, then echoes i."""
            time.sleep(seconds)
            return i
        return tool(slow_api)

    async def slow_api_async(i: int) -> int:
        """A slow API: waits, then echoes i."""
        await asyncio.sleep(seconds)
        return i
    return tool(slow_api_async, name="slow_api")


def executor_for(executor: str, workers: int | None = None) -> Executor:
    """An executor by name; `workers` caps its thread pool (None: sized to the batch)."""
    if executor == "sequential":
        return SequentialExecutor()
    if executor == "threads":
        return ThreadExecutor(max_workers=workers)
    if executor == "asyncio":
        return AsyncioExecutor(max_workers=workers)
    raise ValueError(f"executor={executor!r}: use one of {EXECUTORS}")


def batch(calls: int, *, executor: str = "threads", tools: str = "sync", seconds: float = 0.1,
          workers: int | None = None) -> Run:
    """One run whose model asks for `calls` calls of a tool that sleeps `seconds`, all in one turn."""
    if not 1 <= calls <= 256:
        raise ValueError(f"calls={calls!r}: use 1 to 256")
    slow = sleeping_tool(seconds, tools)
    with executor_for(executor, workers) as pool:
        return drive.run(parallel_calls(slow.name, calls), "Call the slow API once per item.", tools=[slow],
                        executor=pool)


class Timing(NamedTuple):
    """One measured batch. `seconds` is wall time; `workers` and `waves` are read from the trace's spans."""

    calls: int
    seconds: float  # the whole run: the time of the trace's last event
    tool_seconds: float  # what one call sleeps
    expected_waves: int  # ceil(calls / threads); calls when sequential; 1 for async tools on asyncio
    waves: int  # the most calls one worker ran one after another
    workers: int  # how many threads (or asyncio tasks) ran the calls

    @property
    def in_tool_times(self) -> float:
        """The wall time in units of one call: 1.0 means the whole batch took as long as one call."""
        return self.seconds / self.tool_seconds if self.tool_seconds else math.inf


def expected_waves(calls: int, executor: str, tools: str = "sync", workers: int | None = None) -> int:
    """How many calls' worth of time a batch must take: all at once is 1 wave."""
    if executor == "sequential":
        return calls
    if executor == "asyncio" and tools == "async":
        return 1  # no thread needed: the pool's size does not matter
    return math.ceil(calls / min(calls, workers or calls))


def timing(run: Run, *, executor: str, tools: str, seconds: float, workers: int | None) -> Timing:
    """What a batch run measured, from its trace."""
    trace = run.trace
    spans = trace.spans()
    per_worker = Counter(s.worker for s in spans)
    return Timing(len(spans), trace.events[-1].t, seconds, expected_waves(len(spans), executor, tools, workers),
                  max(per_worker.values(), default=0), len(per_worker))


def scaling(sizes: Sequence[int], *, executor: str = "threads", tools: str = "sync", seconds: float = 0.1,
            workers: int | None = None) -> list[Timing]:
    """One batch per size, measured: wall time against the number of calls."""
    return [timing(batch(n, executor=executor, tools=tools, seconds=seconds, workers=workers),
                   executor=executor, tools=tools, seconds=seconds, workers=workers) for n in sizes]


def finish_order(run: Run) -> list[int]:
    """The calls of the run's first batch by the order they finished, each named by its place in the
    model's request (1 = the first call the model asked for)."""
    asked = [call.id for call in next(m for m in run.messages if m.tool_calls).tool_calls]
    return [asked.index(e.data["call_id"]) + 1 for e in run.trace.of("tool_end") if e.data.get("ok")]


def one_batch(calls: int = 8, seconds: float = 0.2, executor: str = "threads", tools: str = "sync",
              pool: str | int | None = "sized to the batch") -> Any:
    """The playground's experiment: run one batch and draw it as a Gantt chart, its time in the title.

    `pool` is a label of POOLS, a number of threads, or None (sized to the batch)."""
    workers = POOLS[pool] if isinstance(pool, str) else pool
    run = batch(calls, executor=executor, tools=tools, seconds=seconds, workers=workers)
    measured = timing(run, executor=executor, tools=tools, seconds=seconds, workers=workers)
    pool_words = "pool sized to the batch" if workers is None else f"pool capped at {workers}"
    waves = measured.expected_waves
    return viz.gantt({f"{calls} {tools} calls of {seconds:g} s on {executor}, {pool_words}": run},
                     title=f"{measured.seconds:.2f} s for the whole run — {waves} wave{'s' if waves != 1 else ''} "
                           f"of {seconds:g} s expected")
