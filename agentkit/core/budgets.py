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
`model` out). Prompt caching is priced as billed: reads at the cache-hit price, writes at the cache-write
price (for Anthropic 1.25x input for 5-minute writes, 2x for 1-hour ones), the rest of the input at the
input price.

Left out on purpose: long-context and long-prompt surcharges, batch and priority tiers, Gemini's
context-caching prices, and the cost of tools themselves.
"""

from __future__ import annotations

import re
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

        Price(input=4.0, output=20.0, cached_input=0.20, cache_write=5.0, cache_write_1h=8.0)  # Opus 5.5

    `cached_input` is the price of prompt-cache reads, `cache_write` of prompt-cache writes at the default
    lifetime (Anthropic's 5 minutes: 1.25x input; OpenAI's 30 minutes) and `cache_write_1h` of Anthropic's
    one-hour writes (2x input). A price left None bills those tokens as ordinary input (a one-hour write
    without its own price as a `cache_write`). Reasoning tokens are billed as output: they are part of
    output_tokens, and every provider in the table bills thinking as output tokens.
    """

    input: float
    output: float
    cached_input: float | None = None
    source: str = ""
    checked: str = ""  # the date the price was read at `source`
    cache_write: float | None = None
    cache_write_1h: float | None = None

    def __post_init__(self):
        for name in ("input", "output", "cached_input", "cache_write", "cache_write_1h"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0):
                raise ValueError(f"Price.{name}={value!r}: use USD per million tokens, a number >= 0")

    def usd(self, usage: Usage) -> float:
        """The cost of `usage`: fresh input, cache reads, cache writes (default and one-hour) and output."""
        read = self.input if self.cached_input is None else self.cached_input
        write = self.input if self.cache_write is None else self.cache_write
        write_1h = write if self.cache_write_1h is None else self.cache_write_1h
        writes_1h = min(usage.cache_write_1h_tokens, usage.cache_write_tokens)
        fresh = max(0, usage.input_tokens - usage.cached_tokens - usage.cache_write_tokens)
        return (fresh * self.input + usage.cached_tokens * read + (usage.cache_write_tokens - writes_1h) * write
                + writes_1h * write_1h + usage.output_tokens * self.output) / 1e6


_CHECKED = "2026-12-01"
_ANTHROPIC = ("https://platform.claude.com/docs/en/about-claude/pricing (Model pricing: base input, 5m cache "
              "writes, 1h cache writes, cache hits and refreshes, output; the rows read as quoted whole in public "
              "price tables of 2026-10-08/09)")


def _claude(input: float, write_5m: float, write_1h: float, read: float, output: float) -> Price:
    """One row of Anthropic's pricing table, in its column order."""
    return Price(input, output, read, _ANTHROPIC, _CHECKED, write_5m, write_1h)


def _openai(model: str, input: float, read: float, write: float, output: float, via: str) -> Price:
    """Standard tier, short context (up to 272K input tokens); `write` is the 30-minute cache write."""
    return Price(input, output, read, f"https://developers.openai.com/api/docs/models/{model} and "
                 f"https://developers.openai.com/api/docs/pricing (Standard, short context; read via {via})",
                 _CHECKED, write)


def _gemini(input: float, output: float, via: str) -> Price:
    """Paid tier, prompts up to 200K tokens; context caching is not priced here (billed as input)."""
    return Price(input, output, None, f"https://ai.google.dev/gemini-api/docs/pricing (Paid tier; read via {via})",
                 _CHECKED)


#: Prices read on the provider's own pricing page, with the date read. A model that is not here has no price
#: (named by `cost`, refused by a cost budget), never a guessed one; override with Limits(prices=...).
#: Not modelled: Claude Haiku 5.5's higher rate for prompts over 100,000 tokens, OpenAI's over 272K and
#: Gemini's over 200K, Batch / Flex / Fast tiers, regional uplifts, and Gemini's context-caching prices.
DEFAULT_PRICES: dict[str, Price] = {
    # Anthropic: the 5.x models (cache hits on Opus 5.5 and Sonnet 5.5 are 0.05x input, the page's note 2;
    # Sonnet 5.5's were cut from $0.20 to $0.10 on 2026-10-07), then 4.x.
    "claude-fable-5-1": _claude(10.0, 12.50, 20.0, 0.25, 50.0),
    "claude-mythos-5-1": _claude(10.0, 12.50, 20.0, 0.25, 50.0),
    "claude-fable-5": _claude(10.0, 12.50, 20.0, 1.0, 50.0),
    "claude-mythos-5": _claude(10.0, 12.50, 20.0, 1.0, 50.0),
    "claude-opus-5-5": _claude(4.0, 5.0, 8.0, 0.20, 20.0),
    "claude-opus-5": _claude(5.0, 6.25, 10.0, 0.50, 25.0),
    "claude-sonnet-5-5": _claude(2.0, 2.50, 4.0, 0.10, 10.0),
    "claude-sonnet-5": _claude(2.0, 2.50, 4.0, 0.20, 10.0),
    "claude-haiku-5-5": _claude(0.10, 0.125, 0.20, 0.01, 0.50),  # prompts up to 100,000 tokens
    "claude-opus-4-8": _claude(5.0, 6.25, 10.0, 0.50, 25.0),
    "claude-opus-4-7": _claude(5.0, 6.25, 10.0, 0.50, 25.0),
    "claude-opus-4-6": _claude(5.0, 6.25, 10.0, 0.50, 25.0),
    "claude-opus-4-5": _claude(5.0, 6.25, 10.0, 0.50, 25.0),
    "claude-opus-4-1": _claude(15.0, 18.75, 30.0, 1.50, 75.0),
    "claude-opus-4": _claude(15.0, 18.75, 30.0, 1.50, 75.0),
    "claude-sonnet-4-6": _claude(3.0, 3.75, 6.0, 0.30, 15.0),
    "claude-sonnet-4-5": _claude(3.0, 3.75, 6.0, 0.30, 15.0),
    "claude-sonnet-4": _claude(3.0, 3.75, 6.0, 0.30, 15.0),
    "claude-haiku-4-5": _claude(1.0, 1.25, 2.0, 0.10, 5.0),
    # OpenAI (input, cached input, cache write, output).
    "gpt-6-astra": _openai("gpt-6-astra", 10.0, 1.0, 12.50, 50.0, "a public price capture of 2026-10-08"),
    "gpt-6-sol": _openai("gpt-6-sol", 2.0, 0.20, 2.50, 10.0, "a public price capture of 2026-10-08"),
    "gpt-6-luna": _openai("gpt-6-luna", 0.10, 0.01, 0.125, 0.50, "a public price capture of 2026-10-08"),
    "gpt-6.1-sol": _openai("gpt-6.1-sol", 2.0, 0.10, 2.50, 10.0, "release notes quoting the model page, 2026-10-01"),
    "gpt-6.1-terra": _openai("gpt-6.1-terra", 1.0, 0.05, 1.25, 5.0, "https://docs.litellm.ai/blog/gpt-6-1-terra"),
    # Google (input, output).
    "gemini-3-flash-preview": _gemini(0.50, 3.00, "https://muapi.ai/de/playground/gemini-3-flash, quoting it"),
    "gemini-2.5-flash": _gemini(0.30, 2.50, "api-evangelist/gemini plans/gemini-plans-pricing.yml (input, read "
                                            "2026-09-20) and price tables citing the page (output)"),
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


#: A dot between two digits: OpenRouter's spelling of a version ("claude-sonnet-4.5" for "claude-sonnet-4-5").
_VERSION_DOT = re.compile(r"(?<=\d)\.(?=\d)")


def price_for(model: str | None, table: Mapping[str, Price]) -> Price | None:
    """The price of `model`: by exact name, else ignoring a dated snapshot suffix or a `provider/` prefix,
    else with a version's dots read as hyphens (OpenRouter's `anthropic/claude-sonnet-4.5` is the Messages
    API's `claude-sonnet-4-5`; `gpt-6.1-sol` keeps its dot, since that name is in the table as it is); a model
    without a name has the price keyed None, if any."""
    if not model:
        return table.get(None)
    if model in table:
        return table[model]
    bare = model.rsplit("/", 1)[-1]  # OpenRouter's "anthropic/claude-sonnet-4-5"
    for name in dict.fromkeys((bare, _VERSION_DOT.sub("-", bare))):
        found = table.get(name) or next((price for key, price in table.items() if same_model(key, name)), None)
        if found is not None:
            return found
    return None


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


#: What the calls of the step that went over a budget say under wrap_up (a budget's exit_behavior
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
