"""Which scenarios run in which format, and the model each one is played by.

    plan(["anthropic"], ["parallel", "forced-tool-use"])
        -> [Pick("anthropic", "parallel"), Pick("anthropic", "forced-tool-use")]
    Pick("anthropic", "parallel").model  ->  "claude-opus-5-5-conform-parallel"

The simulator plays a scenario for any model name ending in `conform-<scenario>` (`agentkit.sim.conform`);
the model id in front of it decides the provider's rules. Each format gets a model that carries reasoning
state, so every scenario also checks that the loop sends it back: Claude Opus 5.5 (thinking always on, its
signatures bound to the history before them), GPT-5.4 on Responses (reasoning items and `phase`), Gemini 3
(thought signatures on calls), Claude Opus 5.5 on OpenRouter (`reasoning_details`, OpenRouter's dotted id
`anthropic/claude-opus-5.5`), Qwen 3 on Ollama (`thinking`).

Three scenarios belong to some formats only: `forced-tool-use` to Anthropic (Claude 5.5 refuses a forced
tool choice), `model-refuses-tools` to Ollama (a model without the "tools" capability), `spend-limit` to the
formats whose API answers a spend limit apart from a rate limit (a ledger entry `….spend_limit`).

Left out on purpose: choosing models per test run (a scenario's model is part of what it checks).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..providers import FORMATS
from ..sim.conform import SCRIPTS
from ..sim.fidelity import ledger

__all__ = ["ENDS_IN_ERROR", "MODELS", "ONLY_IN", "Pick", "applies", "formats_of", "model_for", "plan",
           "scenario_names"]

#: The model id each format's scenarios are played by.
MODELS = {
    "openai-chat": "gpt-5.4",
    "openai-responses": "gpt-5.4",
    "anthropic": "claude-opus-5-5",
    "gemini": "gemini-3-flash-preview",
    "openrouter": "anthropic/claude-opus-5.5",
    "ollama": "qwen3",
}

#: Scenarios played in some formats only, with the model id that makes the point there.
ONLY_IN = {
    "forced-tool-use": {"anthropic": "claude-opus-5-5"},
    "model-refuses-tools": {"ollama": "gemma3"},
}

#: Scenarios whose provider error is final: a loop may stop there (raise, exit non-zero) and still pass,
#: as long as it does not send the refused request again.
ENDS_IN_ERROR = frozenset({"spend-limit", "model-refuses-tools"})


def scenario_names() -> list[str]:
    """Every scenario, in the simulator's order."""
    return list(SCRIPTS)


def applies(fmt: str, scenario: str) -> bool:
    """Whether `scenario` is played in `fmt`."""
    if scenario in ONLY_IN:
        return fmt in ONLY_IN[scenario]
    if scenario == "spend-limit":
        return any(e.id.endswith(".spend_limit") and fmt in e.applies_to for e in ledger().values())
    return True


def formats_of(scenario: str) -> list[str]:
    """The formats a scenario is played in."""
    return [fmt for fmt in FORMATS if applies(fmt, scenario)]


def model_for(fmt: str, scenario: str) -> str:
    """The model name that plays `scenario` in `fmt`: "claude-opus-5-5-conform-parallel"."""
    base = ONLY_IN.get(scenario, {}).get(fmt, MODELS[fmt])
    return f"{base}-conform-{scenario}"


@dataclass(frozen=True)
class Pick:
    """One (format, scenario) to run."""

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
    return [Pick(f, s) for f in formats for s in scenarios if applies(f, s)]
