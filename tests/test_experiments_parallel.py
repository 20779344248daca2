"""agentkit.experiments.parallel: what tutorial 05's charts and playground measure, read from the trace.

No wall-clock assertions: a batch's seconds are a measurement for the notebook; here the structure
is checked (how many workers ran the calls, how many each ran one after another, the order of results).
"""

from __future__ import annotations

import math
import threading

import matplotlib
import pytest
from hypothesis import given
from hypothesis import strategies as st

matplotlib.use("Agg")

import agentkit  # noqa: E402
from agentkit.core.execute import AsyncioExecutor, SequentialExecutor, ThreadExecutor  # noqa: E402
from agentkit.core.trace import Trace  # noqa: E402
from agentkit.experiments import parallel  # noqa: E402
from agentkit.models import parallel_calls  # noqa: E402

QUICK = 0.01  # seconds a call sleeps here: enough to overlap, short enough for a test


def test_the_capped_pool_is_pythons_default_on_two_cores():
    assert parallel.CAPPED == 6 == min(32, 2 + 4)
    assert [parallel.python_default_workers(n) for n in (1, 2, 8, 28, 64)] == [5, 6, 12, 32, 32]
    assert list(parallel.POOLS.values()) == [None, 6]


@pytest.mark.parametrize("kind", parallel.TOOL_KINDS)
def test_a_sleeping_tool_is_a_tool_named_slow_api_that_echoes_its_argument(kind):
    slow = parallel.sleeping_tool(QUICK, kind)
    assert slow.name == "slow_api" and slow.is_async is (kind == "async")
    assert slow.spec.parameters["properties"] == {"i": {"type": "integer"}}


@pytest.mark.parametrize("kind, seconds", [("threaded", 0.1), ("sync", -1), ("sync", 61)])
def test_a_sleeping_tool_refuses_an_unknown_kind_or_an_odd_duration(kind, seconds):
    with pytest.raises(ValueError):
        parallel.sleeping_tool(seconds, kind)


@pytest.mark.parametrize("name, workers, cls, threads", [
    ("sequential", None, SequentialExecutor, 1), ("threads", None, ThreadExecutor, 64),
    ("threads", 6, ThreadExecutor, 6), ("asyncio", 6, AsyncioExecutor, 6)])
def test_executor_for_builds_each_executor_with_its_pool(name, workers, cls, threads):
    with parallel.executor_for(name, workers) as ex:
        assert type(ex) is cls and ex.max_workers == threads


def test_executor_for_and_batch_refuse_what_they_do_not_know():
    with pytest.raises(ValueError, match="executor='processes'"):
        parallel.executor_for("processes")
    with pytest.raises(ValueError, match="calls=0"):
        parallel.batch(0)


@pytest.mark.parametrize("executor, tools", [("sequential", "sync"), ("threads", "sync"), ("asyncio", "sync"),
                                             ("asyncio", "async")])
def test_a_batch_runs_every_call_once_and_answers(executor, tools):
    run = parallel.batch(5, executor=executor, tools=tools, seconds=QUICK)
    assert run.stop_reason == agentkit.StopReason.FINAL_ANSWER and run.steps == 2 and run.tool_runs == 5
    assert [r.result for r in run.results] == [0, 1, 2, 3, 4]  # each call's own argument, in the model's order


def test_a_capped_pool_never_uses_more_threads_than_its_cap_and_goes_in_waves():
    run = parallel.batch(9, executor="threads", seconds=QUICK, workers=2)
    measured = parallel.timing(run, executor="threads", tools="sync", seconds=QUICK, workers=2)
    assert measured.calls == 9 and measured.expected_waves == 5
    assert measured.workers <= 2
    assert measured.waves >= 5  # nine calls on at most two threads: one of them ran at least five


def test_async_tools_on_asyncio_each_run_in_a_task_of_their_own_whatever_the_pool():
    run = parallel.batch(8, executor="asyncio", tools="async", seconds=QUICK, workers=2)
    measured = parallel.timing(run, executor="asyncio", tools="async", seconds=QUICK, workers=2)
    assert (measured.workers, measured.waves, measured.expected_waves) == (8, 1, 1)


def test_timing_reads_workers_and_waves_from_the_trace():
    trace = Trace()
    for n, worker in enumerate(["w1", "w2", "w1", "w1"]):  # w1 runs three calls one after another
        trace.record("tool_start", call_id=f"c{n}", tool="slow_api", attempt=1, worker=worker)
        trace.record("tool_end", call_id=f"c{n}", tool="slow_api", attempt=1, ok=True, duration=0.0)
    trace.record("stop", reason="final_answer", steps=2, tool_calls=4)
    measured = parallel.timing(agentkit.Run(messages=[], trace=trace), executor="threads", tools="sync",
                               seconds=0.5, workers=2)
    assert (measured.calls, measured.workers, measured.waves, measured.expected_waves) == (4, 2, 3, 2)
    assert measured.seconds == trace.events[-1].t and measured.in_tool_times == measured.seconds / 0.5


@given(calls=st.integers(1, 256), workers=st.one_of(st.none(), st.integers(1, 64)))
def test_expected_waves_is_calls_over_threads_rounded_up(calls, workers):
    threads = calls if workers is None else min(calls, workers)
    assert parallel.expected_waves(calls, "threads", "sync", workers) == math.ceil(calls / threads)
    assert parallel.expected_waves(calls, "asyncio", "sync", workers) == math.ceil(calls / threads)
    assert parallel.expected_waves(calls, "asyncio", "async", workers) == 1
    assert parallel.expected_waves(calls, "sequential", "sync", workers) == calls


def test_scaling_measures_one_batch_per_size():
    points = parallel.scaling([1, 3], executor="threads", seconds=QUICK, workers=2)
    assert [p.calls for p in points] == [1, 3] and [p.expected_waves for p in points] == [1, 2]


def test_finish_order_names_calls_by_their_place_in_the_request():
    """Call 4 is let through first, then 3, 2, 1: they finish in reverse, the results keep the model's order."""
    gates = [threading.Event() for _ in range(4)]

    @agentkit.tool
    def relay(i: int) -> int:
        """Wait for my turn, then let the call before me go."""
        if i < 3:
            assert gates[i].wait(10), "calls did not run in parallel"
        if i > 0:
            gates[i - 1].set()
        return i

    run = agentkit.run(parallel_calls("relay", 4), "go", tools=[relay], executor="threads")
    assert parallel.finish_order(run) == [4, 3, 2, 1]
    assert [r.result for r in run.results] == [0, 1, 2, 3]


def test_one_batch_draws_the_run_as_a_gantt_chart_with_its_time_in_the_title():
    fig = parallel.one_batch(calls=3, seconds=QUICK, executor="threads", tools="sync",
                             pool="capped at 6 (cpu_count + 4 on 2 cores)")
    (ax,) = fig.axes
    assert len(ax.patches) == 2 + 3  # two model calls, three tool calls
    assert "1 wave of 0.01 s expected" in fig._suptitle.get_text()
    assert ax.get_title(loc="left").startswith("3 sync calls of 0.01 s on threads, pool capped at 6")
