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
  pool sized the same way (`asyncio.to_thread` would use the default pool and its waves).

All three: carry `contextvars` into worker threads, enforce per-call timeouts, retry per the call's
`Retry` policy, and record a span (start, end, worker, ok) per attempt into the trace. A job never
raises out of an executor: its exception comes back in `Outcome.error`.

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
from dataclasses import dataclass
from typing import Any, Callable

from .errors import ToolTimeout
from .policies import Retry
from .trace import Trace


@dataclass(frozen=True)
class Job:
    """One tool call ready to run. `invoke(attempt)` returns the value, or a coroutine for async tools."""

    call_id: str
    tool: str
    invoke: Callable[[int], Any]
    is_async: bool = False
    timeout: float | None = None
    retry: Retry | None = None
    idempotent: bool = False


@dataclass(frozen=True)
class Outcome:
    value: Any = None
    error: BaseException | None = None
    attempts: int = 1

    @property
    def ok(self) -> bool:
        return self.error is None


def _run_in_daemon_thread(fn: Callable[[], Any], timeout: float | None, tool: str) -> Any:
    """Run fn in a fresh daemon thread and wait at most `timeout` seconds for it."""
    box: dict[str, Any] = {}
    ctx = contextvars.copy_context()

    def target():
        try:
            box["value"] = ctx.run(fn)
        except BaseException as exc:  # noqa: BLE001 — handed back to the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=target, name=f"agentkit-{tool}", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise ToolTimeout(tool, timeout or 0.0)
    if "error" in box:
        raise box["error"]
    return box["value"]


class Executor:
    """Shared machinery: one job with retries and spans, sync and async. Subclasses choose concurrency."""

    name = "base"

    def __init__(self, max_concurrency: int = 64, *, seed: int | None = 0,
                 sleep: Callable[[float], Any] = time.sleep, asleep: Callable[[float], Any] = asyncio.sleep):
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency={max_concurrency}: must be at least 1")
        self.max_concurrency = max_concurrency
        self.rng = random.Random(seed)  # retry jitter, reproducible
        self.sleep, self.asleep = sleep, asleep
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    # -- the pool: created lazily; ThreadPoolExecutor starts a thread only when no idle one is free,
    #    so a batch of N calls gets N workers (up to max_concurrency), and later batches reuse them.
    def pool(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.max_concurrency, thread_name_prefix=f"agentkit-{self.name}")
            return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- one attempt, synchronously, in whatever thread calls it ---------------------------------
    @staticmethod
    def _attempt_sync(job: Job, attempt: int) -> Any:
        if job.is_async:
            # asyncio.run needs a thread without a running loop (a notebook's main thread has one).
            return _run_in_daemon_thread(lambda: asyncio.run(job.invoke(attempt)), job.timeout, job.tool)
        if job.timeout is not None:
            return _run_in_daemon_thread(lambda: _resolve(job.invoke(attempt)), job.timeout, job.tool)
        value = job.invoke(attempt)
        if inspect.isawaitable(value):  # a sync function that returned a coroutine
            return _run_in_daemon_thread(lambda: asyncio.run(_await(value)), None, job.tool)
        return value

    def run_job(self, job: Job, trace: Trace) -> Outcome:
        """Run one job to an Outcome: attempts, retries with backoff, a span per attempt."""
        delays = job.retry.delays(self.rng) if job.retry else iter(())
        attempt = 1
        while True:
            start = trace.record("tool_start", call_id=job.call_id, tool=job.tool, attempt=attempt,
                                 worker=threading.current_thread().name)
            try:
                value = self._attempt_sync(job, attempt)
            except Exception as exc:  # noqa: BLE001 — the policy decides, not the executor
                trace.record("tool_end", call_id=job.call_id, tool=job.tool, attempt=attempt, ok=False,
                             error=type(exc).__name__, duration=trace.now() - start.t)
                delay = next(delays, None) if job.retry and job.retry.applies_to(exc, job.idempotent) else None
                if delay is None:
                    return Outcome(error=exc, attempts=attempt)
                trace.record("retry", call_id=job.call_id, tool=job.tool, attempt=attempt + 1, delay=delay)
                self.sleep(delay)
                attempt += 1
                continue
            trace.record("tool_end", call_id=job.call_id, tool=job.tool, attempt=attempt, ok=True,
                         duration=trace.now() - start.t)
            return Outcome(value=value, attempts=attempt)

    # -- one job on the event loop ------------------------------------------------------------------
    async def arun_job(self, job: Job, trace: Trace) -> Outcome:
        delays = job.retry.delays(self.rng) if job.retry else iter(())
        attempt = 1
        loop = asyncio.get_running_loop()
        while True:
            start_t = trace.now()
            try:
                if job.is_async:
                    task = asyncio.current_task()
                    trace.record("tool_start", call_id=job.call_id, tool=job.tool, attempt=attempt,
                                 worker=task.get_name() if task else "asyncio")
                    value = await _within(_await(job.invoke(attempt)), job.timeout, job.tool)
                else:
                    value = await _within(
                        loop.run_in_executor(self.pool(), contextvars.copy_context().run,
                                             self._sync_in_worker, job, attempt, trace), job.timeout, job.tool)
            except Exception as exc:  # noqa: BLE001
                trace.record("tool_end", call_id=job.call_id, tool=job.tool, attempt=attempt, ok=False,
                             error=type(exc).__name__, duration=trace.now() - start_t)
                delay = next(delays, None) if job.retry and job.retry.applies_to(exc, job.idempotent) else None
                if delay is None:
                    return Outcome(error=exc, attempts=attempt)
                trace.record("retry", call_id=job.call_id, tool=job.tool, attempt=attempt + 1, delay=delay)
                await self.asleep(delay)
                attempt += 1
                continue
            trace.record("tool_end", call_id=job.call_id, tool=job.tool, attempt=attempt, ok=True,
                         duration=trace.now() - start_t)
            return Outcome(value=value, attempts=attempt)

    @staticmethod
    def _sync_in_worker(job: Job, attempt: int, trace: Trace) -> Any:
        trace.record("tool_start", call_id=job.call_id, tool=job.tool, attempt=attempt,
                     worker=threading.current_thread().name)
        value = job.invoke(attempt)
        if inspect.isawaitable(value):
            value = asyncio.run(_await(value))
        return value

    # -- batches: subclasses override --------------------------------------------------------------
    def run_batch(self, jobs: list[Job], trace: Trace) -> list[Outcome]:
        raise NotImplementedError

    async def arun_batch(self, jobs: list[Job], trace: Trace) -> list[Outcome]:
        semaphore = asyncio.Semaphore(self.max_concurrency)

        async def bounded(job: Job) -> Outcome:
            async with semaphore:
                return await self.arun_job(job, trace)

        return list(await asyncio.gather(*(bounded(j) for j in jobs)))


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
        super().__init__(1, **kwargs)

    def run_batch(self, jobs: list[Job], trace: Trace) -> list[Outcome]:
        # each call in a context of its own: a tool's ContextVar.set must not leak into the caller
        return [contextvars.copy_context().run(self.run_job, job, trace) for job in jobs]


class ThreadExecutor(Executor):
    """A batch runs on a pool sized to the batch; a single call runs inline (a thread buys nothing)."""

    name = "threads"

    def run_batch(self, jobs: list[Job], trace: Trace) -> list[Outcome]:
        if len(jobs) <= 1:
            return [contextvars.copy_context().run(self.run_job, job, trace) for job in jobs]
        pool = self.pool()
        # copy_context per job: each call sees the caller's contextvars, and cannot leak its own.
        futures = [pool.submit(contextvars.copy_context().run, self.run_job, job, trace) for job in jobs]
        return [f.result() for f in futures]


class AsyncioExecutor(Executor):
    """Async tools awaited together on the event loop; sync tools on a pool sized to the batch."""

    name = "asyncio"

    def run_batch(self, jobs: list[Job], trace: Trace) -> list[Outcome]:
        # Called from sync code (run()): give the batch its own event loop in a worker thread, since
        # the caller's thread may already have a running loop (Jupyter).
        return _run_in_daemon_thread(lambda: asyncio.run(self.arun_batch(jobs, trace)), None, "batch")


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
