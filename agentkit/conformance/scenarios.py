"""Which scenarios run in which format, and the model each is played by (the simulator's `sim.conform` decides).

    plan(["anthropic"], ["parallel", "spend-limit"])
        -> [Pick("anthropic", "parallel"), Pick("anthropic", "spend-limit")]
    Pick("anthropic", "parallel").model  ->  "claude-opus-5-5-conform-parallel"
    plan(["gemini"], ["spend-limit"])    ->  []   (Gemini answers no spend limit of its own)

The simulator plays a scenario for any model name ending in `conform-<scenario>`; the model id in front decides
the provider's rules (`sim.conform.MODELS`: models that carry reasoning state, so every scenario also checks
that the loop sends it back). Some scenarios play in some formats only (`sim.conform.model_for` is None
elsewhere).

Two scenarios end in an error no retry can fix (`ENDS_IN_ERROR`): a spend limit, and a model that refuses
tools. A loop may stop there (raise, exit non-zero) and still be clean, as long as it does not send the
refused request again.

Left out on purpose: choosing other models (a scenario's model is part of what it checks).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..providers import FORMATS
from ..sim.conform import SCRIPTS, model_for, rules_of

__all__ = ["ENDS_IN_ERROR", "Pick", "formats_of", "plan", "rules_of", "scenario_names"]

#: Scenarios whose provider error is final: stopping there is what a loop should do (`Script.ends_in_error`).
ENDS_IN_ERROR = frozenset(name for name, script in SCRIPTS.items() if script.ends_in_error)


def scenario_names() -> list[str]:
    """Every scenario, in the simulator's order."""
    return list(SCRIPTS)


def formats_of(scenario: str) -> list[str]:
    """The formats a scenario is played in."""
    return [fmt for fmt in FORMATS if model_for(fmt, scenario) is not None]


@dataclass(frozen=True)
class Pick:
    """One (format, scenario) to run, and the model name that plays it."""

    format: str
    scenario: str

    @property
    def model(self) -> str:
        return model_for(self.format, self.scenario)


def plan(formats: list[str] | None = None, scenarios: list[str] | None = None) -> list[Pick]:
    """Every (format, scenario) asked for that is played, formats first: unknown names are a ValueError."""
    formats = list(FORMATS) if not formats else formats
    scenarios = scenario_names() if not scenarios else scenarios
    unknown = [f for f in formats if f not in FORMATS] + [s for s in scenarios if s not in SCRIPTS]
    if unknown:
        raise ValueError(f"unknown format or scenario: {', '.join(unknown)} (formats: {', '.join(FORMATS)}; "
                         f"scenarios: {', '.join(SCRIPTS)})")
    return [Pick(f, s) for f in formats for s in scenarios if model_for(f, s) is not None]
