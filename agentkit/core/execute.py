"""Run one batch of tool calls: sequentially, on threads, or on asyncio — results in the model's order.

    executor = ThreadExecutor()                 # the default of agentkit.run
    outcomes = executor.run_batch(jobs, trace)  # one Outcome per job, same order as jobs

Why three executors, and what they get right:

- `SequentialExecutor` runs one call after another. Easy to reason about; N slow tools take N times
  as long.
- `ThreadExecutor` runs a batch on a thread pool **sized to the batch** (up to `max_concurrency`), not
  to the CPU count. Python's default pool has `min(32, cpu_count + 4)` workers — 6 on a 2-core machine —
  so 8 one-second tools run in two waves and take 2 s; here they take 1 s.
- `AsyncioExecutor` awaits async tools concurrently and runs sync tools off the event loop, on its own
  pool sized the same way (`asyncio.to_thread` would use the default pool and its waves). A sync tool
  runs on the event loop itself when it took under a millisecond last time, or when the run's task is
  alone on the loop: for an instant tool the hop to a thread and back is most of the cost of a step,
  and with nobody else on the loop the hop buys nothing (see RUN_IN_PLACE_BELOW).

Two bounds: `max_concurrency` is how many calls of a batch run at once; `max_workers` (default: the
same) caps the threads of the pool only. They differ under asyncio, where async tools need no thread:

    ThreadExecutor(max_workers=6)    # sync tools in waves of 6, like min(32, cpu_count + 4) on 2 cores
    AsyncioExecutor(max_workers=6)   # async tools all at once, sync tools in waves of 6: what an
                                     # event loop's default pool (asyncio.to_thread) does on 2 cores

All three: carry `contextvars` into worker threads, enforce per-call timeouts, retry per the call's
`Retry` policy, and record a span (start, end, worker, ok) per attempt into the trace. A job never
raises out of an executor: its exception comes back in `Outcome.error`. The retry decisions live in
`JobRetries`, which the sync `run_job` and the async `arun_job` share.

Left out on purpose: process pools (tools share the run's state) and killing a hung thread (Python
cannot; a timed-out sync tool keeps running in a daemon thread, and its late result is dropped).
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterator, NamedTuple

from .errors import ToolTimeout
from .policies import Retry
from .trace import Trace


class Job(NamedTuple):
    """One tool call ready to run. `invoke(attempt)` returns the value, or a coroutine for async tools.

    A NamedTuple, like Outcome: immutable, and built for every call on the loop's hot path, where a
    frozen dataclass costs several times as much to make.
    """

    call_id: str
    tool: str
    invoke: Callable[[int], Any]
    is_async: bool = False
    timeout: float | None = None
    retry: Retry | None = None
    idempotent: bool = False


class Outcome(NamedTuple):
    """What became of one job: its value, or the exception it raised, after this many attempts."""

    value: Any = None
    error: BaseException | None = None
    attempts: int = 1

    @property
    def ok(self) -> bool:
        return self.error is None


def run_in_daemon_thread(fn: Callable[[], Any], timeout: float | None, name: str) -> Any:
    """fn() in a fresh daemon thread, waiting at most `timeout` seconds (None: as long as it takes).

    Two uses: bounding a sync call that Python cannot interrupt (past the timeout it raises ToolTimeout
    and the thread is left to finish on its own, its result dropped), and running a coroutine with
    asyncio.run from code whose thread already has an event loop (a Jupyter cell).
    """
    box: dict[str, Any] = {}
    ctx = contextvars.copy_context()

    def target():
        try:
            box["value"] = ctx.run(fn)
        except BaseException as exc:  # noqa: BLE001 — handed back to the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=target, name=f"agentkit-{name}", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise ToolTimeout(name, timeout or 0.0)
    if "error" in box:
        raise box["error"]
    return box["value"]


class JobRetries:
    """The attempts of one job: what to record, and whether to try again. No I/O, no sleeping.

        retries = JobRetries(job, trace, rng)
        retries.started("worker-1")      # tool_start of attempt 1
        retries.failed(exc)  -> 0.52     # tool_end (failed) and a retry event: wait, then attempt 2
        retries.failed(exc)  -> None     # no retry left, or not one to retry: give up
        retries.gave_up(exc) -> Outcome(error=exc, attempts=2)
        retries.succeeded(v) -> Outcome(value=v, attempts=...)   # tool_end (ok)

    `run_job` and `arun_job` share these decisions, so the sync and the async path cannot drift apart:
    they differ only in how they call the tool and how they wait.
    """

    __slots__ = ("job", "trace", "number", "_rng", "_delays", "_start")

    def __init__(self, job: Job, trace: Trace, rng: random.Random):
        self.job, self.trace = job, trace
        self.number = 1  # the attempt under way, 1-based
        self._rng = rng
        self._delays: Iterator[float] | None = None  # the retry's delays, drawn on the first failure
        self._start = 0.0

    def started(self, worker: str) -> None:
        job = self.job
        self._start = self.trace.record("tool_start", call_id=job.call_id, tool=job.tool, attempt=self.number,
                                        worker=worker).t

    def succeeded(self, value: Any) -> Outcome:
        self._ended(ok=True)
        return Outcome(value=value, attempts=self.number)

    def failed(self, exc: BaseException) -> float | None:
        """Seconds to wait before the next attempt, or None when there is no next attempt."""
        job = self.job
        self._ended(ok=False, error=type(exc).__name__)
        retry = job.retry
        if retry is None or not retry.applies_to(exc, job.idempotent):
            return None
        if self._delays is None:
            self._delays = retry.delays(self._rng)
        delay = next(self._delays, None)
        if delay is not None:
            self.number += 1
            self.trace.record("retry", call_id=job.call_id, tool=job.tool, attempt=self.number, delay=delay)
        return delay

    def gave_up(self, exc: BaseException) -> Outcome:
        return Outcome(error=exc, attempts=self.number)

    def _ended(self, ok: bool, error: str | None = None) -> None:
        job, duration = self.job, self.trace.now() - self._start
        if ok:
            self.trace.record("tool_end", call_id=job.call_id, tool=job.tool, attempt=self.number, ok=True,
                              duration=duration)
        else:
            self.trace.record("tool_end", call_id=job.call_id, tool=job.tool, attempt=self.number, ok=False,
                              error=error, duration=duration)


class Executor:
    """Shared machinery: one job with retries and spans, sync and async. Subclasses choose concurrency."""

    name = "base"

    #: Under asyncio, a sync tool whose last attempt took less than this runs on the event loop itself:
    #: the hop to a worker thread and back costs more than the tool (tens of microseconds, far more on a
    #: busy machine), and a millisecond is too short to hold up other tasks. So does any sync tool while
    #: the run's task is the only one on the loop: then there is nobody a blocked loop could hold up. A
    #: tool with a timeout always goes to a worker thread, where its deadline can be kept.
    RUN_IN_PLACE_BELOW = 0.001

    def __init__(self, max_concurrency: int = 64, *, max_workers: int | None = None, seed: int | None = 0,
                 sleep: Callable[[float], Any] = time.sleep, asleep: Callable[[float], Any] = asyncio.sleep):
        for name, value in (("max_concurrency", max_concurrency), ("max_workers", max_workers)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ValueError(f"{name}={value!r}: must be at least 1 (a whole number)")
        self.max_concurrency = max_concurrency
        # the pool's threads: never more than can run at once, and at most max_workers when it is given
        self.max_workers = max_concurrency if max_workers is None else min(max_workers, max_concurrency)
        self.rng = random.Random(seed)  # retry jitter, reproducible
        self.sleep, self.asleep = sleep, asleep
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        self._quick: dict[str, bool] = {}  # tool name -> its last attempt was quicker than RUN_IN_PLACE_BELOW

    # -- the pool: created lazily; ThreadPoolExecutor starts a thread only when no idle one is free,
    #    so a batch of N calls gets N workers (up to max_workers), and later batches reuse them.
    def pool(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.max_workers, thread_name_prefix=f"agentkit-{self.name}")
            return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- one job, synchronously, in whatever thread calls it ----------------------------------------------
    def run_job(self, job: Job, trace: Trace) -> Outcome:
        """Run one job to an Outcome: attempts, retries with backoff, a span per attempt."""
        retries = JobRetries(job, trace, self.rng)
        while True:
            retries.started(threading.current_thread().name)
            try:
                value = self._call(job, retries.number)
            except Exception as exc:  # noqa: BLE001 — the policy decides, not the executor
                delay = retries.failed(exc)
                if delay is None:
                    return retries.gave_up(exc)
                self.sleep(delay)
                continue
            return retries.succeeded(value)

    @staticmethod
    def _call(job: Job, attempt: int) -> Any:
        if job.is_async:
            # asyncio.run needs a thread without a running loop (a notebook's main thread has one).
            return run_in_daemon_thread(lambda: asyncio.run(job.invoke(attempt)), job.timeout, job.tool)
        if job.timeout is not None:
            return run_in_daemon_thread(lambda: _resolve(job.invoke(attempt)), job.timeout, job.tool)
        value = job.invoke(attempt)
        if inspect.isawaitable(value):  # a sync function that returned a coroutine
            return run_in_daemon_thread(lambda: asyncio.run(_await(value)), None, job.tool)
        return value

    # -- one job on the event loop --------------------------------------------------------------------------
    async def arun_job(self, job: Job, trace: Trace) -> Outcome:
        """The same as run_job, awaited: async tools on the event loop, sync ones on the pool (or in place)."""
        retries = JobRetries(job, trace, self.rng)
        while True:
            try:
                if job.is_async or job.timeout is not None or not (self._quick.get(job.tool) or _alone()):
                    value = await self._acall(job, retries)
                else:  # in place: quick last time, or nobody else on the loop (see RUN_IN_PLACE_BELOW)
                    value = contextvars.copy_context().run(self._timed_call, job, retries)
                    if inspect.isawaitable(value):
                        value = await value
            except Exception as exc:  # noqa: BLE001
                delay = retries.failed(exc)
                if delay is None:
                    return retries.gave_up(exc)
                await self.asleep(delay)
                continue
            return retries.succeeded(value)

    async def _acall(self, job: Job, retries: JobRetries) -> Any:
        if job.is_async:
            task = asyncio.current_task()
            retries.started(task.get_name() if task else "asyncio")
            # a task of its own: the tool's contextvars changes stay inside it, and a deadline can cancel it
            return await _within(asyncio.ensure_future(_await(job.invoke(retries.number))), job.timeout,
                                 job.tool)
        value = await _within(asyncio.get_running_loop().run_in_executor(
            self.pool(), contextvars.copy_context().run, self._timed_call, job, retries), job.timeout, job.tool)
        return await _await(value) if inspect.isawaitable(value) else value

    def _timed_call(self, job: Job, retries: JobRetries) -> Any:
        """One attempt of a sync tool under asyncio, remembering whether it was quick (see RUN_IN_PLACE_BELOW)."""
        retries.started(threading.current_thread().name)
        start = time.perf_counter()
        try:
            return job.invoke(retries.number)
        finally:
            self._quick[job.tool] = time.perf_counter() - start < self.RUN_IN_PLACE_BELOW

    # -- batches: subclasses override --------------------------------------------------------------
    def run_batch(self, jobs: list[Job], trace: Trace) -> list[Outcome]:
        raise NotImplementedError

    async def arun_batch(self, jobs: list[Job], trace: Trace) -> list[Outcome]:
        if len(jobs) == 1:  # nothing to overlap with: no tasks to schedule, no semaphore
            return [await self.arun_job(jobs[0], trace)]
        semaphore = asyncio.Semaphore(self.max_concurrency)

        async def bounded(job: Job) -> Outcome:
            async with semaphore:
                return await self.arun_job(job, trace)

        return list(await asyncio.gather(*(bounded(j) for j in jobs)))


def _alone() -> bool:
    """Whether the current task is the only one on the running event loop."""
    return len(asyncio.all_tasks()) <= 1


async def _await(awaitable: Any) -> Any:
    return await awaitable


def _resolve(value: Any) -> Any:
    """A value, or what it resolves to when a sync function handed back a coroutine."""
    return asyncio.run(_await(value)) if inspect.isawaitable(value) else value


async def _within(awaitable: Any, timeout: float | None, tool: str) -> Any:
    """Await with a deadline. Unlike asyncio.wait_for, a TimeoutError raised *by the tool itself* (a
    socket timeout, say) stays what it is; only our own deadline becomes ToolTimeout."""
    if timeout is None:
        return await awaitable
    task = asyncio.ensure_future(awaitable)
    done, _ = await asyncio.wait({task}, timeout=timeout)
    if not done:
        task.cancel()
        raise ToolTimeout(tool, timeout)
    return task.result()


class SequentialExecutor(Executor):
    """One call after another, in order, in the caller's thread."""

    name = "sequential"

    def __init__(self, **kwargs: Any):
        kwargs.pop("max_concurrency", None)  # one at a time is the point
        kwargs.pop("max_workers", None)
        super().__init__(1, **kwargs)

    def run_batch(self, jobs: list[Job], trace: Trace) -> list[Outcome]:
        # each call in a context of its own: a tool's ContextVar.set must not leak into the caller
        return [contextvars.copy_context().run(self.run_job, job, trace) for job in jobs]


class ThreadExecutor(Executor):
    """A batch runs on a pool sized to the batch (at most max_workers threads); a single call runs inline
    (a thread buys nothing)."""

    name = "threads"

    def run_batch(self, jobs: list[Job], trace: Trace) -> list[Outcome]:
        if len(jobs) <= 1:
            return [contextvars.copy_context().run(self.run_job, job, trace) for job in jobs]
        pool = self.pool()
        # copy_context per job: each call sees the caller's contextvars, and cannot leak its own.
        futures = [pool.submit(contextvars.copy_context().run, self.run_job, job, trace) for job in jobs]
        return [f.result() for f in futures]


class AsyncioExecutor(Executor):
    """Async tools awaited together on the event loop (at most max_concurrency at once); sync tools on a
    pool sized to the batch (at most max_workers threads)."""

    name = "asyncio"

    def run_batch(self, jobs: list[Job], trace: Trace) -> list[Outcome]:
        # Called from sync code (run()): give the batch its own event loop in a worker thread, since
        # the caller's thread may already have a running loop (Jupyter).
        return run_in_daemon_thread(lambda: asyncio.run(self.arun_batch(jobs, trace)), None, "batch")


EXECUTORS = {"sequential": SequentialExecutor, "threads": ThreadExecutor, "asyncio": AsyncioExecutor}


def make_executor(spec: str | Executor | None, default: str = "threads", **kwargs: Any) -> tuple[Executor, bool]:
    """An executor from a name or instance; the bool says whether the caller owns (must close) it."""
    if isinstance(spec, Executor):
        return spec, False
    name = spec or default
    try:
        cls = EXECUTORS[name]
    except KeyError:
        raise ValueError(f"executor={name!r}: choose one of {sorted(EXECUTORS)} or pass an Executor") from None
    return cls(**kwargs), True
