"""The vocabulary of a decision: what the model plans, decides, reads back, and the situation it is in.

    PlannedCall   a call the model wants to make
    Decision      this turn: calls, or text (with `notes` on why)
    Observation   a tool result as the model reads it (a value, or an error with kind/message/path)
    TriedCall     one call made since the user's request, with its observation
    Situation     step 1's output: everything the later steps need
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...core.types import ModelOptions, ToolCall, ToolSpec


@dataclass(frozen=True)
class PlannedCall:
    """A call the model wants to make. `raw` is set only when it "writes" its arguments as (bad) text.
    `left_out` says, per required parameter it could not fill, why: (parameter, "the request names no
    city ..."); it is not part of the call (two calls with the same arguments are the same call)."""

    name: str
    arguments: dict | None
    raw: str | None = None
    left_out: tuple[tuple[str, str], ...] = field(default=(), compare=False, repr=False)


@dataclass(frozen=True)
class Decision:
    """What the model does this turn: call tools, or answer with text. `notes` say why; `left_out`, for
    the calls made, why a required argument is missing (the simulator's `x-sim-left-out` header)."""

    text: str | None = None
    calls: tuple[PlannedCall, ...] = ()
    notes: tuple[str, ...] = ()
    left_out: tuple[str, ...] = ()


@dataclass(frozen=True)
class Observation:
    """A tool result as the model reads it: a value, or an error with kind/message/path."""

    ok: bool
    value: Any = None
    kind: str = ""
    message: str = ""
    path: str | None = None
    keyword: str | None = None


@dataclass(frozen=True)
class TriedCall:
    """One call made since the user's request, with its result (paired by call id, else by name)."""

    call: ToolCall
    observation: Observation


@dataclass(frozen=True)
class Situation:
    """Step 1's output: everything the later steps need, read from the request."""

    text: str                    # the latest user request, NFKC-normalised
    language: str                # "en", "ja" or "zh"
    tools: tuple[ToolSpec, ...]  # offered tools with usable names, first of each name
    options: ModelOptions
    tried: tuple[TriedCall, ...]  # calls made since the request, in order, with what came back
    turns: int                   # assistant turns since the request
    earlier: str = ""            # the user's previous request, for follow-ups ("And in Osaka?")
