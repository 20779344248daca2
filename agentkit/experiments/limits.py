"""Tutorial 06's experiments: tool-call caps per run, per thread and per tool, with each exit behaviour.

    runs = limited_runs("per run", cap=3, exit_behavior="continue", max_steps=30)
    table = limit_behaviours(cap=3, max_steps=30)   # continue / end / error: model calls, tool runs, stop
    fig = explore_limits(scope="per tool", cap=2)    # the playground's experiment: what became of each call

The models are scripted (`FunctionModel`): one that never stops calling tools, the misbehaviour a cap is
for (README claims C8, C9), and, for the per-thread cap, a polite one that makes one call per question and
then answers, over several questions on one Thread.

Left out on purpose: the step cap's own experiments, the repeat cap and the stop reasons other than
tool_limit; tutorial 06 runs those directly, a line each.
"""

from __future__ import annotations

from typing import Any, Callable

from ..core.errors import RunError
from ..core.drive import run
from ..core.runs import Run, Thread
from ..core.policies import ExitBehavior, Limits
from ..core.tools import tool
from ..models import FunctionModel, call

SCOPES = ("per run", "per thread", "per tool")
BEHAVIOURS: tuple[ExitBehavior, ...] = ("continue", "end", "error")


@tool
def search(query: str) -> str:
    """Search the web.

    Args:
        query: What to look for.
    """
    return f"3 results for {query!r}"


@tool
def get_time(city: str) -> str:
    """Current local time in a city.

    Args:
        city: City name, e.g. "Tokyo".
    """
    return f"{city}: 09:30"


_FRESH_ARGUMENTS: dict[str, Callable[[int], dict]] = {
    "search": lambda step: {"query": f"attempt {step}"},
    "get_time": lambda step: {"city": ("Tokyo", "Osaka", "Paris")[step % 3]},
}


def never_stops(*tools: str) -> FunctionModel:
    """A model that calls these tools (default: search) every turn, with fresh arguments, and never answers."""
    names = tools or ("search",)

    def decide(messages, offered, options):
        step = sum(1 for m in messages if m.role == "assistant") + 1
        return [call(name, _FRESH_ARGUMENTS[name](step)) for name in names]
    return FunctionModel(decide, "never_stops")


def one_call_per_question() -> FunctionModel:
    """A polite model: one search per user question, then an answer."""
    def decide(messages, offered, options):
        if messages[-1].role == "user":
            return [call("search", {"query": messages[-1].content or ""})]
        return "Here is what I found."
    return FunctionModel(decide, "one_call_per_question")


def limits_for(scope: str, cap: int, exit_behavior: ExitBehavior = "end", max_steps: int | None = 12) -> Limits:
    """The Limits that put `cap` on search calls in this scope."""
    caps = {"per run": {"max_tool_calls": cap}, "per thread": {"max_thread_tool_calls": cap},
            "per tool": {"max_calls_per_tool": {"search": cap}}}
    if scope not in caps:
        raise ValueError(f"scope={scope!r}: use one of {', '.join(SCOPES)}")
    return Limits(max_steps=max_steps, exit_behavior=exit_behavior, **caps[scope])


def limited_runs(scope: str = "per run", cap: int = 3, exit_behavior: ExitBehavior = "end",
                 max_steps: int | None = 12, questions: int = 5) -> list[Run]:
    """The runs of one experiment, the partial Run of a run that raised included (its `error` is set).

    per run     one run of a model that calls search every turn
    per tool    one run of a model that calls search *and* get_time every turn; only search is capped
    per thread  `questions` runs on one Thread, one search per question
    """
    limits = limits_for(scope, cap, exit_behavior, max_steps)
    if scope == "per thread":
        thread, model = Thread(), one_call_per_question()
        prompts = [f"question {i}" for i in range(1, questions + 1)]
    else:
        thread, model = None, never_stops(*(("search", "get_time") if scope == "per tool" else ("search",)))
        prompts = ["Find everything about agent loops."]
    runs = []
    for prompt in prompts:
        try:
            runs.append(run(model, prompt, tools=[search, get_time], limits=limits, thread=thread))
        except RunError as error:  # exit_behavior="error": the partial run, and the thread goes on
            runs.append(error.run)
    return runs


def limit_behaviours(scope: str = "per run", cap: int = 3, max_steps: int | None = 30,
                     questions: int = 5) -> dict[str, dict[str, Any]]:
    """continue / end / error side by side: model calls and tool runs (summed over the runs), how the last
    run stopped, whether a run raised, and the last assistant message."""
    table = {}
    for behaviour in BEHAVIOURS:
        runs = limited_runs(scope, cap, behaviour, max_steps, questions)
        last = runs[-1]
        table[behaviour] = {
            "model calls": sum(r.steps for r in runs), "tool runs": sum(r.tool_runs for r in runs),
            "stop": str(last.stop_reason),
            "raised": next((type(r.error).__name__ for r in runs if r.error is not None), None),
            "last message": next((m.content for m in reversed(last.messages) if m.role == "assistant"), None),
        }
    return table


def explore_limits(scope: str = "per run", cap: int = 3, exit_behavior: ExitBehavior = "end",
                   max_steps: int = 12) -> Any:
    """The playground of tutorial 06: one experiment of `limited_runs`, drawn call by call."""
    from .. import viz

    runs = limited_runs(scope, cap, exit_behavior, max_steps)
    model_calls, tool_runs = sum(r.steps for r in runs), sum(r.tool_runs for r in runs)
    return viz.calls_per_step(runs, title=f"{scope} cap {cap}, exit_behavior={exit_behavior!r}, max_steps={max_steps}:"
                                          f" {model_calls} model calls, {tool_runs} tool runs")
