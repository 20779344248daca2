"""Step 2, choose tools: split the request into asks and match each ask to the best tool.

    choose_tools("東京の天気と、1ドル何円か教えて", tools)   # two asks: get_weather, get_exchange_rate

A tool scores by shared concepts, words of its name and other shared words; on a tie, a tool the
text can fill completely wins (which is why this step uses step 3's `fill_arguments`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Iterable

from ...core.types import ToolSpec
from .facts import Facts, lower_aligned, mentions, read_facts, split_identifier
from .fill import Param, fill_arguments, parameters
from .lexicon import CONCEPTS, MATCH_THRESHOLD, MAX_ASKS, STOPWORDS
from .understand import normalise


@dataclass(frozen=True)
class Ask:
    """One thing the user asked for, and the tool chosen for it (with its score, for the notes)."""

    text: str
    tool: ToolSpec
    score: int


# "東京の天気と、1ドル何円か" / "the weather in Tokyo and how many yen..." / "天气，还有汇率"
ASK_SEPARATORS = re.compile(
    r"\s+(?:and|also|then|as well as)\s+|[;、。!?]\s*|,(?!\s*\d)\s*"
    r"|(?<=[\u30a0-\u30ff\u4e00-\u9fffA-Za-z0-9])と(?![いう思])|以及|还有|然后|并且|(?<=[\u4e00-\u9fff])和")


def split_asks(text: str) -> list[tuple[int, int]]:
    """Spans of the pieces between separators ("and", "と", "、", "还有", ...), empty pieces dropped;
    at most MAX_ASKS: the first and the last half of them (a small model loses track of the middle too)."""
    spans, start = [], 0
    for m in ASK_SEPARATORS.finditer(text):
        spans.append((start, m.start()))
        start = m.end()
    spans.append((start, len(text)))
    spans = [(a, b) for a, b in spans if text[a:b].strip()]
    return spans if len(spans) <= MAX_ASKS else spans[:MAX_ASKS // 2] + spans[-(MAX_ASKS // 2):]


def choose_tools(text: str, tools: tuple[ToolSpec, ...]) -> list[Ask]:
    """Match every piece to its best tool, then glue pieces that chose nothing to a neighbour:
    "東京と大阪の天気" is one ask about two cities, not an ask about "東京" alone. A piece that names only
    places ("… and in Tokyo?") chooses nothing either, whatever tool its city would fit: it adds a place
    to the ask before it, so "the weather and the local time in Paris and in Tokyo" is two asks over two
    cities, not a third ask for the weather in Tokyo. Only when nothing else is asked does such a piece
    choose its tool ("Tokyo?" alone)."""
    asks: list[list] = []  # [start, end, tool, score], growing as pieces are glued on
    prefix: int | None = None  # where leading pieces that chose no tool began
    only_places: list | None = None  # [tool, score] of the first piece that names nothing but places
    for start, end in split_asks(text):
        tool, score = best_tool(text[start:end], tools)
        if tool is not None and names_only_places(text[start:end], tool):
            only_places = only_places or [tool, score]
            tool = None
        if tool is None and not asks:
            prefix = start if prefix is None else prefix
        elif tool is None or (asks and _same_ask(text, asks[-1], start, end, tool)):
            asks[-1][1], asks[-1][3] = end, max(asks[-1][3], score)
        else:
            asks.append([start if prefix is None else prefix, end, tool, score])
            prefix = None
    if not asks and only_places is not None:
        return [Ask(text, *only_places)]
    return [Ask(text[a:b], tool, score) for a, b, tool, score in asks]


def names_only_places(piece: str, tool: ToolSpec) -> bool:
    """Does the piece fit the tool only through the places it names ("in Tokyo": the city fits a `city`
    parameter, and the tool's description happens to say "e.g. Tokyo")? Scored again with the places
    blanked out, nothing is left."""
    facts = read_facts(piece)
    if not facts.cities:
        return False
    blanked = list(piece)
    for mention in facts.cities:
        blanked[mention.pos:mention.pos + len(mention.surface)] = " " * len(mention.surface)
    rest = "".join(blanked)
    return _score(text_keys(rest), replace(read_facts(rest), cities=()), tool) <= 0


def _same_ask(text: str, last: list, start: int, end: int, tool: ToolSpec) -> bool:
    """Neighbouring pieces for the same tool are one ask unless each makes a whole call on its own:
    "ドルと円のレート" is one ask; "ユーロ円のレートと、ポンドドルのレート" are two."""
    if last[2].name != tool.name:
        return False
    alone = can_fill(tool, read_facts(text[last[0]:last[1]])), can_fill(tool, read_facts(text[start:end]))
    return not all(alone)


def best_tool(text: str, tools: Iterable[ToolSpec], threshold: int = MATCH_THRESHOLD
              ) -> tuple[ToolSpec | None, int]:
    """The highest-scoring tool for this text, or None below the threshold. On a tie, a tool the text
    can fill completely wins ("記憶した都市を教えて" → current_city(), not remember_city(city=?))."""
    keys, facts = text_keys(text), read_facts(text)
    scored = [(_score(keys, facts, tool), tool) for tool in tools]
    top = max((score for score, _ in scored), default=threshold - 1)
    if top < threshold:
        return None, max(top, 0)
    tied = [tool for score, tool in scored if score == top]
    return next((t for t in tied if can_fill(t, facts)), tied[0]), top


def can_fill(tool: ToolSpec, facts: Facts) -> bool:
    """Can these facts fill every required parameter of the tool?"""
    args = fill_arguments(tool, facts)
    return all(p.name in args for p in parameters(tool) if p.required)


def score_tool(text: str, tool: ToolSpec) -> int:
    """How well a tool fits a piece of request text (see `_score`)."""
    return _score(text_keys(text), read_facts(text), tool)


def _score(request: set[str], facts: Facts, tool: ToolSpec) -> int:
    """3 per shared concept, 2 per word of the tool's name, 1 per other shared word or CJK pair,
    1 per kind of value the text holds that a parameter wants (a city for `city`, a date for a date, an
    id such as INV-1042 for an `..._id`)."""
    name, other = _tool_keys(tool.name, tool_text(tool))
    concepts = {k for k in request if k.startswith("#")} & (name | other)
    words = {k for k in request if not k.startswith("#")}
    score = 3 * len(concepts) + sum(2 if w in name else 1 if w in other else 0 for w in words)
    return score + _value_bonus(facts, parameters(tool))


def _value_bonus(facts: Facts, params: list[Param]) -> int:
    roles = {p.role for p in params}
    wanted = [(facts.cities, {"city", "timezone"}), (facts.dates, {"date", "start", "end"}),
              (facts.currencies, {"base", "quote", "currency"}), (facts.ids, {"identifier"})]
    return sum(1 for found, kinds in wanted if found and roles & kinds)


@lru_cache(maxsize=1024)
def _tool_keys(name: str, text: str) -> tuple[frozenset, frozenset]:
    return frozenset(text_keys(split_identifier(name))), frozenset(text_keys(text))


def text_keys(text: str) -> set[str]:
    """What a text is about: "#concept" keys, stemmed English words, and pairs of Han/katakana characters."""
    low = lower_aligned(normalise(split_identifier(text)))
    keys = {"#" + concept for concept, forms in CONCEPTS.items() if mentions(low, forms)}
    keys |= {_stem(w) for w in re.findall(r"[a-z][a-z0-9]+", low) if w not in STOPWORDS}
    for run in re.findall(r"[\u4e00-\u9fff\u30a0-\u30ff]{2,}", low):
        keys |= {run[i:i + 2] for i in range(len(run) - 1)}
    return keys


def tool_text(tool: ToolSpec) -> str:
    """The words a model reads about a tool: description, parameter names, their descriptions and enums."""
    parts = [tool.description if isinstance(tool.description, str) else ""]
    for p in parameters(tool):
        enum = p.schema.get("enum")
        parts += [split_identifier(p.name), str(p.schema.get("description") or "")]
        parts += [v for v in enum if isinstance(v, str)] if isinstance(enum, list) else []
    return " ".join(parts)




def _stem(word: str) -> str:
    """Crude English stemming, the same on both sides: invoices → invoice, cities → city."""
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "xes", "sses")):
        return word[:-2]
    if word.endswith("s") and len(word) > 3 and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word
