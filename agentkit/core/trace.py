"""What happened in a run, in order: every event with a monotonic timestamp.

    run = agentkit.run(model, "What's the weather in Tokyo?", tools=[get_weather])
    print(run.trace.table())          # a readable table for notebooks
    run.trace.to_json()               # the same events as JSON, for files and diffs

Event kinds (the `kind` field), in the order a step produces them:

    tools_changed   step, tools (names): a run given a function for its tools found a new list
    model_request   step, messages, tools, tool_choice, chars (request size, counted incrementally)
    model_response  step, text_chars, tool_calls, stop, usage
    limit           call_id (for a tool-call cap), limit (the Limits field), count, maximum, action
                    ("blocked", "end", "error"); recorded once, where the cap is reached
    gate            call_id, tool, gate ("lookup", "parse", "schema", "rules", "approval"), ok, error
    tool_start      call_id, tool, attempt, worker
    tool_end        call_id, tool, attempt, ok, error, duration
    retry           call_id, tool, attempt, delay
    result          call_id, tool, ok, error (the error kind)
    stop            reason, steps, tool_calls (Run.tool_call_count); always the last event of a run

Tools add their own with ToolContext.record (kind "payload" by default: the raw downstream answer);
agentkit.mcp records "mcp_result" (the raw CallToolResult) and "mcp_refresh" (the tool list read again).

Timestamps come from `time.perf_counter()` relative to the trace's start, so they only ever go up.
Recording is one small object appended to a list: the trace costs about a microsecond per event and
does not grow with the length of the conversation.

Left out on purpose: sampling, log levels, OpenTelemetry export (a JSON export is easy to map).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, NamedTuple


class Event(NamedTuple):
    """One thing that happened. A NamedTuple, not a dataclass: it is built on the loop's hot path."""

    seq: int
    t: float  # seconds since the trace started (monotonic)
    kind: str
    data: dict

    def to_dict(self) -> dict:
        return {"seq": self.seq, "t": self.t, "kind": self.kind, **self.data}


_new_tuple = tuple.__new__


@dataclass(frozen=True)
class Span:
    """One tool execution attempt on the timeline: which worker ran it, from when to when."""

    call_id: str
    tool: str
    start: float
    end: float
    worker: str
    ok: bool
    attempt: int = 1

    @property
    def duration(self) -> float:
        return self.end - self.start


#: Event fields that differ between two runs of the same thing (left out of `table()` by default).
VOLATILE = frozenset({"duration", "worker", "delay"})


class Trace:
    """An append-only, thread-safe list of events. `listeners` see each event as it is recorded."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter):
        self._clock = clock
        self._t0 = clock()
        self._lock = threading.Lock()
        self.events: list[Event] = []
        self.listeners: list[Callable[[Event], Any]] = []

    def now(self) -> float:
        return self._clock() - self._t0

    def record(self, kind: str, /, **data: Any) -> Event:
        events = self.events
        with self._lock:  # tool workers record from several threads
            # tuple.__new__ directly: the NamedTuple's own __new__ is one Python call more, six times a step
            event = _new_tuple(Event, (len(events), self._clock() - self._t0, kind, data))
            events.append(event)
        if self.listeners:
            for listener in self.listeners:
                listener(event)
        return event

    # -- reading ------------------------------------------------------------------------------------
    def of(self, *kinds: str) -> list[Event]:
        return [e for e in self.events if e.kind in kinds]

    def count(self, kind: str, **match: Any) -> int:
        return sum(1 for e in self.events if e.kind == kind and all(e.data.get(k) == v for k, v in match.items()))

    def spans(self) -> list[Span]:
        """Tool attempts as spans, paired from tool_start/tool_end events."""
        starts: dict[tuple, Event] = {}
        spans = []
        for e in self.events:
            key = (e.data.get("call_id"), e.data.get("attempt"))
            if e.kind == "tool_start":
                starts[key] = e
            elif e.kind == "tool_end" and key in starts:
                s = starts.pop(key)
                spans.append(Span(e.data["call_id"], e.data["tool"], s.t, e.t, s.data.get("worker", ""),
                                  bool(e.data.get("ok")), e.data.get("attempt", 1)))
        return spans

    def to_dicts(self) -> list[dict]:
        return [e.to_dict() for e in self.events]

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dicts(), ensure_ascii=False, indent=indent, default=str)

    def table(self, kinds: Iterable[str] | None = None, times: bool = False, width: int = 100) -> str:
        """A fixed-width text table, one event per row.

        `times=False` (the default) leaves out everything that changes from run to run — timestamps,
        durations, retry delays and which worker thread ran a call — so a notebook's output is stable.
        """
        wanted = set(kinds) if kinds else None
        rows = []
        for e in self.events:
            if wanted and e.kind not in wanted:
                continue
            detail = ", ".join(f"{k}={_short(v)}" for k, v in e.data.items()
                               if v is not None and (times or k not in VOLATILE))
            if len(detail) > width:
                detail = detail[: width - 1] + "…"
            stamp = f"{e.t * 1000:9.2f}ms " if times else ""
            rows.append(f"{e.seq:>4} {stamp}{e.kind:<15} {detail}")
        head = f"{'seq':>4} {'t':>11} " if times else f"{'seq':>4} "
        return "\n".join([head + f"{'event':<15} detail", *rows])


def _short(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_short(v) for v in value) + "]"
    return str(value)
