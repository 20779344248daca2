"""Per-step cost of the loop: replayed model turns, one instant tool call per step, validation and trace on.

    python benchmarks/loop_overhead.py            # median of 5 runs per row
    python benchmarks/loop_overhead.py --runs 9   # more runs, steadier medians on a busy machine

One "step" = one model call + one tool call (lookup, parse, schema, rules, execute, envelope, trace).
The model hands out precomputed turns, so what is measured is the loop itself. Each row is the median of
several runs after a warm-up, for runs of 50, 200 and 1,000 steps: a loop whose per-step work does not
grow with the history gives the same figure for every length.

Rows: `run()` on its default executor (threads) and on the sequential one; `run()` with every budget on
(tokens, cost and time: turns carry usage and a priced model name, so each step adds up tokens, prices
them and reads the clock); `arun()` on its default
executor (asyncio) with the same *sync* tool and a model with `acomplete`, awaited inside one running
event loop, as in an async application or a notebook (starting an event loop is not the loop's cost).

Targets: `run()` <= 25 us per step at 50 steps, also with budgets on; `arun()` <= 1.5 x `run()`; all flat
to 1,000 steps.
Peers, measured the same way on this machine kind in November 2026 (offline scripted models, medians of 5
runs after a warm-up): LangGraph 1.2.24 create_agent 1,000 us (50 steps) / 1,150 us (200 steps).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

import agentkit
from agentkit import Limits, ModelTurn, ToolCall, Usage, tool

LENGTHS = (50, 200, 1000)


@tool
def lookup(key: str, limit: int = 10) -> str:
    """Instant tool."""
    return key


class Replay:
    """The cheapest possible model: hands out precomputed turns (sync and async, like HTTPModel)."""

    def __init__(self, turns: list[ModelTurn]):
        self.turns, self.i = turns, 0

    def complete(self, messages, tools, options) -> ModelTurn:
        turn = self.turns[self.i]
        self.i += 1
        return turn

    async def acomplete(self, messages, tools, options) -> ModelTurn:
        return self.complete(messages, tools, options)


#: Every budget on, none ever reached: what the checks themselves cost.
BUDGETS = Limits(max_steps=None, max_tokens={"total": 10**12, "output": 10**12}, max_cost_usd=10.0**9,
                 max_seconds=10.0**9)


def make_turns(steps: int, usage: Usage | None = None) -> list[ModelTurn]:
    spent = {"usage": usage, "model": "claude-sonnet-4-5"} if usage is not None else {}
    turns = [ModelTurn(tool_calls=(ToolCall(id=f"call_{i}", name="lookup",
                                            raw_arguments=f'{{"key": "k{i}", "limit": 5}}',
                                            arguments={"key": f"k{i}", "limit": 5}),), stop="tool_calls",
                       **spent)
             for i in range(steps - 1)]
    return turns + [ModelTurn(text="done", **spent)]


def per_step_us(steps: int, driver: str) -> float:
    budgets = driver == "run, budgets"
    model = Replay(make_turns(steps, Usage(1200, 40, 0, 800) if budgets else None))
    limits = BUDGETS if budgets else Limits(max_steps=None)
    executor = "sequential" if driver == "run, sequential" else "threads"
    start = time.perf_counter()
    r = agentkit.run(model, "go", tools=[lookup], limits=limits, executor=executor)
    elapsed = time.perf_counter() - start
    assert r.steps == steps and r.stop_reason == "final_answer", r.summary()
    return elapsed / steps * 1e6


async def aper_step_us(steps: int) -> float:
    model = Replay(make_turns(steps))
    limits = Limits(max_steps=None)
    start = time.perf_counter()
    r = await agentkit.arun(model, "go", tools=[lookup], limits=limits)
    elapsed = time.perf_counter() - start
    assert r.steps == steps and r.stop_reason == "final_answer", r.summary()
    return elapsed / steps * 1e6


def samples_of(driver: str, steps: int, runs: int) -> list[float]:
    """A warm-up run (caches, validators, imports, worker threads), then `runs` measured ones."""
    if driver != "arun":
        return [per_step_us(steps, driver) for _ in range(runs + 1)][1:]

    async def all_runs() -> list[float]:
        return [await aper_step_us(steps) for _ in range(runs + 1)][1:]
    return asyncio.run(all_runs())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per row (the median is printed)")
    runs = parser.parse_args().runs

    print(f"{'driver':<16} {'steps':>5} {'median us/step':>15} {'min':>8} {'max':>8}")
    medians: dict[tuple[str, int], float] = {}
    for driver in ("run", "run, sequential", "run, budgets", "arun"):
        for steps in LENGTHS:
            samples = samples_of(driver, steps, runs)
            medians[driver, steps] = statistics.median(samples)
            print(f"{driver:<16} {steps:>5} {medians[driver, steps]:>15.1f} {min(samples):>8.1f} "
                  f"{max(samples):>8.1f}")
    ratios = ", ".join(f"{medians['arun', n] / medians['run', n]:.2f} x at {n}" for n in LENGTHS)
    print(f"arun / run: {ratios}")
    print("targets: run <= 25 us per step at 50 steps (also with budgets); arun <= 1.5 x run; flat to 1,000 steps")


if __name__ == "__main__":
    main()
