"""Budgets: how many tokens, dollars and seconds a run may spend, and what each model's tokens cost.

    limits = Limits(max_tokens={"output": 2_000}, max_cost_usd=0.05, max_seconds=30)
    run = agentkit.run(model, prompt, tools=tools, limits=limits)
    run.stop_reason          # StopReason.TOKEN_BUDGET, COST_BUDGET or TIME_BUDGET when one ran out
    run.limit.message()      # 'Budget reached: output tokens exceeded (2150/2000 tokens).'
    cost(run.usage_by_model) # Cost(usd=0.0321, unpriced=())

Token kinds come from the provider's own usage fields (see `agentkit.core.types.Usage`): "input" and "output",
"reasoning" (part of output: OpenAI's reasoning_tokens, Gemini's thoughtsTokenCount, Anthropic's
thinking_tokens where reported) and "cached" (part of input: prompt-cache reads), and "total" (input +
output). A format that does not report a kind (Ollama reports neither reasoning nor cached tokens)
counts 0 of it, so a budget on that kind never runs out there.

Prices are USD per million tokens, dated, with their source. The table ships only prices read on the
provider's own pricing page; a model that is not in it has no price: `cost()` names it under
`unpriced` instead of guessing, and a cost budget with an unpriced model stops the run with
UnknownPriceError. Pass your own table, merged over this one: `Limits(prices={"my-model": Price(...)})`;
the key `None` prices the turns of a model that reports no name (a FunctionModel, a server that leaves
`model` out).

Left out on purpose: long-context surcharges, batch discounts, cache *write* prices (billed as input
here) and the cost of tools themselves.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Mapping, NamedTuple

from .types import Usage, same_model

#: The kinds a token budget may cap, as `Limits(max_tokens={kind: cap})` spells them.
TOKEN_KINDS = ("input", "output", "reasoning", "cached", "total")


_COUNT = {"input": lambda u: u.input_tokens, "output": lambda u: u.output_tokens,
          "reasoning": lambda u: u.reasoning_tokens, "cached": lambda u: u.cached_tokens,
          "total": lambda u: u.input_tokens + u.output_tokens}


def tokens_of(usage: Usage, kind: str) -> int:
    """How many tokens of `kind` a usage holds."""
    return _COUNT[kind](usage)


@dataclass(frozen=True)
class Price:
    """What a model's tokens cost, in USD per million tokens, and where that was read.

    `cached_input` is the price of prompt-cache reads; None bills them as ordinary input.
    Reasoning tokens are billed as output: they are part of output_tokens, and Anthropic, the only provider
    in the table, bills thinking as output tokens (docs.anthropic.com, "Context windows").
    """

    input: float
    output: float
    cached_input: float | None = None
    source: str = ""
    checked: str = ""  # the date the price was read at `source`

    def __post_init__(self):
        for name in ("input", "output", "cached_input"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0):
                raise ValueError(f"Price.{name}={value!r}: use USD per million tokens, a number >= 0")

    def usd(self, usage: Usage) -> float:
        cached = usage.cached_tokens if self.cached_input is not None else 0
        fresh = usage.input_tokens - cached
        return (fresh * self.input + cached * (self.cached_input or 0.0) + usage.output_tokens * self.output) / 1e6


_ANTHROPIC = "https://platform.claude.com/docs/en/about-claude/pricing (Model pricing table)"
_CHECKED = "2026-12-01"

#: Prices read on the provider's own pricing page (base input, cache hits, output), with the date read.
#: Only prices that could be checked are here: OpenAI's and Google's pages could not be read when this
#: table was written, so their models are left out rather than guessed. Override with Limits(prices=...).
DEFAULT_PRICES: dict[str, Price] = {
    "claude-opus-4-5": Price(5.0, 25.0, 0.50, _ANTHROPIC, _CHECKED),
    "claude-sonnet-4-5": Price(3.0, 15.0, 0.30, _ANTHROPIC, _CHECKED),
    "claude-sonnet-4": Price(3.0, 15.0, 0.30, _ANTHROPIC, _CHECKED),
    "claude-haiku-4-5": Price(1.0, 5.0, 0.10, _ANTHROPIC, _CHECKED),
}


def price_table(prices: Mapping[str, Price | Mapping] | None) -> dict[str, Price]:
    """The default table with `prices` merged over it; a plain dict {"input", "output", ...} becomes a Price."""
    table: dict = dict(DEFAULT_PRICES)
    for model, price in (prices or {}).items():
        if model is not None and not isinstance(model, str):
            raise TypeError(f"prices key {model!r}: use the model's name (a str), or None for a model without one")
        if isinstance(price, Mapping):
            price = Price(**price)
        if not isinstance(price, Price):
            raise TypeError(f"prices[{model!r}]={price!r}: use Price(input=..., output=...) in USD per million tokens")
        table[model] = price
    return table


def price_for(model: str | None, table: Mapping[str, Price]) -> Price | None:
    """The price of `model`: by exact name, else ignoring a dated snapshot suffix or a `provider/` prefix;
    a model without a name has the price keyed None, if any."""
    if not model:
        return table.get(None)
    if model in table:
        return table[model]
    bare = model.rsplit("/", 1)[-1]  # OpenRouter's "anthropic/claude-sonnet-4-5"
    return next((price for name, price in table.items() if same_model(name, bare)), None)


class Cost(NamedTuple):
    """What some usage cost: `usd` for the priced models, and the models that have no price."""

    usd: float
    unpriced: tuple[str, ...] = ()


def cost(usage_by_model: Mapping[str | None, Usage], prices: Mapping[str, Price] | None = None) -> Cost:
    """The cost of a run's usage, model by model (`Run.usage_by_model`); unknown models are named, not guessed."""
    table = price_table(prices)
    usd, unpriced = 0.0, []
    for model, usage in usage_by_model.items():
        price = price_for(model, table)
        if price is None:
            unpriced.append(model or "<unnamed model>")
        else:
            usd += price.usd(usage)
    return Cost(usd, tuple(unpriced))


def check_token_caps(caps: Mapping[str, int], usage: Usage) -> tuple[str, int, int] | None:
    """The first cap in `caps` that `usage` went past: (kind, used, cap), or None."""
    for kind, cap in caps.items():
        used = _COUNT[kind](usage)
        if used > cap:
            return kind, used, cap
    return None


def validate_token_caps(name: str, caps: object) -> None:
    """A clear error for a `max_tokens` / `max_thread_tokens` value that is not {kind: whole number >= 0}."""
    if caps is None:
        return
    if not isinstance(caps, Mapping):
        raise TypeError(f"Limits.{name}={caps!r}: a budget per token kind, e.g. {{'total': {caps!r}}}, with kinds "
                        f"from {', '.join(TOKEN_KINDS)} (one response's length is the model's max_tokens option)")
    for kind, cap in caps.items():
        if kind not in TOKEN_KINDS:
            raise ValueError(f"Limits.{name}: unknown token kind {kind!r}; use one of {', '.join(TOKEN_KINDS)}")
        if not isinstance(cap, int) or isinstance(cap, bool) or cap < 0:
            raise ValueError(f"Limits.{name}[{kind!r}]={cap!r}: use a whole number of tokens >= 0")


#: What the calls of the turn that went over a budget say under wrap_up (a budget's exit_behavior
#: "continue", see Limits): the model then gets one last call, without tools.
WRAP_UP_TEXT = "Answer now with what you have, without calling tools."


class Unpriced(LookupError):
    """A cost budget met a model without a price; `model` names it."""

    def __init__(self, model: str | None, table: Mapping[str, Price]):
        self.model = model
        key = repr(model) if model else "None"  # a model that reports no name is priced under None
        named = sorted(str(name) for name in table if name is not None) + ["None"] * (None in table)
        super().__init__(f"no price for model {model or '<unnamed model>'!r}, so the cost budget cannot be kept; "
                         f"add one: Limits(prices={{{key}: Price(input=..., output=...)}}) "
                         f"(USD per million tokens; priced now: {', '.join(named)})")


class BudgetMeter:
    """The budgets of one run: which one, if any, the run has gone past. The loop asks after every
    model call (`after_turn`) and before every model call (`over_time`)."""

    def __init__(self, limits) -> None:
        self.limits = limits
        self.clock = limits.clock if limits.clock is not None else time.monotonic
        self.started = self.clock() if limits.max_seconds is not None else 0.0
        self.spent_usd = 0.0
        self.prices: dict[str | None, Price | None] = {}  # per model name, looked up once

    def after_turn(self, usage: Usage, thread_usage: Usage | None, turn_usage: Usage,
                   model: str | None) -> tuple[str, float, float] | None:
        """(limit, count, maximum) of the first budget gone past, else None; raises Unpriced.
        `usage` is the run's so far, `turn_usage` what the last call of `model` added to it."""
        limits = self.limits
        if limits.max_tokens:
            over = check_token_caps(limits.max_tokens, usage)
            if over is not None:
                return f"max_tokens:{over[0]}", over[1], over[2]
        if limits.max_thread_tokens and thread_usage is not None:
            over = check_token_caps(limits.max_thread_tokens, thread_usage)
            if over is not None:
                return f"max_thread_tokens:{over[0]}", over[1], over[2]
        if limits.max_cost_usd is not None and (turn_usage.input_tokens or turn_usage.output_tokens):
            price = self.prices.get(model) if model in self.prices else self.prices.setdefault(
                model, price_for(model, limits.prices))
            if price is None:
                raise Unpriced(model, limits.prices)
            self.spent_usd += price.usd(turn_usage)
            if self.spent_usd > limits.max_cost_usd:
                return "max_cost_usd", self.spent_usd, limits.max_cost_usd
        return self.over_time()

    def elapsed(self) -> float:
        return self.clock() - self.started

    def running_seconds(self) -> float:
        """The seconds the run has been running, by the time budget's clock (0.0 without a time budget)."""
        return max(0.0, round(self.elapsed(), 6)) if self.limits.max_seconds is not None else 0.0

    def carry_over(self, run) -> Unpriced | None:
        """A resumed run goes on from what it spent before its pause: the money its usage cost (priced again,
        model by model: `Price.usd` is linear, so the sum is what the meter had counted) and the seconds it had
        been running. The time while it waited paused does not count: a time budget bounds a run's work, and a
        decision may come days later. Returns Unpriced (nothing counted) when a cost budget meets a model
        without a price."""
        if self.limits.max_seconds is not None:
            self.started = self.clock() - run.elapsed_seconds
        if self.limits.max_cost_usd is None:
            return None
        spent = 0.0
        for model, usage in run.usage_by_model.items():
            if not (usage.input_tokens or usage.output_tokens):
                continue
            price = self.prices.setdefault(model, price_for(model, self.limits.prices))
            if price is None:
                return Unpriced(model, self.limits.prices)
            spent += price.usd(usage)
        self.spent_usd = spent
        return None

    def over_time(self) -> tuple[str, float, float] | None:
        maximum = self.limits.max_seconds
        if maximum is not None and (elapsed := self.elapsed()) > maximum:
            return "max_seconds", round(elapsed, 3), maximum
        return None
