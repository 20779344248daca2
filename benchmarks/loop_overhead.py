"""Per-step cost of the loop: scripted model, instant tool, validation and trace on.

    python benchmarks/loop_overhead.py

One "step" = one model call + one tool call (lookup, parse, schema, rules, execute, envelope, trace).
The model replays precomputed turns, so what is measured is the loop itself. Median of 5 runs after a
warm-up, for runs of 50 and 200 steps: a loop whose per-step work does not grow with the history gives
the same figure for both. Target: <= 50 us per step (LangGraph create_agent: 1,150 us at 200 steps).
"""

from __future__ import annotations

import statistics
import time

import agentkit
from agentkit import Limits, ModelTurn, ToolCall, tool


@tool
def lookup(key: str, limit: int = 10) -> str:
    """Instant tool."""
    return key


class Replay:
    """The cheapest possible model: hands out precomputed turns."""

    def __init__(self, turns):
        self.turns, self.i = turns, 0

    def complete(self, messages, tools, options):
        turn = self.turns[self.i]
        self.i += 1
        return turn


def make_turns(steps: int) -> list[ModelTurn]:
    turns = [ModelTurn(tool_calls=(ToolCall(f"call_{i}", "lookup", f'{{"key": "k{i}", "limit": 5}}',
                                            {"key": f"k{i}", "limit": 5}),), stop="tool_calls")
             for i in range(steps - 1)]
    return turns + [ModelTurn(text="done")]


def per_step_us(steps: int, executor: str) -> float:
    model = Replay(make_turns(steps))
    start = time.perf_counter()
    r = agentkit.run(model, "go", tools=[lookup], limits=Limits(max_steps=None), executor=executor)
    elapsed = time.perf_counter() - start
    assert r.steps == steps and r.stop_reason == "final_answer", r.summary()
    return elapsed / steps * 1e6


def main() -> None:
    print(f"{'executor':<11} {'steps':>5} {'median us/step':>15} {'min':>8} {'max':>8}")
    for executor in ("threads", "sequential"):
        for steps in (50, 200):
            per_step_us(steps, executor)  # warm-up: caches, validators, imports
            samples = [per_step_us(steps, executor) for _ in range(5)]
            print(f"{executor:<11} {steps:>5} {statistics.median(samples):>15.1f} {min(samples):>8.1f} "
                  f"{max(samples):>8.1f}")
    print("target: <= 50 us per step; LangGraph create_agent 1,000 us (50 steps) / 1,150 us (200 steps)")


if __name__ == "__main__":
    main()
