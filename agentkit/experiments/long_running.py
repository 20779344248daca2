"""Tutorial 11's experiments: budgets stopping a model that never stops, and what compaction saves.

    rows = budget_stops()                                  # each budget: stop reason, model calls, tokens, cost
    rows = budgets_across_pauses()                         # the same budgets, paused and resumed at every call
    series = tokens_per_call(model, strategies())          # input tokens per model call of a thread, per strategy
    fig = explore(model, input_budget=9000, strategy="drop oldest", keep=2)   # the playground's experiment

`never_ending()` is a scripted model whose usage per call is fixed by construction (so budgets are exact);
`tokens_per_call` measures a real model's usage (the simulator's counts, offline) over a conversation of
QUESTIONS, one search each: the request grows by each exchange, compaction cuts the earlier ones (never
the current turn), and the tool definitions are re-sent with every call.

Left out on purpose: real prices for the simulator (it has none: the tables here price it with a
made-up rate and say so).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from ..core.budgets import Price
from ..core.errors import RunError
from ..core.drive import run
from ..core.runs import Run, Thread
from ..core.policies import Limits
from ..core.tools import tool
from ..core.types import ModelTurn, Usage
from ..long_running.compaction import DropOldest, ElideToolResults, Summarize
from ..models import FunctionModel, call

#: What one call of `never_ending` spends, by construction: 1,200 input tokens (800 of them cached),
#: 60 output tokens (20 of them reasoning).
PER_CALL = Usage(1200, 60, reasoning_tokens=20, cached_tokens=800)
#: A made-up price for the scripted model (USD per million tokens), so that a cost budget has a rate.
MADE_UP_PRICE = {"scripted-model": Price(input=2.0, output=8.0, cached_input=0.5, source="made up for tutorial 11")}


@tool
def search(query: str) -> str:
    """Search the archive and return the matching passages.

    Args:
        query: What to look for.
    """
    return f"Passages for {query!r}: " + " ".join(f"[{i}] a long passage about {query} with dates, names "
                                                  f"and figures that the model may need later." for i in range(6))


def never_ending(usage: Usage = PER_CALL, model: str = "scripted-model",
                 answer: str = "Here is what I found so far.") -> FunctionModel:
    """Calls `search` every turn and never answers while tools are offered (tool_choice "none": it answers)."""
    def fn(messages, tools, options):
        if options.tool_choice == "none":
            return ModelTurn(text=answer, usage=usage, model=model)
        step = sum(m.role == "assistant" for m in messages) + 1
        return ModelTurn(tool_calls=(call("search", {"query": f"topic {step}"}),), usage=usage, model=model)
    return FunctionModel(fn, "never_ending")


class TickingClock:
    """A clock for the time budget that moves only when a tool runs (`seconds_per_tool` each), or when told
    that time passed (`wait`: a run waiting paused)."""

    def __init__(self, seconds_per_tool: float = 3.0):
        self.now, self.step = 0.0, seconds_per_tool

    def __call__(self) -> float:
        return self.now

    def tick(self, event: Any) -> None:
        if event.kind == "tool_end":
            self.now += self.step

    def wait(self, seconds: float) -> None:
        self.now += seconds


#: Each budget the tutorial shows, as Limits keywords (the time budget gets a TickingClock).
BUDGETS: dict[str, dict] = {
    "input tokens ≤ 5,000": {"max_tokens": {"input": 5000}},
    "output tokens ≤ 200": {"max_tokens": {"output": 200}},
    "reasoning tokens ≤ 50": {"max_tokens": {"reasoning": 50}},
    "cached tokens ≤ 3,000": {"max_tokens": {"cached": 3000}},
    "total tokens ≤ 6,000": {"max_tokens": {"total": 6000}},
    "cost ≤ $0.005": {"max_cost_usd": 0.005, "prices": MADE_UP_PRICE},
    "time ≤ 10 s": {"max_seconds": 10},
}


def budget_run(name: str, exit_behavior: str = "end") -> Run:
    """`never_ending` under one of BUDGETS (the partial run, if the budget raised)."""
    settings = dict(BUDGETS[name])
    clock = TickingClock() if "max_seconds" in settings else None
    limits = Limits(max_steps=30, exit_behavior=exit_behavior, clock=clock, **settings)
    try:
        return run(never_ending(), "Research everything about the archive.", tools=[search], limits=limits,
                   on_event=clock.tick if clock is not None else None)
    except RunError as error:
        return error.run


def paused_at_every_call(name: str, waiting: float = 86_400.0) -> Run:
    """`never_ending` under one of BUDGETS, its every search paused by an approval gate, saved as JSON (a
    restart), `waiting` seconds passing on the budget's clock while the decision waits, and resumed
    approving it, until the run ends."""
    from ..core.policies import Pause
    from ..long_running.resume import resume

    settings = dict(BUDGETS[name])
    clock = TickingClock() if "max_seconds" in settings else None
    limits = Limits(max_steps=30, clock=clock, **settings)
    model, on_event = never_ending(), clock.tick if clock is not None else None

    def gate(call_, ctx):
        return Pause()
    current = run(model, "Research everything about the archive.", tools=[search], limits=limits, approve=gate,
                  on_event=on_event)
    while current.stop_reason == "paused":
        saved = current.to_json()
        if clock is not None:
            clock.wait(waiting)  # a day passes while the decision waits: time the run did not run
        current = resume(saved, dict.fromkeys(current.pending.waiting, "approve"), model, tools=[search],
                         limits=limits, approve=gate, on_event=on_event)
    return current


def budgets_across_pauses(names: tuple[str, ...] = ("cost ≤ $0.005", "time ≤ 10 s")) -> list[tuple]:
    """One row per budget: (budget, stop reason and model calls in one go, the same paused at every call)."""
    rows = []
    for name in names:
        once, paused = budget_run(name), paused_at_every_call(name)
        rows.append((name, f"{once.stop_reason} after {once.steps} calls",
                     f"{paused.stop_reason} after {paused.steps} calls"))
    return rows


def budget_stops(exit_behavior: str = "end") -> list[tuple]:
    """One row per budget: (budget, stop reason, model calls, tool runs, input, output, cost in USD)."""
    rows = []
    for name in BUDGETS:
        r = budget_run(name, exit_behavior)
        rows.append((name, str(r.stop_reason), r.steps, r.tool_runs, r.usage.input_tokens, r.usage.output_tokens,
                     round(r.cost(MADE_UP_PRICE).usd, 5)))
    return rows


def strategies(summariser: Any = None, keep: int = 2) -> dict[str, Callable | None]:
    """The compaction strategies compared: none, and each of the three keeping `keep` rounds or results."""
    out: dict[str, Callable | None] = {"no compaction": None, "drop oldest": DropOldest(keep_rounds=keep),
                                       "elide old results": ElideToolResults(keep_last=keep)}
    if summariser is not None:
        out["summarize"] = Summarize(summariser, keep_rounds=keep)
    return out


#: A conversation of ten requests, each answered after one search (by the simulator's sim-reasoner).
TOPICS = ("the harbour", "the lighthouse", "the old mill", "the market square", "the railway", "the cathedral",
          "the river bridge", "the town hall", "the school", "the flood of 1953")
QUESTIONS = tuple(f"Search the archive for {topic}." for topic in TOPICS)


def a_conversation(model: Any, hook: Callable | None, questions: Sequence[str] = QUESTIONS,
                   limits: Limits | None = None) -> Thread:
    """`questions` asked one after another on one Thread, each a run with compaction `hook`; stops early
    when a run ends otherwise than with its answer (a budget)."""
    thread = Thread()
    for question in questions:
        try:
            done = run(model, question, tools=[search], thread=thread, compact=hook, limits=limits)
        except RunError:
            break
        if done.stop_reason != "final_answer":
            break
    return thread


def tokens_per_call(model: Any, hooks: Mapping[str, Callable | None],
                    questions: Sequence[str] = QUESTIONS) -> dict[str, list[int]]:
    """Input tokens `model` reported for each of its calls over the conversation of `questions`, per
    compaction strategy."""
    return {name: [t.usage.input_tokens for r in a_conversation(model, hook, questions).runs for t in r.turns]
            for name, hook in hooks.items()}


def tool_definition_tokens(model: Any, prompt: str = "Say hello.") -> int:
    """How many input tokens the tool definitions add to one request, as `model` counts them (one call with
    the tools, one without: the difference)."""
    from ..core.types import Message, ModelOptions

    with_tools = model.complete([Message.user(prompt)], (search.spec,), ModelOptions(tool_choice="none"))
    without = model.complete([Message.user(prompt)], (), ModelOptions())
    return with_tools.usage.input_tokens - without.usage.input_tokens


def explore(model: Any, input_budget: int = 9000, exit_behavior: str = "end", strategy: str = "no compaction",
            keep: int = 2, summariser: Any = None) -> Any:
    """The playground: the conversation of QUESTIONS under an input-token budget for the whole thread
    (Limits.max_thread_tokens) and a compaction strategy; the chart shows the input tokens of each model
    call, the budget and where the conversation stopped. `summariser` writes the summaries of "summarize"
    (default: `model` itself)."""
    from ..viz import finish, pyplot

    hook = strategies(summariser or model, keep)[strategy]
    limits = Limits(max_steps=15, max_thread_tokens={"input": input_budget}, exit_behavior=exit_behavior)
    thread = a_conversation(model, hook, limits=limits)
    last = thread.runs[-1]
    per_call = [t.usage.input_tokens for r in thread.runs for t in r.turns]
    running = [sum(per_call[:i + 1]) for i in range(len(per_call))]
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 3.2))
    ax.bar(range(1, len(per_call) + 1), per_call, color="#4C72B0", label="input tokens of the call")
    ax.plot(range(1, len(running) + 1), running, marker="o", color="#DD8452", label="input tokens so far")
    ax.axhline(input_budget, linestyle="--", color="#C44E52", label=f"budget: {input_budget:,}")
    ax.set_xlabel("model call")
    ax.set_ylabel("tokens")
    answered = sum(r.stop_reason == "final_answer" for r in thread.runs)
    ending = "" if answered == len(QUESTIONS) else f"; question {len(thread.runs)} stopped: {last.stop_reason}"
    ax.set_title(f"{strategy}, keep {keep}, exit_behavior={exit_behavior!r}: {answered} of {len(QUESTIONS)} "
                 f"questions answered{ending}", fontsize=9)
    ax.legend(frameon=False, fontsize=7, loc="upper left")
    return finish(fig)
