"""sim-reasoner: the simulator's default model — plain rules that decide the way a small model does.

A real model turns a conversation plus a list of tools into either tool calls or text. This module does
the same with rules you can read top to bottom, in five steps:

    1. understand  the latest user request, its language, and the tool results that came back since
    2. choose      split the request into asks; match each ask against tool names, descriptions, params
    3. fill        pull argument values out of the ask that fit each parameter's JSON Schema
    4. plan        this turn's batch: new calls, a corrected call after an error, or nothing
    5. answer      the final text, built from the results, in the user's language

One module per step, read in this order (each imports only the ones above it):

    lexicon.py     what it knows: every word list, in one place
    vocabulary.py  PlannedCall, Decision, Observation, TriedCall, Situation
    understand.py  step 1
    facts.py       reading facts out of text: numbers, dates, currencies, cities, quoted strings, ids
    fill.py        step 3 (before step 2, which asks whether a tool can be filled)
    choose.py      step 2
    plan.py        step 4
    answer.py      step 5
    __init__.py    the whole pipeline: decide()

    >>> from agentkit.sim.wire.common import ChatRequest
    >>> from agentkit.core.types import Message, ToolSpec
    >>> weather = ToolSpec("get_weather", "Current weather for a city",
    ...                    {"type": "object", "properties": {"city": {"type": "string"}}})
    >>> decide(ChatRequest("sim-reasoner", (Message.user("Weather in Paris?"),), (weather,))).calls
    (PlannedCall(name='get_weather', arguments={'city': 'Paris'}, raw=None),)

Everything is derived from the request itself (the model keeps no memory between requests), so the same
request always gets the same decision. `Decision.notes` records why, for learners.

What it reads of a long request: the first and last READ_LIMIT / 2 characters, and at most MAX_ASKS
asks, so a decision's work is bounded whatever the prompt's size (benchmarks/sim_flood.py measures it).

What it can read: concepts in English, Japanese and Chinese (天気/weather, 為替/rate, 請求書/invoice…),
enum values and their synonyms ("支払済み" → paid), numbers with units ("5秒" → seconds), dates and
months ("2026年1月" → 2026-01-01..2026-01-31), currencies and which side they are on ("1ドル何円" →
USD→JPY), cities from a small gazetteer, quoted strings, ids like INV-1042, values dictated as
`name=value`, and follow-ups ("And in Osaka?" repeats the earlier request's tool).

Left out on purpose: learning, randomness, the system prompt, plans where one tool's output feeds the
next call's arguments, and any real understanding of language. The word lists below are small on
purpose — extend them to teach the reasoner a new domain.
"""

from __future__ import annotations

from ..wire.common import ChatRequest
from .answer import compose_answer, render, reply_without_tools
from .choose import Ask, best_tool, can_fill, choose_tools, score_tool, split_asks
from .facts import Facts, read_facts
from .fill import Param, fill_arguments, noun_phrase, parameters
from .lexicon import CITIES, CONCEPTS, CURRENCIES, ENUM_SYNONYMS, MAX_ASKS, PHRASES, READ_LIMIT
from .plan import follow_up_intents, fresh_call, key_of, plan_batch, plan_intents, tool_choice_of, track
from .understand import normalise, pair_results, read_result, understand, usable_tools
from .vocabulary import Decision, Observation, PlannedCall, Situation, TriedCall

__all__ = ["decide", "decide_situation", "understand", "choose_tools", "fill_arguments", "read_facts",
           "plan_intents", "compose_answer", "fresh_call", "best_tool", "can_fill", "parameters",
           "tool_choice_of", "usable_tools", "score_tool", "noun_phrase", "split_asks", "render",
           "reply_without_tools", "read_result", "pair_results", "normalise",
           "Decision", "PlannedCall", "Situation", "TriedCall", "Observation", "Facts", "Param", "Ask",
           "CONCEPTS", "ENUM_SYNONYMS", "CURRENCIES", "CITIES", "PHRASES", "READ_LIMIT", "MAX_ASKS"]


def decide(request: ChatRequest) -> Decision:
    """understand → choose → fill → plan → answer."""
    return decide_situation(understand(request))


def decide_situation(s: Situation) -> Decision:
    """Steps 2-5 on an understood request; `notes` record the asks, the calls tried and the choice."""
    notes: list[str] = []
    progress, strays = track(_intents(s, notes), s.tried)
    notes += [f"attempt {a.call.name}: {'ok' if a.observation.ok else 'error ' + a.observation.kind}"
              for a in s.tried]
    mode, _ = tool_choice_of(s.options, s.tools)
    if not s.tools or mode == "none":
        return Decision(text=compose_answer(s, progress, strays, tools_off=True), notes=tuple(notes))
    calls = plan_batch(s, progress)
    if calls:
        notes.append(f"tool_choice {mode}: call {', '.join(c.name for c in calls)}")
        left_out = tuple(dict.fromkeys(f"{call.name}.{name}: {why}" for call in calls for name, why in call.left_out))
        notes += [f"left out {why}" for why in left_out]
        return Decision(calls=tuple(calls), notes=tuple(notes), left_out=left_out)
    notes.append("answer in text")
    return Decision(text=compose_answer(s, progress, strays), notes=tuple(notes))


def _intents(s: Situation, notes: list[str]) -> list[PlannedCall]:
    """The calls the request needs; for a follow-up ("And in Osaka?"), the earlier request's, redone."""
    if not s.tools or not s.text:
        return []
    intents = plan_intents(s.text, s.tools, notes)
    if not intents and s.earlier:
        intents = follow_up_intents(s.text, s.earlier, s.tools)
        notes += [f"follow-up of {s.earlier!r}: {i.name}({key_of(i.arguments)})" for i in intents]
    return intents
