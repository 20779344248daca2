"""agentkit.core.execute: order kept, errors captured, typed timeouts, retries, parallelism, contextvars, spans."""

from __future__ import annotations

import asyncio
import contextvars
import random
import threading
import time

import pytest

from agentkit.core.errors import ToolTimeout
from agentkit.core.execute import (
    AsyncioExecutor,
    Executor,
    Job,
    Outcome,
    SequentialExecutor,
    ThreadExecutor,
    make_executor,
)
from agentkit.core.policies import Retry
from agentkit.core.trace import Trace

EXECUTORS = [SequentialExecutor, ThreadExecutor, AsyncioExecutor]
PARALLEL = [ThreadExecutor, AsyncioExecutor]


@pytest.fixture(params=EXECUTORS, ids=lambda cls: cls.name)
def executor(request):
    ex = request.param()
    yield ex
    ex.close()


@pytest.fixture
def release():
    """An event that lets tools left running by a timeout finish when the test ends."""
    event = threading.Event()
    yield event
    event.set()


def sync_job(call_id, fn, **kwargs) -> Job:
    return Job(call_id, kwargs.pop("tool", "tool"), lambda attempt: fn(), **kwargs)


def async_job(call_id, coro_fn, **kwargs) -> Job:
    return Job(call_id, kwargs.pop("tool", "tool"), lambda attempt: coro_fn(), is_async=True, **kwargs)


def napper(seconds, value):
    def fn():
        time.sleep(seconds)
        return value
    return fn


def anapper(seconds, value):
    async def fn():
        await asyncio.sleep(seconds)
        return value
    return fn


def all_overlap(trace: Trace) -> bool:
    """Every attempt started before any attempt ended: they all ran at the same time."""
    last_start = max(e.seq for e in trace.of("tool_start"))
    first_end = min(e.seq for e in trace.of("tool_end"))
    return last_start < first_end


def gathering(n: int):
    """A tool that returns only once `n` calls are inside it at the same moment: a proof of parallelism
    that no slow machine can fake (the barrier's timeout only matters when the calls do not overlap)."""
    barrier = threading.Barrier(n, timeout=10)

    def make(value):
        def fn():
            barrier.wait()
            return value
        return fn
    return make


def agathering(n: int):
    """The async twin of `gathering`: returns once `n` coroutines are waiting together."""
    arrived = {"n": 0}

    def make(value):
        async def fn():
            arrived["n"] += 1
            for _ in range(10_000):  # about 10 s at most, only when the calls do not overlap
                if arrived["n"] >= n:
                    return value
                await asyncio.sleep(0.001)
            raise AssertionError(f"only {arrived['n']} of {n} calls ever ran together")
        return fn
    return make


class Gauge:
    """Counts how many calls are inside at once; `peak` is the most it ever saw."""

    def __init__(self):
        self.lock, self.now, self.peak = threading.Lock(), 0, 0

    def wrap(self, seconds, value):
        def fn():
            with self.lock:
                self.now += 1
                self.peak = max(self.peak, self.now)
            time.sleep(seconds)
            with self.lock:
                self.now -= 1
            return value
        return fn


class Flaky:
    """Fails `failures` times, then returns the attempt number; remembers the attempts it was given."""

    def __init__(self, failures: int, exc: type[Exception] = ConnectionError):
        self.failures, self.exc, self.attempts = failures, exc, []

    def __call__(self, attempt: int):
        self.attempts.append(attempt)
        if len(self.attempts) <= self.failures:
            raise self.exc(f"failure {len(self.attempts)}")
        return f"ok on attempt {attempt}"


# -- order and errors ---------------------------------------------------------------------------------------

def test_outcomes_come_back_in_job_order_even_when_jobs_finish_out_of_order(executor):
    jobs = [sync_job("a", napper(0.06, "a")), sync_job("b", napper(0.0, "b")),
            sync_job("c", napper(0.03, "c"))]
    outcomes = executor.run_batch(jobs, Trace())
    assert [o.value for o in outcomes] == ["a", "b", "c"]
    assert all(o.ok and o.attempts == 1 for o in outcomes)


def test_mixed_sync_and_async_jobs_keep_their_order(executor):
    jobs = [async_job("a", anapper(0.03, "a")), sync_job("b", napper(0.0, "b")),
            async_job("c", anapper(0.0, "c"))]
    assert [o.value for o in executor.run_batch(jobs, Trace())] == ["a", "b", "c"]


def test_an_exception_comes_back_in_the_outcome_and_never_raises(executor):
    boom = RuntimeError("boom")

    def fail():
        raise boom

    async def afail():
        raise KeyError("missing")

    jobs = [sync_job("a", fail), sync_job("b", lambda: 2), async_job("c", afail)]
    outcomes = executor.run_batch(jobs, Trace())
    assert outcomes[0].error is boom and not outcomes[0].ok and outcomes[0].value is None
    assert outcomes[1] == Outcome(value=2)
    assert isinstance(outcomes[2].error, KeyError)


def test_an_empty_batch_gives_no_outcomes(executor):
    assert executor.run_batch([], Trace()) == []


def test_async_batches_keep_order_and_capture_errors(executor):
    def fail():
        raise ValueError("bad")

    jobs = [sync_job("a", napper(0.02, 1)), sync_job("b", fail), async_job("c", anapper(0.0, 3))]
    outcomes = asyncio.run(executor.arun_batch(jobs, Trace()))
    assert outcomes[0].value == 1 and isinstance(outcomes[1].error, ValueError) and outcomes[2].value == 3


# -- timeouts ------------------------------------------------------------------------------------------------

def test_a_slow_sync_tool_times_out_with_tool_timeout_in_bounded_time(executor, release):
    job = sync_job("slow", lambda: release.wait(5), tool="slow_tool", timeout=0.05)
    (outcome,) = executor.run_batch([job], Trace())
    # the tool is still waiting for `release` (set only when the test ends): the executor did not wait for it
    assert not release.is_set()
    assert isinstance(outcome.error, ToolTimeout) and isinstance(outcome.error, TimeoutError)
    assert outcome.error.tool_name == "slow_tool" and outcome.error.timeout == 0.05
    assert str(outcome.error) == "tool 'slow_tool' did not finish within 0.05 s"


def test_a_slow_async_tool_times_out_with_tool_timeout_in_bounded_time(executor):
    job = async_job("slow", anapper(30.0, "late"), tool="slow_tool", timeout=0.05)
    (outcome,) = executor.run_batch([job], Trace())  # a 30 s sleep: waiting for it would hang the test
    assert isinstance(outcome.error, ToolTimeout) and outcome.error.tool_name == "slow_tool"


def test_a_timeout_in_a_batch_does_not_hold_up_the_other_jobs(executor, release):
    jobs = [sync_job("slow", lambda: release.wait(5), timeout=0.05), sync_job("fast", lambda: "fast")]
    outcomes = executor.run_batch(jobs, Trace())
    assert not release.is_set()  # the slow tool is still running: nobody waited for it
    assert isinstance(outcomes[0].error, ToolTimeout) and outcomes[1].value == "fast"


def test_a_tool_that_finishes_within_its_timeout_returns_its_value(executor):
    jobs = [sync_job("a", napper(0.01, "a"), timeout=2.0), async_job("b", anapper(0.01, "b"), timeout=2.0)]
    assert [o.value for o in executor.run_batch(jobs, Trace())] == ["a", "b"]


@pytest.mark.parametrize("make", [sync_job, async_job], ids=["sync", "async"])
def test_a_tools_own_timeout_error_is_kept_under_asyncio(make):
    def fail():
        raise TimeoutError("upstream did not answer")

    async def afail():
        fail()

    with AsyncioExecutor() as ex:
        (outcome,) = ex.run_batch([make("c", fail if make is sync_job else afail)], Trace())
    assert type(outcome.error) is TimeoutError and str(outcome.error) == "upstream did not answer"


@pytest.mark.parametrize("cls", [SequentialExecutor, ThreadExecutor])
def test_a_tools_own_timeout_error_is_kept(cls):
    def fail():
        raise TimeoutError("upstream did not answer")

    with cls() as ex:
        (outcome,) = ex.run_batch([sync_job("c", fail)], Trace())
    assert type(outcome.error) is TimeoutError


def test_a_sync_function_returning_a_coroutine_is_awaited(executor):
    async def later():
        return "awaited"

    (outcome,) = executor.run_batch([sync_job("c", lambda: later())], Trace())
    assert outcome.value == "awaited"


@pytest.mark.parametrize("cls", [SequentialExecutor, ThreadExecutor])
def test_a_sync_function_returning_a_coroutine_is_awaited_also_with_a_timeout(cls):
    async def later():
        return "awaited"

    with cls() as ex:
        (outcome,) = ex.run_batch([sync_job("c", lambda: later(), timeout=1.0)], Trace())
    if asyncio.iscoroutine(outcome.value):
        outcome.value.close()  # today it comes back unawaited; close it so no warning leaks
    assert outcome.value == "awaited"


# -- retries -------------------------------------------------------------------------------------------------

RETRY = Retry(max_retries=2, backoff=0.5, multiplier=2.0, jitter=0.25)


def expected_delays(retry: Retry, seed: int = 0) -> list[float]:
    return list(retry.delays(random.Random(seed)))


@pytest.mark.parametrize("cls", EXECUTORS, ids=lambda c: c.name)
def test_retries_pass_attempt_numbers_and_sleep_the_backoff_delays(cls):
    slept, asleeps = [], []

    async def arecord(d):
        asleeps.append(d)

    flaky = Flaky(failures=2)
    with cls(sleep=slept.append, asleep=arecord) as ex:
        (outcome,) = ex.run_batch([Job("c", "fetch", flaky, retry=RETRY, idempotent=True)], Trace())
    assert flaky.attempts == [1, 2, 3]
    assert outcome.ok and outcome.value == "ok on attempt 3" and outcome.attempts == 3
    # the sync path sleeps with `sleep`, the event loop with `asleep`; the delays are the seeded ones
    assert slept + asleeps == expected_delays(RETRY)
    assert (slept if cls is not AsyncioExecutor else asleeps) == expected_delays(RETRY)


@pytest.mark.parametrize("cls", EXECUTORS, ids=lambda c: c.name)
def test_retries_of_an_async_tool_pass_attempt_numbers(cls):
    attempts = []

    async def invoke(attempt):
        attempts.append(attempt)
        if attempt < 3:
            raise ConnectionError("flaky")
        return attempt

    async def no_sleep(d):
        pass

    with cls(sleep=lambda d: None, asleep=no_sleep) as ex:
        (outcome,) = ex.run_batch([Job("c", "fetch", invoke, is_async=True, retry=RETRY, idempotent=True)],
                                  Trace())
    assert attempts == [1, 2, 3] and outcome.value == 3 and outcome.attempts == 3


@pytest.mark.parametrize("cls", EXECUTORS, ids=lambda c: c.name)
def test_retries_give_up_after_max_retries_with_the_last_error(cls):
    flaky = Flaky(failures=10)

    async def no_sleep(d):
        pass

    with cls(sleep=lambda d: None, asleep=no_sleep) as ex:
        (outcome,) = ex.run_batch([Job("c", "fetch", flaky, retry=RETRY, idempotent=True)], Trace())
    assert flaky.attempts == [1, 2, 3]
    assert str(outcome.error) == "failure 3" and outcome.attempts == 3


@pytest.mark.parametrize("cls", EXECUTORS, ids=lambda c: c.name)
def test_a_tool_not_flagged_idempotent_is_not_retried(cls):
    slept = []

    async def arecord(d):
        slept.append(d)

    flaky = Flaky(failures=1)
    with cls(sleep=slept.append, asleep=arecord) as ex:
        (outcome,) = ex.run_batch([Job("c", "charge_card", flaky, retry=RETRY, idempotent=False)], Trace())
    assert flaky.attempts == [1] and slept == []
    assert isinstance(outcome.error, ConnectionError) and outcome.attempts == 1


@pytest.mark.parametrize("cls", EXECUTORS, ids=lambda c: c.name)
def test_only_idempotent_false_retries_any_tool(cls):
    async def no_sleep(d):
        pass

    flaky = Flaky(failures=1)
    retry = Retry(max_retries=2, backoff=0.0, only_idempotent=False)
    with cls(sleep=lambda d: None, asleep=no_sleep) as ex:
        (outcome,) = ex.run_batch([Job("c", "charge_card", flaky, retry=retry, idempotent=False)], Trace())
    assert flaky.attempts == [1, 2] and outcome.ok


@pytest.mark.parametrize("cls", EXECUTORS, ids=lambda c: c.name)
def test_exceptions_outside_retry_on_are_not_retried(cls):
    flaky = Flaky(failures=1, exc=ValueError)
    retry = Retry(max_retries=2, backoff=0.0, retry_on=(ConnectionError,))
    with cls(sleep=lambda d: None) as ex:
        (outcome,) = ex.run_batch([Job("c", "fetch", flaky, retry=retry, idempotent=True)], Trace())
    assert flaky.attempts == [1] and isinstance(outcome.error, ValueError)


@pytest.mark.parametrize("cls", EXECUTORS, ids=lambda c: c.name)
def test_a_timeout_is_retried_like_any_other_failure(cls, release):
    calls = []

    def invoke(attempt):
        calls.append(attempt)
        if attempt == 1:
            release.wait(5)
        return attempt

    async def no_sleep(d):
        pass

    retry = Retry(max_retries=1, backoff=0.0, retry_on=(TimeoutError,))
    with cls(sleep=lambda d: None, asleep=no_sleep) as ex:
        (outcome,) = ex.run_batch([Job("c", "fetch", invoke, timeout=0.05, retry=retry, idempotent=True)],
                                  Trace())
    assert not release.is_set()  # attempt 1 is still waiting: the retry did not wait for it
    assert outcome.value == 2 and outcome.attempts == 2


def test_the_same_seed_gives_the_same_retry_delays():
    def delays(seed):
        slept = []
        with SequentialExecutor(seed=seed, sleep=slept.append) as ex:
            ex.run_batch([Job("c", "fetch", Flaky(failures=10), retry=RETRY, idempotent=True)], Trace())
        return slept

    assert delays(7) == delays(7) == expected_delays(RETRY, seed=7)
    assert delays(7) != delays(8)


# -- spans ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("cls", EXECUTORS, ids=lambda c: c.name)
def test_every_attempt_records_a_start_end_pair_and_a_span(cls):
    async def no_sleep(d):
        pass

    trace = Trace()
    jobs = [Job("a", "fetch", Flaky(failures=2), retry=RETRY, idempotent=True), sync_job("b", lambda: "b"),
            async_job("c", anapper(0.0, "c"))]
    with cls(sleep=lambda d: None, asleep=no_sleep) as ex:
        ex.run_batch(jobs, trace)
    assert trace.count("tool_start") == trace.count("tool_end") == 5
    spans = sorted(trace.spans(), key=lambda s: (s.call_id, s.attempt))
    assert [(s.call_id, s.attempt, s.ok) for s in spans] == [
        ("a", 1, False), ("a", 2, False), ("a", 3, True), ("b", 1, True), ("c", 1, True)]
    assert all(s.start <= s.end and s.worker for s in spans)
    assert [(e.data["attempt"], e.data["delay"]) for e in trace.of("retry")] == list(
        zip([2, 3], expected_delays(RETRY)))
    failed = [e for e in trace.of("tool_end") if not e.data["ok"]]
    assert {e.data["error"] for e in failed} == {"ConnectionError"}
    assert all(e.data["duration"] >= 0 for e in trace.of("tool_end"))


def test_sequential_spans_do_not_overlap_and_run_in_the_callers_thread():
    trace = Trace()
    with SequentialExecutor() as ex:
        ex.run_batch([sync_job(str(i), napper(0.03, i)) for i in range(3)], trace)
    spans = trace.spans()
    assert [s.call_id for s in spans] == ["0", "1", "2"]
    assert all(a.end <= b.start for a, b in zip(spans, spans[1:]))
    assert {s.worker for s in spans} == {threading.current_thread().name}


def test_a_timed_out_attempt_has_a_failed_span(executor, release):
    trace = Trace()
    executor.run_batch([sync_job("slow", lambda: release.wait(5), timeout=0.05)], trace)
    end = trace.of("tool_end")[0]
    assert end.data["ok"] is False and end.data["error"] == "ToolTimeout"
    assert [s.ok for s in trace.spans()] == [False]


# -- parallelism ---------------------------------------------------------------------------------------------

def test_thread_executor_runs_a_batch_of_eight_at_once_on_eight_workers():
    trace = Trace()
    make = gathering(8)
    with ThreadExecutor() as ex:
        outcomes = ex.run_batch([sync_job(str(i), make(i)) for i in range(8)], trace)
    assert [o.value for o in outcomes] == list(range(8)) and all(o.ok for o in outcomes)
    assert all_overlap(trace)
    assert len({s.worker for s in trace.spans()}) == 8


@pytest.mark.parametrize("cls", PARALLEL, ids=lambda c: c.name)
def test_max_concurrency_bounds_how_many_run_at_once(cls):
    gauge = Gauge()
    with cls(max_concurrency=2) as ex:
        outcomes = ex.run_batch([sync_job(str(i), gauge.wrap(0.05, i)) for i in range(4)], Trace())
    assert [o.value for o in outcomes] == [0, 1, 2, 3]
    assert gauge.peak <= 2


@pytest.mark.parametrize("cls", PARALLEL, ids=lambda c: c.name)
def test_max_workers_caps_the_threads_that_run_sync_tools(cls):
    gauge, trace = Gauge(), Trace()
    with cls(max_workers=2) as ex:
        outcomes = ex.run_batch([sync_job(str(i), gauge.wrap(0.05, i)) for i in range(5)], trace)
    assert [o.value for o in outcomes] == [0, 1, 2, 3, 4]  # order kept, whatever finished first
    assert gauge.peak == 2 and len({s.worker for s in trace.spans()}) == 2


def test_max_workers_leaves_async_tools_on_asyncio_all_running_at_once():
    """What an event loop's default pool does: async tools need no thread, so a small pool does not
    hold them up; only the sync tools queue for its threads."""
    trace, gauge = Trace(), Gauge()
    make = agathering(6)  # returns only once all six are waiting together
    jobs = [async_job(f"a{i}", make(i)) for i in range(6)] + [sync_job(f"s{i}", gauge.wrap(0.05, i)) for i in range(4)]
    with AsyncioExecutor(max_workers=2) as ex:
        outcomes = ex.run_batch(jobs, trace)
    assert [o.value for o in outcomes] == [0, 1, 2, 3, 4, 5, 0, 1, 2, 3] and all(o.ok for o in outcomes)
    assert gauge.peak == 2
    sync_workers = {s.worker for s in trace.spans() if s.call_id.startswith("s")}
    assert len(sync_workers) == 2 and all(w.startswith("agentkit-asyncio") for w in sync_workers)


def test_max_workers_never_exceeds_max_concurrency():
    assert ThreadExecutor(max_concurrency=3, max_workers=10).max_workers == 3
    assert AsyncioExecutor(max_workers=6).max_workers == 6
    assert ThreadExecutor().max_workers == ThreadExecutor().max_concurrency == 64


@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_max_workers_that_is_not_a_whole_number_from_one_is_refused(bad):
    with pytest.raises(ValueError, match=f"max_workers={bad!r}: must be at least 1"):
        AsyncioExecutor(max_workers=bad)


def test_sequential_executor_ignores_max_concurrency():
    ex = SequentialExecutor(max_concurrency=8, max_workers=4)
    assert ex.max_concurrency == ex.max_workers == 1
    gauge, trace = Gauge(), Trace()
    ex.run_batch([sync_job(str(i), gauge.wrap(0.01, i)) for i in range(3)], trace)
    assert gauge.peak == 1
    assert [e.kind for e in trace.events] == ["tool_start", "tool_end"] * 3


def test_asyncio_executor_awaits_async_jobs_concurrently():
    trace = Trace()
    make = agathering(8)
    with AsyncioExecutor() as ex:
        outcomes = ex.run_batch([async_job(str(i), make(i)) for i in range(8)], trace)
    assert [o.value for o in outcomes] == list(range(8)) and all(o.ok for o in outcomes)
    assert all_overlap(trace)


def test_asyncio_executor_runs_sync_jobs_on_its_own_pool_sized_to_the_batch():
    trace = Trace()
    make = gathering(8)
    with AsyncioExecutor() as ex:
        outcomes = ex.run_batch([sync_job(str(i), make(i)) for i in range(8)], trace)
    assert [o.value for o in outcomes] == list(range(8)) and all(o.ok for o in outcomes)
    assert all_overlap(trace)
    workers = {s.worker for s in trace.spans()}
    assert len(workers) == 8 and all(w.startswith("agentkit-asyncio") for w in workers)


def test_arun_batch_runs_async_jobs_concurrently_on_the_callers_loop():
    trace = Trace()
    make = agathering(8)

    async def main():
        with AsyncioExecutor() as ex:
            return await ex.arun_batch([async_job(str(i), make(i)) for i in range(8)], trace)

    outcomes = asyncio.run(main())
    assert [o.value for o in outcomes] == list(range(8)) and all(o.ok for o in outcomes)
    assert all_overlap(trace)


def test_later_batches_reuse_the_workers():
    trace = Trace()
    with ThreadExecutor() as ex:
        for _ in range(3):
            ex.run_batch([sync_job(str(i), napper(0.02, i)) for i in range(4)], trace)
            time.sleep(0.01)  # a worker marks itself idle just after its result is delivered
    assert len({s.worker for s in trace.spans()}) == 4


def test_thread_executor_runs_a_single_call_inline():
    trace = Trace()
    with ThreadExecutor() as ex:
        ex.run_batch([sync_job("only", lambda: 1)], trace)
    assert trace.spans()[0].worker == threading.current_thread().name


# -- contextvars ---------------------------------------------------------------------------------------------

REQUEST_ID = contextvars.ContextVar("request_id", default="unset")


def test_contextvars_are_visible_in_every_worker(executor):
    async def aget():
        return REQUEST_ID.get()

    token = REQUEST_ID.set("req-42")
    try:
        jobs = [sync_job("a", REQUEST_ID.get), sync_job("b", REQUEST_ID.get, timeout=1.0),
                async_job("c", aget), async_job("d", aget, timeout=1.0)]
        outcomes = executor.run_batch(jobs, Trace())
    finally:
        REQUEST_ID.reset(token)
    assert [o.value for o in outcomes] == ["req-42"] * 4


@pytest.mark.parametrize("cls", PARALLEL, ids=lambda c: c.name)
def test_a_job_in_a_batch_cannot_change_the_callers_contextvars(cls):
    def change():
        REQUEST_ID.set("changed by the tool")
        return REQUEST_ID.get()

    token = REQUEST_ID.set("caller")
    try:
        with cls() as ex:
            outcomes = ex.run_batch([sync_job("a", change), sync_job("b", change)], Trace())
        assert REQUEST_ID.get() == "caller"
    finally:
        REQUEST_ID.reset(token)
    assert [o.value for o in outcomes] == ["changed by the tool"] * 2


@pytest.mark.parametrize("cls", [SequentialExecutor, ThreadExecutor], ids=lambda c: c.name)
def test_a_single_job_cannot_change_the_callers_contextvars(cls):
    token = REQUEST_ID.set("caller")
    try:
        with cls() as ex:
            ex.run_batch([sync_job("a", lambda: REQUEST_ID.set("changed by the tool"))], Trace())
        assert REQUEST_ID.get() == "caller"
    finally:
        REQUEST_ID.reset(token)


# -- inside a running event loop (Jupyter) -------------------------------------------------------------------

@pytest.mark.parametrize("cls", EXECUTORS, ids=lambda c: c.name)
@pytest.mark.parametrize("n", [1, 3])
def test_run_batch_with_async_jobs_works_inside_a_running_event_loop(cls, n):
    async def notebook_cell():
        asyncio.get_running_loop()  # we really are inside a loop, like a Jupyter cell
        with cls() as ex:
            return ex.run_batch([async_job(str(i), anapper(0.01, i)) for i in range(n)], Trace())

    outcomes = asyncio.run(notebook_cell())
    assert [o.value for o in outcomes] == list(range(n)) and all(o.ok for o in outcomes)


# -- make_executor and lifecycle -----------------------------------------------------------------------------

@pytest.mark.parametrize("name, cls", [("sequential", SequentialExecutor), ("threads", ThreadExecutor),
                                       ("asyncio", AsyncioExecutor)])
def test_make_executor_builds_by_name_and_the_caller_owns_it(name, cls):
    ex, owned = make_executor(name, max_concurrency=3, max_workers=2)
    assert type(ex) is cls and owned is True
    assert ex.max_concurrency == (1 if cls is SequentialExecutor else 3)
    assert ex.max_workers == (1 if cls is SequentialExecutor else 2)
    ex.close()


def test_make_executor_uses_the_default_name_for_none():
    ex, owned = make_executor(None)
    assert type(ex) is ThreadExecutor and owned
    ex2, _ = make_executor(None, default="asyncio")
    assert type(ex2) is AsyncioExecutor


def test_make_executor_passes_an_instance_through_and_the_caller_does_not_own_it():
    mine = ThreadExecutor()
    assert make_executor(mine) == (mine, False)


def test_make_executor_refuses_an_unknown_name_listing_the_choices():
    with pytest.raises(ValueError, match=r"executor='process': choose one of \['asyncio', 'sequential', "
                                         r"'threads'\] or pass an Executor"):
        make_executor("process")


@pytest.mark.parametrize("bad", [0, -1])
def test_max_concurrency_below_one_is_refused(bad):
    with pytest.raises(ValueError, match=f"max_concurrency={bad}: must be at least 1"):
        ThreadExecutor(max_concurrency=bad)


@pytest.mark.parametrize("cls", EXECUTORS, ids=lambda c: c.name)
def test_close_is_idempotent_and_the_executor_still_works_after_it(cls):
    ex = cls()
    ex.run_batch([sync_job("a", lambda: 1), sync_job("b", lambda: 2)], Trace())
    ex.close()
    ex.close()
    again = ex.run_batch([sync_job("a", lambda: 1), sync_job("b", lambda: 2)], Trace())
    assert [o.value for o in again] == [1, 2]
    ex.close()


def test_the_context_manager_closes_the_pool():
    with ThreadExecutor() as ex:
        ex.run_batch([sync_job("a", lambda: 1), sync_job("b", lambda: 2)], Trace())
        assert ex._pool is not None
    assert ex._pool is None


def test_the_base_executor_has_no_batch_strategy():
    with pytest.raises(NotImplementedError):
        Executor().run_batch([], Trace())


# -- under asyncio, a quick sync tool runs on the event loop ------------------------------------------------

async def _with_company(coro):
    """Await `coro` while another task waits on the same loop: the run is no longer alone there."""
    company = asyncio.ensure_future(asyncio.sleep(30))
    try:
        return await coro
    finally:
        company.cancel()


def test_asyncio_runs_a_sync_tool_in_place_once_it_proved_quick():
    trace = Trace()

    async def main():
        with AsyncioExecutor() as ex:
            for i in range(3):
                await ex.arun_batch([sync_job(str(i), lambda: threading.current_thread().name, tool="quick")], trace)

    asyncio.run(_with_company(main()))
    workers = [e.data["worker"] for e in trace.of("tool_start")]
    here = threading.current_thread().name  # asyncio.run keeps the loop in this thread
    assert workers[0].startswith("agentkit-asyncio")  # unknown at first, and the loop is shared: a thread
    assert workers[1:] == [here, here]  # then in place: no hop to a thread and back


def test_asyncio_runs_a_sync_tool_in_place_when_the_run_is_alone_on_the_loop():
    trace = Trace()

    async def main():
        with AsyncioExecutor() as ex:
            ex.RUN_IN_PLACE_BELOW = 0.0  # nothing counts as quick: only being alone decides
            await ex.arun_batch([sync_job("a", lambda: 1, tool="any")], trace)

    asyncio.run(main())
    assert [e.data["worker"] for e in trace.of("tool_start")] == [threading.current_thread().name]


def test_asyncio_keeps_slow_sync_tools_and_tools_with_a_timeout_off_a_shared_event_loop():
    trace = Trace()
    loop_thread = threading.current_thread().name

    async def main():
        with AsyncioExecutor() as ex:
            ex.RUN_IN_PLACE_BELOW = 0.0  # nothing counts as quick: every call keeps its worker thread
            for i in range(2):
                await ex.arun_batch([sync_job(f"s{i}", lambda: 1, tool="slow")], trace)
        with AsyncioExecutor() as ex:
            for i in range(3):
                await ex.arun_batch([sync_job(f"t{i}", lambda: 1, tool="timed", timeout=5.0)], trace)

    asyncio.run(_with_company(main()))
    assert all(e.data["worker"] != loop_thread for e in trace.of("tool_start"))

    async def alone():  # a timeout needs a thread to be kept, also with nobody else on the loop
        with AsyncioExecutor() as ex:
            await ex.arun_batch([sync_job("t", lambda: 1, tool="timed", timeout=5.0)], trace)

    asyncio.run(alone())
    assert trace.of("tool_start")[-1].data["worker"] != loop_thread


def test_a_tool_run_in_place_cannot_change_the_callers_contextvars():
    def change():
        REQUEST_ID.set("changed by the tool")
        return REQUEST_ID.get()

    async def main():
        token = REQUEST_ID.set("caller")
        try:
            with AsyncioExecutor() as ex:
                outcomes = [await ex.arun_batch([sync_job(str(i), change, tool="quick")], Trace()) for i in range(3)]
            return outcomes, REQUEST_ID.get()
        finally:
            REQUEST_ID.reset(token)

    outcomes, after = asyncio.run(main())
    assert after == "caller" and [o[0].value for o in outcomes] == ["changed by the tool"] * 3


def test_a_single_async_job_cannot_change_the_callers_contextvars():
    async def change():
        REQUEST_ID.set("changed by the tool")

    async def main():
        token = REQUEST_ID.set("caller")
        try:
            with AsyncioExecutor() as ex:
                await ex.arun_batch([async_job("a", change)], Trace())
            return REQUEST_ID.get()
        finally:
            REQUEST_ID.reset(token)

    assert asyncio.run(main()) == "caller"


@pytest.mark.parametrize("cls", EXECUTORS, ids=lambda c: c.name)
def test_sync_and_async_paths_record_the_same_events_for_the_same_retries(cls):
    async def no_sleep(d):
        pass

    def events(run_it):
        trace = Trace()
        with cls(sleep=lambda d: None, asleep=no_sleep) as ex:
            run_it(ex, [Job("a", "fetch", Flaky(failures=2), retry=RETRY, idempotent=True)], trace)
        return [(e.kind, {k: v for k, v in e.data.items() if k not in ("worker", "duration")}) for e in trace.events]

    sync = events(lambda ex, jobs, trace: ex.run_batch(jobs, trace))
    asyn = events(lambda ex, jobs, trace: asyncio.run(ex.arun_batch(jobs, trace)))
    assert sync == asyn and [kind for kind, _ in sync] == ["tool_start", "tool_end", "retry"] * 2 + [
        "tool_start", "tool_end"]
