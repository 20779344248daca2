"""A paused run as plain data: what `Run.to_json()` writes and `agentkit.long_running.resume` reads back.

A run paused by an approval gate (`Pause()`) stops *before* the step whose calls wait for a decision:
that model answer is kept aside (`Run.pending`), not in the history, so the history a Thread or a provider sees
is valid as it stands (every call in it answered). The JSON holds the history, the waiting answer (with its
provider reasoning state), the counters as they were before that step, usage, state and results; not the
trace (its events stay in the process) and not the exception of a run that raised.

Left out on purpose: the model, the tools and the settings (code, not data: `resume` takes them again),
and a Thread's own counters (pass the Thread to `resume` if the run had one).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .types import Message, ModelTurn, ToolResult, Usage

#: The format's version: a state written by another version is refused with a clear error.
VERSION = 1


@dataclass(frozen=True)
class Paused:
    """A model answer whose calls wait for a decision, and the counters as they were before its step."""

    turn: ModelTurn
    waiting: tuple[str, ...]  # the ids of the calls an approval paused
    counters: dict = field(default_factory=dict)  # tool_call_count, invalid_calls, per_tool, repeats

    def to_dict(self) -> dict:
        return {"turn": self.turn.to_dict(), "waiting": list(self.waiting), "counters": self.counters}

    @classmethod
    def from_dict(cls, d: dict) -> Paused:
        return cls(ModelTurn.from_dict(d["turn"]), tuple(d["waiting"]), dict(d.get("counters") or {}))


def run_to_dict(run: Any) -> dict:
    """The JSON-ready state of a Run (see the module docstring for what is left out)."""
    return {
        "agentkit_run": VERSION,
        "run_id": run.run_id,
        "stop_reason": run.stop_reason.value if run.stop_reason is not None else None,
        "output": run.output if isinstance(run.output, (str, type(None))) else json.loads(json.dumps(
            run.output, default=str)),
        "messages": [m.to_dict() for m in run.messages],
        "start_index": run.start_index,
        "steps": run.steps, "tool_call_count": run.tool_call_count, "tool_runs": run.tool_runs,
        "invalid_calls": run.invalid_calls,
        "usage": run.usage.to_dict(),
        "usage_by_model": [[model, usage.to_dict()] for model, usage in run.usage_by_model.items()],
        "results": [r.to_dict() for r in run.results],
        "turns": [t.to_dict() for t in run.turns],
        "state": run.state,
        "pending": run.pending.to_dict() if run.pending is not None else None,
    }


def read_state(state: str | dict) -> dict:
    """A state written by `Run.to_json()` (the text, or its json.loads), checked: a clear error otherwise."""
    data = json.loads(state) if isinstance(state, (str, bytes)) else state
    if not isinstance(data, dict) or "agentkit_run" not in data:
        raise ValueError("not a saved agentkit run: give the text of Run.to_json() (or its json.loads)")
    if data["agentkit_run"] != VERSION:
        raise ValueError(f"a saved run of format {data['agentkit_run']!r}; this agentkit reads format {VERSION}")
    return data


def restored_fields(data: dict) -> dict:
    """The Run fields a saved state gives back, as objects."""
    return {
        "run_id": data["run_id"], "start_index": data["start_index"],
        "messages": [Message.from_dict(m) for m in data["messages"]],
        "steps": data["steps"], "tool_call_count": data["tool_call_count"], "tool_runs": data["tool_runs"],
        "invalid_calls": data["invalid_calls"], "usage": Usage.from_dict(data["usage"]),
        "usage_by_model": {model: Usage.from_dict(u) for model, u in data["usage_by_model"]},
        "results": [ToolResult.from_dict(r) for r in data["results"]],
        "turns": [ModelTurn.from_dict(t) for t in data.get("turns") or ()],
        "state": dict(data["state"]),
    }
