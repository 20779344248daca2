"""agentkit.core.trace: ordered, thread-safe events; spans paired per attempt; a stable table; JSON export."""

from __future__ import annotations

import itertools
import json
import threading

from agentkit.core.execute import Job, SequentialExecutor
from agentkit.core.trace import Event, Span, Trace


def ticking_clock(step: float):
    """A fake perf_counter that advances by `step` on every read."""
    counter = itertools.count()
    return lambda: next(counter) * step


def record_one_step(trace: Trace) -> None:
    """One event of every kind, in the order a step produces them (no time-valued fields)."""
    trace.record("model_request", step=1, messages=1, tools=2, tool_choice="auto", chars=40)
    trace.record("model_response", step=1, text_chars=0, tool_calls=1, stop="tool_calls", usage=[10, 5])
    trace.record("limit", limit="max_tool_calls", count=2, maximum=1, action="blocked")
    trace.record("gate", call_id="c1", tool="get_weather", gate="schema", ok=True, error=None)
    trace.record("tool_start", call_id="c1", tool="get_weather", attempt=1, worker="MainThread")
    trace.record("tool_end", call_id="c1", tool="get_weather", attempt=1, ok=False, error="RuntimeError")
    trace.record("retry", call_id="c1", tool="get_weather", attempt=2, delay=0.5)
    trace.record("result", call_id="c1", tool="get_weather", ok=True, error=None)
    trace.record("stop", reason="final_answer", steps=1, tool_calls=1)


KINDS = ["model_request", "model_response", "limit", "gate", "tool_start", "tool_end", "retry", "result",
         "stop"]


# -- recording -----------------------------------------------------------------------------------------------

def test_seq_counts_up_from_zero_and_time_never_goes_back():
    t = Trace()
    for i in range(50):
        t.record("gate", i=i)
    assert [e.seq for e in t.events] == list(range(50))
    assert all(a.t <= b.t for a, b in zip(t.events, t.events[1:]))
    assert all(e.t >= 0 for e in t.events)


def test_timestamps_are_relative_to_the_start_of_the_trace():
    t = Trace(clock=ticking_clock(0.5))  # t0 = 0.0
    first = t.record("a")
    second = t.record("b")
    assert (first.t, second.t) == (0.5, 1.0)
    assert t.now() == 1.5


def test_record_returns_the_event_it_appended():
    t = Trace()
    e = t.record("stop", reason="final_answer", steps=1)
    assert t.events == [e]
    assert (e.kind, e.data) == ("stop", {"reason": "final_answer", "steps": 1})


def test_recording_from_many_threads_loses_no_events_and_keeps_seq_and_time_in_step():
    t = Trace()
    n_threads, per_thread = 8, 500
    barrier = threading.Barrier(n_threads)

    def worker(w):
        barrier.wait()
        for i in range(per_thread):
            t.record("tool_start", worker=w, i=i)

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(n_threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(t.events) == n_threads * per_thread
    assert [e.seq for e in t.events] == list(range(n_threads * per_thread))
    assert all(a.t <= b.t for a, b in zip(t.events, t.events[1:]))
    for w in range(n_threads):  # each thread's own events stay in its order
        assert [e.data["i"] for e in t.events if e.data["worker"] == w] == list(range(per_thread))


def test_listeners_see_every_event_in_order_as_it_is_recorded():
    t = Trace()
    seen_a, seen_b = [], []
    t.listeners.append(seen_a.append)
    t.listeners.append(lambda e: seen_b.append((e.kind, len(t.events))))
    record_one_step(t)
    assert seen_a == t.events
    # a listener runs after the event is in the list
    assert seen_b == [(kind, i + 1) for i, kind in enumerate(KINDS)]


def test_listeners_see_every_event_recorded_from_threads():
    t = Trace()
    seen = []
    lock = threading.Lock()

    def listener(e):
        with lock:
            seen.append(e.seq)

    t.listeners.append(listener)
    threads = [threading.Thread(target=lambda: [t.record("x") for _ in range(200)]) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert sorted(seen) == list(range(800))


# -- reading -------------------------------------------------------------------------------------------------

def test_of_and_count_filter_by_kind_and_fields():
    t = Trace()
    record_one_step(t)
    t.record("result", call_id="c2", tool="search", ok=False, error="schema")
    assert [e.kind for e in t.of("result", "stop")] == ["result", "stop", "result"]
    assert t.count("result") == 2
    assert t.count("result", ok=False) == 1
    assert t.count("result", tool="search", ok=True) == 0
    assert t.count("nothing") == 0


def test_spans_pair_start_and_end_per_call_and_attempt_even_when_interleaved():
    t = Trace(clock=ticking_clock(1.0))
    t.record("tool_start", call_id="a", tool="slow", attempt=1, worker="w1")    # t=1
    t.record("tool_start", call_id="b", tool="fast", attempt=1, worker="w2")    # t=2
    t.record("tool_end", call_id="b", tool="fast", attempt=1, ok=True)          # t=3
    t.record("tool_end", call_id="a", tool="slow", attempt=1, ok=False)         # t=4
    t.record("tool_start", call_id="a", tool="slow", attempt=2, worker="w1")    # t=5
    t.record("tool_end", call_id="a", tool="slow", attempt=2, ok=True)          # t=6
    assert t.spans() == [Span("b", "fast", 2.0, 3.0, "w2", True, 1),
                         Span("a", "slow", 1.0, 4.0, "w1", False, 1),
                         Span("a", "slow", 5.0, 6.0, "w1", True, 2)]
    assert [s.duration for s in t.spans()] == [1.0, 3.0, 1.0]


def test_an_end_without_its_start_makes_no_span():
    t = Trace()
    t.record("tool_end", call_id="a", tool="x", attempt=1, ok=True)
    t.record("tool_start", call_id="b", tool="x", attempt=1, worker="w")
    assert t.spans() == []


# -- table ---------------------------------------------------------------------------------------------------

def test_table_has_a_header_and_one_row_per_event_naming_each_kind():
    t = Trace()
    record_one_step(t)
    lines = t.table().splitlines()
    assert lines[0].split() == ["seq", "event", "detail"]
    assert len(lines) == 1 + len(KINDS)
    for line, kind in zip(lines[1:], KINDS):
        assert kind in line


def test_table_without_times_is_the_same_whatever_the_clock():
    fast, slow = Trace(clock=ticking_clock(0.0001)), Trace(clock=ticking_clock(3.7))
    record_one_step(fast)
    record_one_step(slow)
    assert fast.table() == slow.table()
    assert fast.table(times=True) != slow.table(times=True)


def test_table_with_times_shows_milliseconds():
    t = Trace(clock=ticking_clock(0.0125))
    t.record("stop", reason="final_answer")
    assert "12.50ms" in t.table(times=True)
    assert "ms" not in t.table()


def test_table_leaves_out_none_fields_and_can_filter_kinds():
    t = Trace()
    record_one_step(t)
    gate_row = next(line for line in t.table().splitlines() if " gate " in line)
    assert "error=" not in gate_row and "gate=schema" in gate_row
    only = t.table(kinds=["stop", "limit"]).splitlines()
    assert len(only) == 3 and "limit" in only[1] and "stop" in only[2]


def test_table_cuts_long_details_at_the_width():
    t = Trace()
    t.record("model_response", text="x" * 500)
    row = t.table(width=40).splitlines()[1]
    assert row.endswith("…") and len(row.split(None, 2)[2]) == 40


def test_table_of_executed_tools_is_the_same_whatever_the_clock():
    def run_on(clock):
        t = Trace(clock=clock)
        SequentialExecutor().run_batch([Job("c1", "ping", lambda attempt: "pong")], t)
        return t

    fast, slow = run_on(ticking_clock(0.001)), run_on(ticking_clock(0.5))
    assert fast.table() == slow.table()
    assert "ping" in fast.table() and "duration" not in fast.table()
    assert "duration=" in fast.table(times=True)  # with times=True the durations are shown


def test_table_without_times_hides_worker_names_and_retry_delays():
    fast, slow = Trace(), Trace()
    fast.record("tool_start", call_id="c1", tool="t", attempt=1, worker="agentkit-threads_3")
    slow.record("tool_start", call_id="c1", tool="t", attempt=1, worker="agentkit-threads_0")
    for t, delay in ((fast, 0.41), (slow, 0.57)):
        t.record("retry", call_id="c1", tool="t", attempt=2, delay=delay)
    assert fast.table() == slow.table()
    assert "worker=agentkit-threads_3" in fast.table(times=True)


# -- JSON ----------------------------------------------------------------------------------------------------

def test_to_json_is_valid_json_with_flat_events():
    t = Trace()
    record_one_step(t)
    data = json.loads(t.to_json())
    assert [d["kind"] for d in data] == KINDS
    assert data[0] == {"seq": 0, "t": t.events[0].t, "kind": "model_request", "step": 1, "messages": 1,
                       "tools": 2, "tool_choice": "auto", "chars": 40}


def test_to_json_survives_values_that_are_not_json():
    t = Trace()
    t.record("result", error=ValueError("boom"), ids={7})
    data = json.loads(t.to_json(indent=None))
    assert data[0]["error"] == "boom" and data[0]["ids"] == "{7}"
    assert "\n" not in t.to_json(indent=None)


def test_event_to_dict_puts_the_data_beside_seq_t_and_kind():
    assert Event(3, 0.25, "stop", {"reason": "max_steps"}).to_dict() == {
        "seq": 3, "t": 0.25, "kind": "stop", "reason": "max_steps"}
