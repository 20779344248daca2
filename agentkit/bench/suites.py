"""Suites: pick cases by name ("bfcl:simple_python,agentkit:error_recovery") and give each one the same shape.

    cases = load_cases("bfcl:parallel,agentkit:limits", limit=5)     # 5 cases per category
    attempt = cases[0].start()            # fresh messages, tools and limits for one trial
    run = await agentkit.arun(model, attempt.messages, tools=attempt.tools, limits=attempt.limits)
    attempt.judge(run)                    # Verdict

A BFCL case is one model turn: its tools are the converted function docs, never executed (the loop's
step cap of 1 stops before running them, exactly as BFCL scores the first answer), and its judge is
`check_calls` on the calls of that turn. A scenario of agentkit's own suite runs its tools against a
fresh World and is judged by the world's end state and the final answer.

A BFCL multi-turn case (`bfcl:multi_turn_base`, ..., or `bfcl:multi_turn` for all four) plays every
user turn through the loop against BFCL's own back-ends and is judged by BFCL's multi-turn checks
(multiturn.py); its record also stores the trajectory.

Suite names: `bfcl` (every single-turn BFCL category agentkit reads), `bfcl:<category>`, `bfcl:multi_turn`
(named explicitly: it runs BFCL's back-ends), `agentkit` (all four of ours), `agentkit:<category>`.
`--limit n` takes the first n cases of each category, so a small run still covers every category.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..core.policies import Limits
from ..core.tools import Tool
from ..core.types import Message
from . import bfcl, multiturn, scenarios
from .scoring import Verdict, check_calls

SUITES: dict[str, tuple[str, ...]] = {"bfcl": bfcl.CATEGORIES, "agentkit": scenarios.CATEGORIES}


class UnknownSuite(ValueError):
    """A suite or category name that does not exist; the message lists the ones that do."""


@dataclass
class TrialSetup:
    """One trial's materials, made fresh for every trial (a scenario's World must not carry over)."""

    messages: list[Message]
    tools: list[Tool]
    limits: Limits
    judge: Callable[[Any], Verdict]
    # A case of several user turns drives the loop itself (`await drive(model, stream=...)` -> a Run) and
    # adds fields of its own to the record (`details(run)`); None for a single run of the loop.
    drive: Callable[..., Any] | None = None
    details: Callable[[Any], dict] | None = None


@dataclass(frozen=True)
class Case:
    """A case of either suite, as the runner sees it."""

    id: str
    suite: str
    category: str
    source: Any  # bfcl.BFCLCase or scenarios.Scenario
    lenient: bool = False  # BFCL cases: score with the opt-in leniencies (scoring.py), not BFCL's verdict

    def start(self, format: str | None = None) -> TrialSetup:
        """Fresh materials for one trial; `format` (the wire format) picks BFCL's request style."""
        if self.suite == "bfcl" and self.category in bfcl.MULTI_TURN_CATEGORIES:
            return _multiturn_trial(self.source, format)
        if self.suite == "bfcl":
            return _bfcl_trial(self.source, format, self.lenient)
        return _scenario_trial(self.source)


def parse_suites(spec: str) -> list[tuple[str, str]]:
    """"bfcl:simple_python,agentkit" -> [("bfcl", "simple_python"), ("agentkit", "multi_step"), ...]."""
    chosen: list[tuple[str, str]] = []
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        suite, _, category = part.partition(":")
        if suite not in SUITES:
            raise UnknownSuite(f"unknown suite {suite!r} in {spec!r}: use {' or '.join(SUITES)}, optionally with "
                               f":<category> (python -m agentkit.bench suites lists them)")
        if suite == "bfcl" and category in bfcl.REFUSED:
            raise UnknownSuite(f"bfcl:{category} is refused: {bfcl.REFUSED[category]}")
        if category in ("", "all"):
            categories = SUITES[suite]
        elif category in SUITES[suite]:
            categories = (category,)
        elif suite == "bfcl" and category in bfcl.MULTI_TURN_CATEGORIES + ("multi_turn",):
            categories = bfcl.MULTI_TURN_CATEGORIES if category == "multi_turn" else (category,)
        else:
            extra = bfcl.MULTI_TURN_CATEGORIES + ("multi_turn",) if suite == "bfcl" else ()
            raise UnknownSuite(f"unknown {suite} category {category!r}; choose one of: "
                               f"{', '.join(SUITES[suite] + extra)}")
        chosen += [(suite, c) for c in categories if (suite, c) not in chosen]
    if not chosen:
        raise UnknownSuite("no suite given: e.g. --suite bfcl:simple_python,agentkit:error_recovery")
    return chosen


def load_cases(spec: str, limit: int | None = None, shard: tuple[int, int] | None = None, *,
               lenient: bool = False) -> list[Case]:
    """The cases of `spec`, `limit` per category, then this machine's share when `shard=(i, n)` (1-based).
    `lenient`: BFCL cases are scored with the opt-in leniencies instead of BFCL's verdict."""
    cases: list[Case] = []
    for suite, category in parse_suites(spec):
        if suite == "bfcl" and category in bfcl.MULTI_TURN_CATEGORIES:
            found = [Case(c.id, suite, category, c) for c in multiturn.load(category)]
        elif suite == "bfcl":
            found = [Case(c.id, suite, category, c, lenient) for c in bfcl.load(category)]
        else:
            found = [Case(c.id, suite, category, c) for c in scenarios.load(category)]
        cases += found[:limit] if limit is not None else found
    if shard is not None:
        index, count = shard
        if not 1 <= index <= count:
            raise ValueError(f"shard {index}/{count}: use i/n with 1 <= i <= n")
        cases = cases[index - 1::count]  # round robin: every shard gets some of every category
    return cases


# -- the two kinds of case ------------------------------------------------------------------------------------

def _bfcl_trial(case: bfcl.BFCLCase, format: str | None, lenient: bool) -> TrialSetup:
    def judge(run: Any) -> Verdict:
        calls = first_turn_calls(run)
        return check_calls(case.functions, case.ground_truth, calls, case.category, lenient=lenient)

    # One model turn, as BFCL scores it: the step cap ends the run before any tool would run. The tools
    # are BFCL's request in the format's model style.
    return TrialSetup(list(case.messages), list(case.tools_for(format)), Limits(max_steps=1), judge)


def first_turn_calls(run: Any) -> list[dict]:
    """The calls of the run's first assistant turn as BFCL's {name: arguments}, the arguments as BFCL's
    decoding reads them (`bfcl.arguments_as_sent`: the text when it is not a JSON object, blank text too)."""
    for message in run.new_messages:
        if message.role == "assistant":
            return [{c.name: bfcl.arguments_as_sent(c)} for c in message.tool_calls]
    return []


def _multiturn_trial(case: multiturn.MultiTurnCase, format: str | None) -> TrialSetup:
    async def drive(model: Any, stream: bool = False) -> Any:  # the runner sends the run's generation settings
        return await multiturn.play(case, model, format=format, stream=stream, generation=None)

    def judge(run: Any) -> Verdict:
        return multiturn.score(case, run.trajectory)

    def details(run: Any) -> dict:
        trajectory = getattr(run, "trajectory", None) or {}
        return {"irrelevance_calls": multiturn.irrelevance_calls(case, trajectory) if trajectory else 0,
                "trajectory": trajectory}

    # the first turn's materials, for a reader; drive() plays every turn with fresh back-ends
    return TrialSetup(case.user_messages(0), multiturn.tools_for(case, 0, format),
                   Limits(max_steps=multiturn.MAXIMUM_STEP_LIMIT + 1), judge, drive, details)


def _scenario_trial(case: scenarios.Scenario) -> TrialSetup:
    world = case.new_world()
    return TrialSetup(case.messages(), world.tools(list(case.tools)), Limits(max_steps=case.max_steps),
                   lambda run: case.judge(run, world))
