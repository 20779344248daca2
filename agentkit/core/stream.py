"""A run as a stream: the model's pieces as they arrive (text, reasoning, tool-call arguments), then the loop's
own events, in the order they happen; `run_stream()` for a plain `for`, `arun_stream()` for `async for`.

    for event in agentkit.run_stream(model, "What's the weather in Tokyo?", tools=[get_weather]):
        if event.kind == "text_delta":
            print(event.text, end="", flush=True)          # the answer, as it is written
        elif event.kind == "tool_start":
            print(f"[{event.data['tool']} runs]")         # the loop's own events are trace Events

    with agentkit.run_stream(model, prompt, tools=tools) as stream:   # closed on leaving, also on break
        for event in stream:
            ...
    stream.run                                             # the Run, as run() would have returned it

    async with agentkit.arun_stream(model, prompt, tools=tools) as stream:
        async for event in stream:
            ...

What comes for each step, in order:

    model_request                       a trace Event: the loop calls the model
    text_delta, reasoning_delta,        the model's pieces (agentkit.core.types: TextDelta, ReasoningDelta,
    tool_call_delta ...                 ToolCallDelta), as its stream brings them
    model_response                      the turn is whole: only now do its calls go through the gates
    limit, gate ...                     the loop's decisions on each call
    tool_start, tool_end, retry, result a batch's events, once the batch has run
    ...
    stop                                always the last event

The core sees whole turns only: the driver reads the pieces from the model (`HTTPModel.stream(...).deltas()`,
`astream(...).deltas()`), hands them on, and gives the core the assembled turn. So a streamed run decides
exactly what `run()` decides, with the same stop reasons; a run that ends by raising raises the same
RunError from the loop, after its `stop` event. A model that cannot stream (ScriptedModel, FunctionModel,
anything with only `complete`) hands its turn on whole: one text piece, then one piece per call.

Stopping early: break out of the loop, close the stream, or leave its `with` block. The run ends
"user_cancel" with every call answered ("not_run"), and the model's stream is closed, its HTTP connection
with it. A turn that was still arriving never enters the history. (An `async for` left by break closes the
stream only when it is garbage-collected: use `async with`.)

Left out on purpose: retrying a model call whose stream broke after its first piece (the caller has shown
part of an answer that will not be finished; the run ends "error" with ModelCallError, as HTTPModel.stream
raises), and tool events while their batch runs (they come when it has run; the gate events before it say
which calls are about to run).
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import AsyncIterator, Iterator
from contextlib import aclosing
from typing import Any, Callable, Union

from .drive import _async_complete, _sync_complete
from .execute import Executor, make_executor
from .loop import Done, LoopCore, RunTools
from .runs import Run, Settings, Thread, ToolsLike, takes_settings
from .trace import Event, Trace
from .types import ModelTurn, StreamDelta, deltas_of

#: What a run's stream yields: the model's pieces and the loop's own events.
StreamEvent = Union[StreamDelta, Event]


class RunStream:
    """The events of one run, for a plain `for` (see the module docstring); `.run` is the Run."""

    def __init__(self, core: LoopCore, events: Iterator[StreamEvent]):
        self._core, self._events = core, events

    @property
    def run(self) -> Run:
        """The Run: whole once the stream has been read to its end or closed; until then, the run so far."""
        return self._core.run

    def __iter__(self) -> RunStream:
        return self

    def __next__(self) -> StreamEvent:
        return next(self._events)

    def close(self) -> None:
        """Stop the run here: "user_cancel", every call answered, the model's stream closed."""
        self._events.close()

    def __enter__(self) -> RunStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncRunStream:
    """The events of one run, for `async for` (see the module docstring); `.run` is the Run."""

    def __init__(self, core: LoopCore, events: AsyncIterator[StreamEvent]):
        self._core, self._events = core, events

    @property
    def run(self) -> Run:
        """The Run: whole once the stream has been read to its end or closed; until then, the run so far."""
        return self._core.run

    def __aiter__(self) -> AsyncRunStream:
        return self

    async def __anext__(self) -> StreamEvent:
        return await self._events.__anext__()

    async def aclose(self) -> None:
        """Stop the run here: "user_cancel", every call answered, the model's stream closed."""
        await self._events.aclose()

    async def __aenter__(self) -> AsyncRunStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def run_stream(model: Any, prompt: Any, tools: ToolsLike = (), *, thread: Thread | None = None,
               trace: Trace | None = None, executor: str | Executor | None = "threads", max_concurrency: int = 64,
               **settings: Any) -> RunStream:
    """The loop of `run()`, as a stream of its events: the model's pieces as they arrive, then the loop's
    own events (see agentkit.core.stream). Iterate it; `.run` is the Run at the end. The model is called
    with streaming on. The keywords are run()'s:

        model, prompt, tools, thread, trace, executor, max_concurrency   as for run()

    The other keywords are the run's `Settings`, one object the core reads:
    """
    core = LoopCore(tools, prompt, _streaming("run_stream", settings), thread=thread, trace=trace)
    return RunStream(core, _events(core, model, executor, max_concurrency))


def arun_stream(model: Any, prompt: Any, tools: ToolsLike = (), *, thread: Thread | None = None,
                trace: Trace | None = None, executor: str | Executor | None = "asyncio", max_concurrency: int = 64,
                **settings: Any) -> AsyncRunStream:
    """`run_stream` driven from asyncio (model.astream, awaited tools): `async with arun_stream(...) as s:
    async for event in s: ...`. The keywords are arun()'s:

        model, prompt, tools, thread, trace, executor, max_concurrency   as for arun()

    The other keywords are the run's `Settings`, one object the core reads:
    """
    core = LoopCore(tools, prompt, _streaming("arun_stream", settings), thread=thread, trace=trace)
    return AsyncRunStream(core, _aevents(core, model, executor, max_concurrency))


takes_settings(run_stream, leave_out=("stream",))
takes_settings(arun_stream, leave_out=("stream",))


def _streaming(driver: str, keywords: dict[str, Any]) -> Settings:
    """The run's Settings, streaming on: a streamed run always asks the model for a stream."""
    return dataclasses.replace(Settings.from_keywords(driver, keywords, leave_out=("stream",)), stream=True)


# -- the two drivers: run()'s and arun()'s loops, handing on what happens as it happens ------------------------

def _events(core: LoopCore, model: Any, executor: str | Executor | None, max_concurrency: int
            ) -> Iterator[StreamEvent]:
    happened: deque[Event] = deque()  # the loop's events, recorded by the core and the executor's workers
    core.run.trace.listeners.append(happened.append)
    pool, owned = make_executor(executor, max_concurrency=max_concurrency)
    turn_of = _pieces_then_turn(model)
    try:
        while not isinstance(step := core.next(), Done):
            yield from _handed_on(happened)
            if isinstance(step, RunTools):
                core.take_outcomes(pool.run_batch(step.jobs, step.trace))  # 5. execute
                continue
            try:
                turn = yield from turn_of(*step)  # 2. call the model, its pieces handed on as they come
            except Exception as exc:  # noqa: BLE001 — the run ends with ModelCallError carrying it
                core.model_failed(exc)
                continue
            core.take_turn(turn)
            yield from _handed_on(happened)
        yield from _handed_on(happened)
    except BaseException as exc:  # GeneratorExit too: the caller stopped reading ("user_cancel")
        core.abort(exc)
        raise
    finally:
        _stop_listening(core, happened)
        if owned:
            pool.close()
    core.result()  # raises the RunError the run ended with, as run() does


async def _aevents(core: LoopCore, model: Any, executor: str | Executor | None, max_concurrency: int
                   ) -> AsyncIterator[StreamEvent]:
    happened: deque[Event] = deque()
    core.run.trace.listeners.append(happened.append)
    pool, owned = make_executor(executor, default="asyncio", max_concurrency=max_concurrency)
    open_stream = _apieces_then_turn(model)
    try:
        while not isinstance(step := core.next(), Done):
            for event in _handed_on(happened):
                yield event
            if isinstance(step, RunTools):
                core.take_outcomes(await pool.arun_batch(step.jobs, step.trace))  # 5. execute
                continue
            try:
                pieces, turn_of = open_stream(*step)  # 2. call the model
                async with aclosing(pieces):
                    async for piece in pieces:
                        yield piece
                turn = await turn_of()
            except Exception as exc:  # noqa: BLE001
                core.model_failed(exc)
                continue
            core.take_turn(turn)
            for event in _handed_on(happened):
                yield event
        for event in _handed_on(happened):
            yield event
    except BaseException as exc:
        core.abort(exc)
        raise
    finally:
        _stop_listening(core, happened)
        if owned:
            pool.close()
    core.result()


def _handed_on(happened: deque[Event]) -> Iterator[Event]:
    while happened:
        yield happened.popleft()


def _stop_listening(core: LoopCore, happened: deque[Event]) -> None:
    listeners = core.run.trace.listeners
    if happened.append in listeners:
        listeners.remove(happened.append)


# -- the model's side: its pieces, then the whole turn -------------------------------------------------------

def _pieces_then_turn(model: Any) -> Callable[..., Iterator[StreamDelta]]:
    """A generator function per call: yields the turn's pieces, returns the turn (`yield from` gives it)."""
    stream = getattr(model, "stream", None)
    if callable(stream):
        def streamed(*step: Any) -> Iterator[StreamDelta]:
            opened = _readable(stream(*step), "stream")
            yield from opened.deltas()
            return _whole(opened)
        return streamed
    complete = _sync_complete(model)

    def whole(*step: Any) -> Iterator[StreamDelta]:
        turn = complete(*step)
        yield from deltas_of(turn)
        return turn
    return whole


def _apieces_then_turn(model: Any) -> Callable[..., tuple[AsyncIterator[StreamDelta], Callable[[], Any]]]:
    """Per call: (an async iterator of the turn's pieces, a coroutine function giving the turn after them)."""
    astream = getattr(model, "astream", None)
    if callable(astream):
        def streamed(*step: Any) -> tuple[AsyncIterator[StreamDelta], Callable[[], Any]]:
            opened = _readable(astream(*step), "astream")

            async def turn() -> ModelTurn:
                return _whole(opened)
            return opened.deltas(), turn
        return streamed
    acomplete = _async_complete(model)

    def whole(*step: Any) -> tuple[AsyncIterator[StreamDelta], Callable[[], Any]]:
        answered: list[ModelTurn] = []

        async def pieces() -> AsyncIterator[StreamDelta]:
            answered.append(await acomplete(*step))
            for piece in deltas_of(answered[0]):
                yield piece

        async def turn() -> ModelTurn:
            return answered[0]
        return pieces(), turn
    return whole


def _readable(opened: Any, verb: str) -> Any:
    if not callable(getattr(opened, "deltas", None)):
        raise TypeError(f"model.{verb}() gave a {type(opened).__name__}, which has no deltas(): a model streams "
                        "through the loop with stream()/astream() returning what HTTPModel's do (a TurnStream)")
    return opened


def _whole(opened: Any) -> ModelTurn:
    if opened.turn is None:
        raise RuntimeError("the model's stream ended without a turn")
    return opened.turn
