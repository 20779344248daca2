"""Offline models for tests and experiments: a script, a function, and a few ready-made behaviours.

    model = ScriptedModel([
        [call("get_weather", {"city": "Tokyo"})],   # step 1: ask for a tool
        "It is sunny in Tokyo.",                     # step 2: answer
    ])
    run = agentkit.run(model, "Weather in Tokyo?", tools=[get_weather])
    model.assert_complete()                          # every scripted step was used

Anything with `complete(messages, tools, options) -> ModelTurn` is a model to the loop; these are the
smallest such things. A step of a script may be a ModelTurn, a str (a final answer), a list of
ToolCalls (one parallel batch), or a function (messages, tools, options) -> any of those.

For a model that reads the request and decides, use the simulator (`agentkit.sim`) with HTTPModel.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from typing import Any, Callable, Sequence

from .core.errors import ScriptError
from .core.types import Message, ModelOptions, ModelTurn, ToolCall, ToolSpec

Step = Any  # ModelTurn | str | list[ToolCall] | Callable[[messages, tools, options], Step]


def call(name: str, arguments: dict | None = None, *, id: str | None = None, raw: str | None = None) -> ToolCall:
    """A ToolCall for scripts. `raw` sends arguments as exactly this text (e.g. malformed JSON)."""
    if raw is not None:
        return ToolCall.from_raw(id or "", name, raw)
    args = arguments or {}
    return ToolCall(id=id or "", name=name, raw_arguments=json.dumps(args, ensure_ascii=False), arguments=args)


def as_turn(step: Any, step_number: int) -> ModelTurn:
    """Normalise a script step to a ModelTurn, giving calls stable ids (call_<step>_<index>)."""
    if isinstance(step, ModelTurn):
        turn = step
    elif isinstance(step, str):
        turn = ModelTurn(text=step, stop="stop")
    elif isinstance(step, ToolCall):
        turn = ModelTurn(tool_calls=(step,), stop="tool_calls")
    elif isinstance(step, (list, tuple)) and all(isinstance(c, ToolCall) for c in step):
        turn = ModelTurn(tool_calls=tuple(step), stop="tool_calls" if step else "stop")
    else:
        raise ScriptError(f"script step {step_number} is a {type(step).__name__}; use a ModelTurn, a str, "
                          "a list of ToolCalls or a function returning one of them")
    calls = tuple(c if c.id else dataclasses.replace(c, id=f"call_{step_number}_{i}")
                  for i, c in enumerate(turn.tool_calls))
    if calls != turn.tool_calls:
        turn = dataclasses.replace(turn, tool_calls=calls)
    return turn


class ScriptedModel:
    """Plays back a list of steps, one per model call. Fails loudly on a missing or unused step."""

    def __init__(self, steps: Sequence[Step], name: str = "scripted"):
        self.steps = list(steps)
        self.name = name
        self.calls = 0
        self.requests: list[tuple[int, int, ModelOptions]] = []  # (messages, tools, options) per call
        self._lock = threading.Lock()

    def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec], options: ModelOptions) -> ModelTurn:
        with self._lock:
            index = self.calls
            self.calls += 1
        self.requests.append((len(messages), len(tools), options))
        if index >= len(self.steps):
            raise ScriptError(f"{self.name}: asked for step {index + 1}, but the script has only "
                              f"{len(self.steps)} steps (the loop called the model more often than planned)")
        step = self.steps[index]
        if callable(step) and not isinstance(step, (ToolCall, ModelTurn)):
            step = step(messages, tools, options)
        return as_turn(step, index + 1)

    async def acomplete(self, messages, tools, options) -> ModelTurn:
        return self.complete(messages, tools, options)

    @property
    def remaining(self) -> int:
        return len(self.steps) - self.calls

    def assert_complete(self) -> None:
        if self.calls < len(self.steps):
            raise ScriptError(f"{self.name}: {self.remaining} of {len(self.steps)} steps were never used "
                              f"(the loop stopped after {self.calls} model calls)")


class FunctionModel:
    """A model from a function (messages, tools, options) -> ModelTurn | str | list[ToolCall]."""

    def __init__(self, fn: Callable[[Sequence[Message], Sequence[ToolSpec], ModelOptions], Step],
                 name: str | None = None):
        self.fn = fn
        self.name = name or getattr(fn, "__name__", "function")
        self.calls = 0

    def complete(self, messages, tools, options) -> ModelTurn:
        self.calls += 1
        return as_turn(self.fn(messages, tools, options), self.calls)

    async def acomplete(self, messages, tools, options) -> ModelTurn:
        return self.complete(messages, tools, options)


# -- presets the notebooks use -------------------------------------------------------------------------

def tool_results_since_last_user(messages: Sequence[Message]) -> list[Message]:
    """The tool messages after the latest user message, oldest first: what a FunctionModel has just been told."""
    out = []
    for m in reversed(messages):
        if m.role == "user":
            break
        if m.role == "tool":
            out.append(m)
    return out[::-1]


def always_calls(tool: str, arguments: dict | Callable[[int], dict] | None = None) -> FunctionModel:
    """Calls `tool` at every step and never answers: the model only a limit can stop (claims C8, C9 in the README).

    `arguments` may be a function of the step number (1, 2, ...) so that each call differs.
    """
    def fn(messages, tools, options):
        step = sum(1 for m in messages if m.role == "assistant") + 1
        return [call(tool, arguments(step) if callable(arguments) else (arguments or {}))]
    return FunctionModel(fn, f"always_calls({tool})")


def repeats(tool: str, arguments: dict | None = None) -> FunctionModel:
    """Asks for the very same call (same name, same arguments) at every step (claim C16 in the README)."""
    return FunctionModel(lambda m, t, o: [call(tool, arguments or {})], f"repeats({tool})")


def parallel_calls(tool: str, n: int, arguments: Callable[[int], dict] | None = None,
                   answer: str = "All done.") -> FunctionModel:
    """Emits `n` calls of `tool` in one step, then answers once the results are in (claim C11 in the README)."""
    make = arguments or (lambda i: {"i": i})

    def fn(messages, tools, options):
        if tool_results_since_last_user(messages):
            return answer
        return [call(tool, make(i)) for i in range(n)]
    return FunctionModel(fn, f"parallel_calls({tool}, {n})")


def malformed_then_fixed(tool: str, arguments: dict, raw: str = '{"city": "Tok',
                         answer: str = "Fixed it.") -> FunctionModel:
    """First sends broken JSON arguments; after the error result, the valid call; then answers (C20)."""
    def fn(messages, tools, options):
        results = tool_results_since_last_user(messages)
        if not results:
            return [call(tool, raw=raw)]
        if all(m.is_error for m in results):
            return [call(tool, arguments)]
        return answer
    return FunctionModel(fn, f"malformed_then_fixed({tool})")
