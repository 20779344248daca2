"""Tutorial 04's experiments: the same injected failures under every error strategy, and a seeded sweep.

    cells = failure_matrix()               # {(failure, strategy): Cell}: what each strategy made of each failure
    count = count_retries(Retry())         # runs of an always-failing tool, and the back-off between them
    rows = sweep(runs=50, seed=0)          # per strategy and failure rate: success, tool runs, model calls, time
    fig = explore_retries(max_retries=2)   # the playground's experiment: the sweep as four charts

Every run here is driven by a scripted model (`ScriptedModel` or `FunctionModel`): the point is what the
*loop* does with a failure, the same way every time, not what a model decides. Tutorial 04 shows real model
behaviour (fixing a call, choosing another tool, explaining) on the simulator instead.

Time runs on a `VirtualClock`: the back-off a Retry waits (the executor's `sleep` is the clock's) and the
latency given for each model call and tool run are added up, not slept. A sweep of two thousand runs then
takes about a second and gives the same seconds on every machine; it is the wall time the runs would take
with those latencies, without the loop's own microseconds (tutorial 04 checks one run against the clock).

Left out on purpose: failures of the model call itself (tutorial 07), and concurrency (every run here uses
the sequential executor, so its time is a plain sum).
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass
from typing import Any, Mapping, NamedTuple, Sequence

from ..core.errors import RunError
from ..core.execute import SequentialExecutor
from ..core.drive import run
from ..core.runs import Run, StopReason
from ..core.policies import ErrorPolicyLike, Retry
from ..core.tools import Tool, tool
from ..core.types import ToolCall
from ..models import FunctionModel, ScriptedModel, call, tool_results_since_last_user


class VirtualClock:
    """Time that passes only when told to: `sleep(s)` adds s to `now` and returns at once.

        clock = VirtualClock()
        executor = SequentialExecutor(sleep=clock.sleep)   # a Retry's back-off now costs no real time
    """

    def __init__(self) -> None:
        self.now = 0.0
        self._lock = threading.Lock()  # tools may sleep from worker threads

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.now += seconds


# -- the six injected failures, all aimed at one tool ----------------------------------------------------

FORECASTS = {"Tokyo": "sunny", "Osaka": "cloudy", "Paris": "rain"}
UPSTREAM_ERROR = ("upstream 503 from forecast-db.internal.example.com:5432 while running "
                  "SELECT * FROM forecasts WHERE city = 'Oslo'")


def forecast_tool(timeout: float = 0.05, hang: float = 0.3) -> Tool:
    """`get_forecast(city, days)`: a read-only tool (idempotent) with three cities of data and three traps.

    Atlantis has no data (LookupError), Oslo makes the upstream database fail with a message full of
    internals (RuntimeError), Lima makes it hang for `hang` seconds, past the tool's `timeout`.
    """
    @tool(idempotent=True, timeout=timeout)
    def get_forecast(city: str, days: int = 1) -> dict:
        """Weather forecast for a city.

        Args:
            city: City name in English, e.g. "Tokyo".
            days: How many days ahead, 1 to 7.
        """
        if city == "Oslo":
            raise RuntimeError(UPSTREAM_ERROR)
        if city == "Lima":
            time.sleep(hang)  # the upstream hangs; the loop gives up after `timeout`
        if city not in FORECASTS:
            raise LookupError(f"no forecast for {city!r}")
        return {"city": city, "days": days, "sky": FORECASTS[city]}
    return get_forecast


class Failure(NamedTuple):
    """One injected failure: a label, what goes wrong, and the call a scripted model sends to cause it."""

    name: str
    what: str
    call: ToolCall


FAILURES: tuple[Failure, ...] = (
    Failure("wrong argument type", "days is the string \"three\", not an integer (schema gate)",
            call("get_forecast", {"city": "Tokyo", "days": "three"})),
    Failure("unknown tool", "the model misspells the tool's name (lookup)",
            call("get_forcast", {"city": "Tokyo"})),
    Failure("missing data", "there is no forecast for Atlantis (the tool raises LookupError)",
            call("get_forecast", {"city": "Atlantis"})),
    Failure("exception in the tool", "the upstream database fails (RuntimeError naming a host and SQL)",
            call("get_forecast", {"city": "Oslo"})),
    Failure("timeout", "the upstream hangs past the tool's timeout (ToolTimeout)",
            call("get_forecast", {"city": "Lima"})),
    Failure("bad JSON", "the arguments are cut off mid-string (parse gate)",
            call("get_forecast", raw='{"city": "Tok')),
)


# -- the strategies: every kind of on_tool_error value ------------------------------------------------------

def langgraph_default(exc: BaseException, tool_call: ToolCall) -> str | None:
    """Raise for every exception inside a tool; argument errors and unknown tools are still reported.
    That is exactly what LangGraph's ToolNode does by default (README claim C5)."""
    return None


def own_words(exc: BaseException, tool_call: ToolCall) -> str | None:
    """Choose the words per exception class, and raise for anything unexpected (README claim C6)."""
    if isinstance(exc, TimeoutError):
        return f"{tool_call.name} timed out. Try again in a minute, or tell the user it is slow today."
    if isinstance(exc, LookupError):
        return "There is no forecast for that city. Ask the user for a nearby larger city."
    return None


FIXED_TEXT = "The forecast service failed. Apologise and suggest trying again later."

STRATEGIES: dict[str, ErrorPolicyLike] = {
    "raise": "raise",
    "report": "report",
    "fixed text": FIXED_TEXT,
    "class: TimeoutError": TimeoutError,
    "function → None": langgraph_default,
    "function: own words": own_words,
    "Retry → report": Retry(max_retries=2),
    "Retry → raise": Retry(max_retries=2, on_failure="raise"),
}


@dataclass(frozen=True)
class Cell:
    """What one strategy made of one failure."""

    failure: str
    strategy: str
    raised: str | None  # the exception class that ended the run, or None
    kind: str | None  # the error kind the model read; "text" when a policy's own words replaced the envelope
    reads: str  # the tool message the model reads for the call (also in the partial run when it raised)
    tool_runs: int  # executions of the tool, retries included
    backoff: float  # seconds a Retry waited between them

    @property
    def category(self) -> str:
        """"raises", "reports" or "own text": the colour of the cell in tutorial 04's grid."""
        return "raises" if self.raised else ("own text" if self.kind == "text" else "reports")

    @property
    def label(self) -> str:
        head = {"raises": "raises", "own text": "own text", "reports": f"reports {self.kind}"}[self.category]
        return head + (f"\n{self.tool_runs} runs" if self.tool_runs > 1 else "")


def run_once(policy: ErrorPolicyLike, tool_call: ToolCall, tools: Sequence[Tool],
             clock: VirtualClock | None = None, *, seed: int = 0) -> tuple[Run, RunError | None]:
    """One call under one policy: the model sends `tool_call`, then answers "done". The Run (the partial
    one when the run raised) and the RunError it raised, if any. `seed` fixes a Retry's jitter."""
    clock = clock or VirtualClock()
    model = ScriptedModel([[tool_call], "done"])
    try:
        return run(model, "Forecast, please.", tools=tools, on_tool_error=policy,
                   executor=SequentialExecutor(sleep=clock.sleep, seed=seed)), None
    except RunError as error:
        return error.run, error


def failure_matrix(strategies: Mapping[str, ErrorPolicyLike] | None = None,
                   failures: Sequence[Failure] = FAILURES, tools: Sequence[Tool] | None = None
                   ) -> dict[tuple[str, str], Cell]:
    """Every failure under every strategy: {(failure name, strategy name): Cell}."""
    strategies = STRATEGIES if strategies is None else strategies
    tools = [forecast_tool()] if tools is None else list(tools)
    cells = {}
    for failure in failures:
        for name, policy in strategies.items():
            clock = VirtualClock()
            result, error = run_once(policy, failure.call, tools, clock)
            (answer,) = result.results  # one call, one result, whatever ended the run
            kind = "text" if answer.text is not None else answer.error_kind
            cells[failure.name, name] = Cell(failure.name, name, type(error).__name__ if error else None, kind,
                                             answer.content(), result.tool_runs, clock.now)
    return cells


# -- C7: how often a Retry runs a tool, and what the back-off costs ----------------------------------------

@dataclass(frozen=True)
class RetryCount:
    tool_runs: int
    delays: tuple[float, ...]  # the back-off before each retry, in seconds (from the trace's retry events)
    raised: str | None
    reads: str  # what the model reads in the end


def count_retries(policy: ErrorPolicyLike, idempotent: bool = True, seed: int = 0) -> RetryCount:
    """Run a tool that always raises TimeoutError under `policy`, on a virtual clock."""
    @tool(name="flaky", idempotent=idempotent)
    def flaky(q: str) -> str:
        """Always times out."""
        raise TimeoutError("timeout")

    result, error = run_once(policy, call("flaky", {"q": "x"}), [flaky], seed=seed)
    delays = tuple(e.data["delay"] for e in result.trace.of("retry"))
    return RetryCount(result.tool_runs, delays, type(error).__name__ if error else None,
                      result.results[0].content())


# -- the sweep: success, tool runs, model calls and time per strategy, over failure rates ----------------

RATES: tuple[float, ...] = tuple(round(0.1 * i, 1) for i in range(10))
METRICS = ("success_rate", "tool_runs", "model_calls", "seconds")


def sweep_strategies(max_retries: int = 2, backoff: float = 1.0) -> dict[str, ErrorPolicyLike]:
    """The four strategies the sweep compares; the Retry ones with these settings."""
    return {"raise": "raise", "report": "report",
            "Retry → report": Retry(max_retries=max_retries, backoff=backoff),
            "Retry → raise": Retry(max_retries=max_retries, backoff=backoff, on_failure="raise")}


def fate(seed: int, run_index: int, execution: int) -> float:
    """A number in [0, 1) fixed by (seed, run, execution): execution k of run i fails when it is below the
    failure rate. Every strategy meets the same fates, and a higher rate only adds failures."""
    return random.Random(f"{seed}/{run_index}/{execution}").random()


def sweep(failure_rates: Sequence[float] = RATES, strategies: Mapping[str, ErrorPolicyLike] | None = None, *,
          runs: int = 50, seed: int = 0, max_retries: int = 2, backoff: float = 1.0, model_retries: int = 1,
          model_latency: float = 0.5, tool_latency: float = 0.2) -> list[dict[str, Any]]:
    """Per strategy and failure rate, the mean over `runs` runs of: success (the user got the price),
    tool runs, model calls, and seconds on the virtual clock. One row per (strategy, rate).

    Each run asks for one price. The tool fails with ConnectionError when its fate is below the rate
    (see `fate`). The model is scripted: it calls the tool, and after an error result it calls again up to
    `model_retries` times, then apologises; after a good result it answers. `strategies` defaults to
    `sweep_strategies(max_retries, backoff)`.
    """
    if runs < 1:
        raise ValueError(f"runs={runs}: at least one run per point")
    if model_retries < 0:
        raise ValueError(f"model_retries={model_retries}: use 0 or more")
    strategies = sweep_strategies(max_retries, backoff) if strategies is None else strategies
    service = {"rate": 0.0, "run": 0, "executions": 0}
    clock = VirtualClock()

    @tool(idempotent=True)
    def get_price(symbol: str) -> dict:
        """Latest price of a stock."""
        service["executions"] += 1
        clock.sleep(tool_latency)
        if fate(seed, service["run"], service["executions"]) < service["rate"]:
            raise ConnectionError("upstream 503: the price service is unavailable")
        return {"symbol": symbol, "price": 101.5}

    def decide(messages, tools, options):
        clock.sleep(model_latency)
        results = tool_results_since_last_user(messages)
        if not results:
            return [call("get_price", {"symbol": "ACME"})]
        if not results[-1].is_error:
            return "ACME trades at 101.5."
        if len(results) <= model_retries:
            return [call("get_price", {"symbol": "ACME"})]
        return "Sorry, the price service is unavailable right now."

    rows = []
    for name, policy in strategies.items():
        executor = SequentialExecutor(sleep=clock.sleep, seed=seed)
        for rate in failure_rates:
            totals = dict.fromkeys(METRICS, 0.0)
            for i in range(runs):
                service.update(rate=rate, run=i, executions=0)
                start = clock.now
                try:
                    result = run(FunctionModel(decide), "What does ACME trade at?", tools=[get_price],
                                 on_tool_error=policy, executor=executor)
                except RunError as error:
                    result = error.run
                answered = result.stop_reason is StopReason.FINAL_ANSWER and any(r.ok for r in result.results)
                totals["success_rate"] += answered
                totals["tool_runs"] += result.tool_runs
                totals["model_calls"] += result.steps
                totals["seconds"] += clock.now - start
            rows.append({"strategy": name, "failure_rate": rate,
                         **{metric: round(total / runs, 4) for metric, total in totals.items()}})
    return rows


def explore_retries(max_retries: int = 2, backoff: float = 1.0, model_retries: int = 1, runs: int = 40,
                    seed: int = 0) -> Any:
    """The playground of tutorial 04: the sweep with these knobs, drawn as four small charts."""
    from .. import viz

    rows = sweep(runs=runs, seed=seed, max_retries=max_retries, backoff=backoff, model_retries=model_retries)
    return viz.sweep_panels(rows, title=f"Retry(max_retries={max_retries}, backoff={backoff:g} s), model retries "
                                        f"{model_retries}, {runs} runs per point (seed {seed})")
