"""The two drivers: `run()` and `arun()`, each a short `while` loop that does what the loop core says.

    run = agentkit.run(model, "東京の天気と、1ドル何円か教えて", tools=[get_weather, get_exchange_rate])
    run.output        # the final answer
    run.stop_reason   # StopReason.FINAL_ANSWER
    run.trace.table() # what happened, in order

The core (`agentkit.core.loop.LoopCore`) decides and does no I/O; a driver does the I/O and decides
nothing. Its loop is the whole protocol:

    while not isinstance(step := core.next(), Done):
        CallModel -> call the model (step 2 of the recipe), then core.take_turn(turn), or core.model_failed(exc)
        RunTools  -> run the jobs on the executor (step 5), then core.take_outcomes(outcomes)
    core.result()    the Run, or the RunError it ended with, raised

and anything that raises on the way goes to core.abort(exc) first, so the conversation is closed anyway.
`run` and `arun` differ only in awaiting; `agentkit.long_running.resume` drives a restored core with the
same two loops.

Left out on purpose: any decision. Whether to stop, which calls run, what a result says: all the core's.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any, Callable

from .execute import Executor, make_executor, run_in_daemon_thread
from .loop import Done, LoopCore, RunTools
from .runs import Run, Settings, Thread, ToolsLike, takes_settings
from .trace import Trace
from .types import ModelTurn


def run(model: Any, prompt: Any, tools: ToolsLike = (), *, thread: Thread | None = None, trace: Trace | None = None,
        executor: str | Executor | None = "threads", max_concurrency: int = 64, **settings: Any) -> Run:
    """Run the loop to a stop reason and return the Run. A run that ends by raising raises a RunError
    whose `.run` is the partial Run, with every call answered.

        model                anything with complete(messages, tools, options) -> ModelTurn (HTTPModel,
                             ScriptedModel, FunctionModel, your own); an async-only model works too
        prompt               a str (one user message), a Message, a list of Messages, or None (a thread's)
        tools                a list of Tools, or a function returning the current list: it is asked before
                             every model call, so a tool set that changes during the run (an MCP server's:
                             `tools=lambda: client.tools`) reaches the model at the next step
        thread               a Thread: carries the conversation, state and call counts over from earlier runs
        trace                a Trace to record into (default: a new one, as `run.trace`)
        executor             runs the tool calls: "threads" (default), "sequential", "asyncio" or an Executor
        max_concurrency      how many calls of one batch run at once (default 64)

    The other keywords are the run's `Settings`, one object the core reads:
    """
    core = LoopCore(tools, prompt, Settings.from_keywords("run", settings), thread=thread, trace=trace)
    return drive(core, model, executor, max_concurrency)


def drive(core: LoopCore, model: Any, executor: str | Executor | None = "threads",
          max_concurrency: int = 64) -> Run:
    """The sync driver's loop: do what the core says until it is done (run() and resume() use it)."""
    pool, owned = make_executor(executor, max_concurrency=max_concurrency)
    complete = _sync_complete(model)
    try:
        while not isinstance(step := core.next(), Done):
            if isinstance(step, RunTools):
                core.take_outcomes(pool.run_batch(step.jobs, step.trace))  # 5. execute
                continue
            try:
                turn = complete(*step)  # 2. call the model
            except Exception as exc:  # noqa: BLE001 — the run ends with ModelCallError carrying it
                core.model_failed(exc)
                continue
            core.take_turn(turn)
    except BaseException as exc:
        core.abort(exc)
        raise
    finally:
        if owned:
            pool.close()
    return core.result()


async def arun(model: Any, prompt: Any, tools: ToolsLike = (), *, thread: Thread | None = None,
               trace: Trace | None = None, executor: str | Executor | None = "asyncio", max_concurrency: int = 64,
               **settings: Any) -> Run:
    """The same loop as `run`, driven from asyncio: model.acomplete and the tools are awaited (a model
    with only complete() runs in a worker thread). The keywords are run()'s:

        model, prompt, tools, thread, trace, max_concurrency   as for run()
        executor             "asyncio" (default), "threads", "sequential" or an Executor

    The other keywords are the run's `Settings`, one object the core reads:
    """
    core = LoopCore(tools, prompt, Settings.from_keywords("arun", settings), thread=thread, trace=trace)
    return await adrive(core, model, executor, max_concurrency)


async def adrive(core: LoopCore, model: Any, executor: str | Executor | None = "asyncio",
                 max_concurrency: int = 64) -> Run:
    """The async driver's loop (arun() and aresume() use it)."""
    pool, owned = make_executor(executor, default="asyncio", max_concurrency=max_concurrency)
    acomplete = _async_complete(model)
    try:
        while not isinstance(step := core.next(), Done):
            if isinstance(step, RunTools):
                core.take_outcomes(await pool.arun_batch(step.jobs, step.trace))  # 5. execute
                continue
            try:
                turn = await acomplete(*step)  # 2. call the model
            except Exception as exc:  # noqa: BLE001
                core.model_failed(exc)
                continue
            core.take_turn(turn)
    except BaseException as exc:
        core.abort(exc)
        raise
    finally:
        if owned:
            pool.close()
    return core.result()


takes_settings(run)
takes_settings(arun)


def _sync_complete(model: Any) -> Callable[..., ModelTurn]:
    if hasattr(model, "complete"):
        return model.complete
    if hasattr(model, "acomplete"):  # an async-only model from sync code, even inside a running loop
        return lambda *a: run_in_daemon_thread(lambda: asyncio.run(model.acomplete(*a)), None, "model")
    if callable(model):
        return model
    raise TypeError(f"{type(model).__name__} is not a model: give it complete(messages, tools, options)")


def _async_complete(model: Any) -> Callable[..., Any]:
    if hasattr(model, "acomplete"):
        return model.acomplete
    complete = _sync_complete(model)
    if inspect.iscoroutinefunction(complete):
        return complete
    return lambda *a: asyncio.to_thread(complete, *a)
