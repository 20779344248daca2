"""What compaction costs the loop, per step, as the conversation grows; and what a long Thread costs a run's start.

    python benchmarks/compaction.py            # median of 5 runs per row
    python benchmarks/compaction.py --runs 9   # steadier medians on a busy machine

A model that hands out precomputed turns and an instant tool, so what is measured is the loop (and the
compaction hook) itself. Two shapes of a long conversation, each at 50, 200 and 1,000 steps:

- one long turn: a single run, one tool call per step (a task of many tool calls). Compaction changes
  only earlier turns, so here the hook is asked every step and has nothing to drop: its cost is the
  asking (before: it re-walked the whole history three times a step and dropped rounds of the turn);
- a thread of turns: the same number of steps as many user turns on one Thread (each: one tool call,
  then an answer: two steps), so `DropOldest(keep_rounds=8)` drops earlier turns and sends a request of
  the same size from the tenth turn on.

Each row: microseconds per step without compaction, with `compact=DropOldest(keep_rounds=8)`, and their
ratio. And a run's start: one model call (an answer) continuing a Thread of 10,000 messages (one that had a
run before, so its messages were measured then), against the same run on an empty Thread, without and with
compaction; and, for the record, the first run on a Thread just made from 10,000 messages (it measures them,
once).

The cyclic garbage collector is off while a measurement runs (as `timeit` has it): a collection walks
every live object, and the 10,000-message Threads alone are 50,000 of them, so its pauses would be
charged to whichever run they happen to fall in.

Targets: a compacted step costs at most 2x the uncompacted one at 1,000 steps, and stays flat as the run
grows (1,000 steps within 1.5x of 50); a run continuing a 10,000-message Thread starts in at most 2x the
time of one on an empty Thread.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

import agentkit
from agentkit import Limits, Message, ModelTurn, Thread, ToolCall, ToolResult, tool
from agentkit.long_running.compaction import DropOldest
from loop_overhead import Replay  # the cheapest possible model, the loop benchmark's (run from benchmarks/)

LENGTHS = (50, 200, 1000)
KEEP = 8


@tool
def lookup(key: str) -> str:
    """Instant tool."""
    return "a result of some length " * 4


def call_turn(i: int) -> ModelTurn:
    return ModelTurn(tool_calls=(ToolCall(f"call_{i}", "lookup", f'{{"key": "k{i}"}}', {"key": f"k{i}"}),),
                     stop="tool_calls")


ANSWER = ModelTurn(text="done")


def one_long_turn(steps: int, compact) -> float:
    """Seconds for one run of `steps` model calls, a tool call in each but the last."""
    model = Replay([call_turn(i) for i in range(steps - 1)] + [ANSWER])
    start = time.perf_counter()
    r = agentkit.run(model, "go", tools=[lookup], limits=Limits(max_steps=None), executor="sequential",
                     compact=compact)
    elapsed = time.perf_counter() - start
    assert r.steps == steps and r.stop_reason == "final_answer", r.summary()
    return elapsed


def thread_of_turns(steps: int, compact) -> float:
    """Seconds for `steps` model calls as steps/2 user turns on one Thread (a call, then an answer, each)."""
    thread = Thread()
    models = [Replay([call_turn(t), ANSWER]) for t in range(steps // 2)]
    start = time.perf_counter()
    for t, model in enumerate(models):
        agentkit.run(model, f"question {t}", tools=[lookup], thread=thread, limits=Limits(max_steps=None),
                     executor="sequential", compact=compact)
    elapsed = time.perf_counter() - start
    assert len(thread.messages) == 2 * steps, len(thread.messages)
    return elapsed


def long_thread(messages: int) -> Thread:
    history: list[Message] = []
    for i in range(messages // 4):
        call = ToolCall(f"c{i}", "lookup", '{"key": "a"}', {"key": "a"})
        history += [Message.user(f"question {i}"), Message.assistant(None, [call]),
                    Message.tool(ToolResult.success(call, "r" * 50)), Message.assistant("done")]
    return Thread(history)


def run_start(messages: int, compact, runs: int, fresh: bool = False) -> float:
    """Seconds for one run of one model call (an answer) continuing a Thread of `messages` messages that has
    had a run already (or, `fresh`, a Thread just made from the messages: its first run measures them)."""
    threads = [long_thread(messages) for _ in range(runs)]
    if not fresh:
        for thread in threads:
            agentkit.run(Replay([ANSWER]), "first", thread=thread, executor="sequential", compact=compact)
    models = [Replay([ANSWER]) for _ in range(runs)]
    start = time.perf_counter()
    for thread, model in zip(threads, models):
        agentkit.run(model, "one more question", tools=[lookup], thread=thread, executor="sequential",
                     compact=compact)
    return (time.perf_counter() - start) / runs


def without_gc(measure, *args) -> float:
    gc.collect()
    gc.disable()
    try:
        return measure(*args)
    finally:
        gc.enable()


def median_us(measure, steps: int, runs: int, *args) -> float:
    measure(steps, *args)  # warm-up
    return statistics.median(without_gc(measure, steps, *args) for _ in range(runs)) / steps * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(f"per step, median of {args.runs} runs (DropOldest(keep_rounds={KEEP}))")
    print(f"{'shape':<18} {'steps':>6} {'none µs':>9} {'compact µs':>11} {'ratio':>6}")
    for name, measure in (("one long turn", one_long_turn), ("thread of turns", thread_of_turns)):
        for steps in LENGTHS:
            plain = median_us(measure, steps, args.runs, None)
            compacted = median_us(measure, steps, args.runs, DropOldest(keep_rounds=KEEP))
            print(f"{name:<18} {steps:>6} {plain:>9.1f} {compacted:>11.1f} {compacted / plain:>5.2f}x")
    print()
    print(f"a run's start (one model call), median of {args.runs} x 20 runs")
    print(f"{'thread':<18} {'none µs':>9} {'compact µs':>11}")
    rows = {}
    for size in (0, 10_000):
        rows[size] = [statistics.median(without_gc(run_start, size, compact, 20) for _ in range(args.runs)) * 1e6
                      for compact in (None, DropOldest(keep_rounds=KEEP))]
        print(f"{f'{size:,} messages':<18} {rows[size][0]:>9.1f} {rows[size][1]:>11.1f}")
    print(f"{'ratio':<18} {rows[10_000][0] / rows[0][0]:>8.2f}x {rows[10_000][1] / rows[0][1]:>10.2f}x")
    fresh = [statistics.median(without_gc(run_start, 10_000, compact, 20, True) for _ in range(args.runs)) * 1e6
             for compact in (None, DropOldest(keep_rounds=KEEP))]
    print(f"{'fresh 10,000':<18} {fresh[0]:>9.1f} {fresh[1]:>11.1f}   (a Thread just made: its messages measured once)")


if __name__ == "__main__":
    main()
