"""Step 3, fill arguments: one value per parameter that the text supports, nothing invented.

    fill_arguments(weather_tool, read_facts("Weather in Paris?"))   # {"city": "Paris"}

A parameter's role (city, date, currency, number, enum, text, ...) comes from its JSON Schema and the
words around it; each role has a finder that takes a fact of its kind from the request. A string
parameter is filled by these rules, in this order, and by nothing else:

    name=value      a value dictated for it by name (`city=Tokyo`, `sku: "A-1"`), whatever its role
    city            a city the gazetteer knows, or a capitalised name after in/for/at; quoted or not
    identifier      (a name ending in id, number, no, code, sku, ref) an id-like token: letters and digits
                    (INV-1042, SKU-1001, a-1001, #A123) or a bare number (12345); else a quoted string
    anything else   the first quoted string ('…', "…", “…”, 「…」); for a required query-like parameter
                    (query, q, text, keyword, search, …) the request without its verbs ("東京の天気")

A required parameter that none of them fills is left out, and `why_missing` says which rule found
nothing: the simulator puts that sentence in its response (`x-sim-left-out`) and its log, so a call
without an argument reads as the reasoner's limit, not as a bug in the loop that sent the request.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from datetime import date
from functools import lru_cache
from typing import Any, Callable

from ...core.types import ToolSpec
from .facts import Facts, lower_aligned, mentions, positions, split_identifier
from .lexicon import (
    BASE_WORDS,
    CITIES,
    CURRENCIES,
    END_WORDS,
    ENUM_SYNONYMS,
    ID_WORDS,
    QUOTE_WORDS,
    ROLE_WORDS,
    START_WORDS,
    TEXT_WORDS,
    UNIT_FAMILIES,
    City,
)
from .understand import normalise


@dataclass(frozen=True)
class Param:
    """One parameter as the reasoner sees it: schema, whether required, and what it is for (`role`)."""

    name: str
    schema: dict
    required: bool
    role: str    # enum, const, number, boolean, array, date, start, end, base, quote, currency,
    #              timezone, city, identifier, text, other
    hints: str   # lower-case words about it: its name, description, tool sentences naming it
    type: str    # the first non-null JSON type, "" when untyped
    nullable: bool


def parameters(tool: ToolSpec) -> list[Param]:
    """The tool's parameters in schema order, skipping anything that is not a usable property."""
    try:  # cached by content: the same tools arrive with every request
        key = json.dumps([tool.description, tool.parameters], sort_keys=True)
    except (TypeError, ValueError, RecursionError):  # not plain JSON: work it out afresh
        return _parameters(tool)
    return list(_parameters_of_json(key))


@lru_cache(maxsize=1024)
def _parameters_of_json(key: str) -> tuple[Param, ...]:
    description, schema = json.loads(key)
    return tuple(_parameters(ToolSpec("", description, schema)))


def _parameters(tool: ToolSpec) -> list[Param]:
    schema = tool.parameters if isinstance(tool.parameters, dict) else {}
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    required = schema.get("required") if isinstance(schema.get("required"), list) else []
    description = tool.description if isinstance(tool.description, str) else ""
    out = []
    for name, sub in props.items():
        if isinstance(name, str) and isinstance(sub, dict):
            out.append(_param(name, sub, name in required, description))
    return out


def _param(name: str, schema: dict, required: bool, tool_description: str) -> Param:
    types = schema.get("type") if isinstance(schema.get("type"), list) else [schema.get("type")]
    types = [t for t in types if isinstance(t, str)]
    main = next((t for t in types if t != "null"), "")
    own = " ".join(str(schema.get(k) or "") for k in ("description", "title", "format"))
    named = re.compile(r"(?<![A-Za-z0-9_])" + re.escape(name) + r"(?![A-Za-z0-9_])")
    sentences = " ".join(s for s in re.split(r"[。.;\n]", tool_description) if named.search(s))
    words = split_identifier(name).lower()
    hints = lower_aligned(normalise(f"{words} {own} {sentences}"))
    own, sentences = lower_aligned(normalise(own)), lower_aligned(normalise(sentences))
    role = _role(name, schema, main, words, own, sentences)
    return Param(name, schema, required, role, hints, main, "null" in types)


def _role(name: str, schema: dict, type_: str, words: str, own: str, sentences: str) -> str:
    """What a parameter is for: first from its schema's shape, then its name, its description, and
    finally the tool's sentences that mention it ("baseとquoteはISO 4217の…")."""
    if "const" in schema:
        return "const"
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return "enum"
    shape = {"array": "array", "integer": "number", "number": "number", "boolean": "boolean"}.get(type_)
    if shape or type_ not in ("string", ""):
        return shape or "other"
    if schema.get("format") in ("date", "date-time"):
        return _direction(words, "date")
    for text in (words, own, sentences):
        role = _role_from_words(text, words)
        if role:
            return role
    return "text"


def _role_from_words(text: str, name_words: str) -> str | None:
    names = set(name_words.split())
    if mentions(text, ROLE_WORDS["date"]):
        return _direction(name_words, "date")
    if mentions(text, ROLE_WORDS["currency"]) or names & {"base", "quote"}:
        return "quote" if names & set(QUOTE_WORDS) else "base" if names & set(BASE_WORDS) else "currency"
    for role in ("timezone", "city"):
        if mentions(text, ROLE_WORDS[role]):
            return role
    if names and name_words.split()[-1] in ID_WORDS:
        return "identifier"
    return None


def _direction(name_words: str, default: str) -> str:
    names = set(name_words.split())
    return "start" if names & set(START_WORDS) else "end" if names & set(END_WORDS) else default


MISSING = object()  # "the text holds no value for this parameter" (None is a real JSON value)


def fill_arguments(tool: ToolSpec, facts: Facts, context: Facts | None = None,
                   left_out: list[tuple[str, str]] | None = None) -> dict:
    """Step 3: a value for every parameter the text supports — from the ask first, then from the whole
    request. A parameter with no value is left out (the schema gate will say so), unless it is
    required and the schema itself offers a default (or allows null). For each required parameter left
    out, `left_out` (when given) gets (its name, why: see `why_missing`)."""
    args: dict = {}
    taken_here, taken_there = set(), set()  # numbers and quotes already used, per text
    for p in parameters(tool):
        value = find_value(p, facts, taken_here)
        if value is MISSING and context is not None:
            value = find_value(p, context, taken_there)
        if value is MISSING:
            value = _fallback(p)
        if value is not MISSING:
            args[p.name] = value
        elif p.required and left_out is not None:
            left_out.append((p.name, why_missing(p)))
    return args


#: Why a required parameter of each role found no value: what the request would have to say.
WHY_MISSING = {
    "city": "the request names no city the simulator knows (a gazetteer city, or a capitalised name after "
            "in/for/at, quoted or not)",
    "timezone": "the request names no time zone (Europe/Paris) and no city the simulator knows",
    "identifier": "the request holds no id-like token (letters and digits such as INV-1042, or a bare "
                  "number) and no quoted string",
    "text": "the request holds no quoted string, and the parameter is not query-like (query, q, text, ...) "
            "to take the request's own words",
    "number": "the request holds no number for it (a number with a unit the parameter names, or a bare one)",
    "date": "the request names no date", "start": "the request names no date", "end": "the request names no date",
    "base": "the request names no currency", "quote": "the request names no second currency",
    "currency": "the request names no currency",
    "enum": "the request mentions none of its enum values (or their synonyms)",
    "boolean": "the simulator fills a boolean only when it is dictated",
    "array": "the request holds no values of the kind its items take",
}


def why_missing(p: Param) -> str:
    """One sentence: which rule found nothing for this parameter, and what would fill it."""
    why = WHY_MISSING.get(p.role, "the simulator has no rule that fills a parameter of this kind")
    return f"{why}; or dictate it: {p.name}=..."


def find_value(p: Param, facts: Facts, taken: set) -> Any:
    """A value dictated for this name wins; otherwise the role decides which finder reads the facts."""
    dictated = [value for name, value in facts.assigned if name == p.name]
    if dictated:
        return dictated[0]
    return FINDERS.get(p.role, _nothing)(p, facts, taken)


def _fallback(p: Param) -> Any:
    if not p.required:
        return MISSING
    if "default" in p.schema:
        return p.schema["default"]
    return None if p.nullable else MISSING


def _nothing(p: Param, facts: Facts, taken: set) -> Any:
    return MISSING


def _find_enum(p: Param, facts: Facts, taken: set) -> Any:
    """The enum value mentioned first, literally or through a synonym, city or currency name."""
    best: tuple[int, Any] | None = None
    for value in p.schema["enum"]:
        pos = _enum_position(value, facts)
        if pos is not None and (best is None or pos < best[0]):
            best = (pos, value)
    return MISSING if best is None else best[1]


def _enum_position(value: Any, facts: Facts) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    if not isinstance(value, str):
        return next((n.pos for n in facts.numbers if n.value == value), None)
    city = city_named(value)
    if city is not None:  # via the mentions, so a fan-out over cities picks one city per call
        return next((c.pos for c in facts.cities if c.city == city), None)
    forms = {value.lower(), value.lower().replace("_", " "), *ENUM_SYNONYMS.get(value.lower(), ())}
    forms |= set(CURRENCIES.get(value.upper(), ()))
    hits = [start for form in forms for start, _ in positions(facts.low, lower_aligned(normalise(form)))]
    return min(hits) if hits else None


def city_named(name: str) -> City | None:
    return next((c for c in CITIES if name.lower() in (n.lower() for n in c.names())), None)


def _find_const(p: Param, facts: Facts, taken: set) -> Any:
    return p.schema["const"]


def _find_number(p: Param, facts: Facts, taken: set) -> Any:
    """A number with a matching unit ("5秒" → seconds); for a required parameter, else the next bare one."""
    family = next((f for f, (_, words) in UNIT_FAMILIES.items() if mentions(p.hints, words)), None)
    candidates = [n for n in facts.numbers if n.pos not in taken and family and n.family == family]
    if not candidates and p.required:
        candidates = [n for n in facts.numbers if n.pos not in taken and n.family is None]
    if not candidates:
        return MISSING
    taken.add(candidates[0].pos)
    value = candidates[0].value
    return int(value) if p.type == "integer" and float(value).is_integer() else value


def _find_date(p: Param, facts: Facts, taken: set) -> Any:
    """Start: the first mention's first day. End: the last mention's last day. Single date: the first."""
    if not facts.dates:
        return MISSING
    if p.role == "end":
        return _format_date(facts.dates[-1][2], p.schema.get("format"), end=True)
    return _format_date(facts.dates[0][1], p.schema.get("format"), end=False)


def _format_date(day: date, fmt: Any, end: bool) -> str:
    if fmt == "date-time":
        return f"{day.isoformat()}T{'23:59:59' if end else '00:00:00'}Z"
    return day.isoformat()


def _find_currency(p: Param, facts: Facts, taken: set) -> Any:
    value = {"base": facts.base, "quote": facts.quote}.get(p.role, facts.base)
    return MISSING if value is None else value


def _find_city(p: Param, facts: Facts, taken: set) -> Any:
    """The first city, in the form the parameter asks for ("cityは日本語の都市名で渡す" → 東京)."""
    if not facts.cities:
        return MISSING
    mention = facts.cities[0]
    if mention.city is None:
        return mention.surface
    if mentions(p.hints, ("日本語", "japanese")):
        return mention.city.ja
    if mentions(p.hints, ("中文", "中国語", "chinese")):
        return mention.city.zh
    if mentions(p.hints, ("英語", "english")) or mention.surface.isascii():
        return mention.city.en
    return mention.surface


def _find_timezone(p: Param, facts: Facts, taken: set) -> Any:
    if facts.zones:
        return facts.zones[0]
    known = [c.city for c in facts.cities if c.city is not None]
    return known[0].tz if known else MISSING


#: An id-like token for an identifier parameter: letters with digits (SKU-1001, a-1001, A123, 12345),
#: or capitals joined by dashes (WIDGET-BLUE); a leading "#" is not part of it.
ID_LIKE = re.compile(r"(?<![\w-])#?((?=[\w-]*\d)[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)*|[A-Z]{2,}(?:-[A-Z0-9]+)+)(?![\w-])")


def _find_identifier(p: Param, facts: Facts, taken: set) -> Any:
    """An id the facts hold (INV-1042), a quoted string, or an id-like token: letters and digits, or a
    bare number, which a string id keeps as text ("order 12345" -> "12345")."""
    if facts.ids:
        return facts.ids[0]
    quoted = _find_text(replace(p, required=False), facts, taken)
    if quoted is not MISSING:
        return quoted
    for m in ID_LIKE.finditer(facts.text):
        token, start = m.group(1), m.start(1)
        if any(start <= pos < m.end(1) for pos in _date_spans(facts)):
            continue
        if token.isdigit():
            if start in taken:
                continue
            taken.add(start)  # a number it took is no other parameter's
            return token if p.type in ("string", "") else int(token)
        return token
    return MISSING


def _date_spans(facts: Facts) -> list[int]:
    return [pos for pos, _, _ in facts.dates]


def _find_text(p: Param, facts: Facts, taken: set) -> Any:
    """A quoted string if there is one; for a required query-like parameter ("query", "q", "text"...),
    the request's remaining noun phrase. Other strings ("customer") stay empty rather than get nonsense."""
    for i, value in enumerate(facts.quoted):
        if ("q", i) not in taken:
            taken.add(("q", i))
            return value
    if p.required and mentions(p.hints, TEXT_WORDS):
        phrase = noun_phrase(facts.text)
        return phrase if phrase else MISSING
    return MISSING


def _find_array(p: Param, facts: Facts, taken: set) -> Any:
    """A list parameter gets every value of the kind its items hold (all cities, all enum values...)."""
    items = p.schema.get("items") if isinstance(p.schema.get("items"), dict) else {}
    item = replace(_param(p.name, items, p.required, ""), hints=p.hints)
    if isinstance(items.get("enum"), list):
        values = [v for v in items["enum"] if _enum_position(v, facts) is not None]
    elif item.role == "text" and mentions(p.hints, ROLE_WORDS["city"]) or item.role == "city":
        values = [_find_city(item, replace(facts, cities=(c,)), taken) for c in facts.cities]
    elif item.role in ("base", "quote", "currency"):
        values = list(facts.currencies)
    elif item.role == "number":
        values = [n.value for n in facts.numbers]
    else:
        values = list(facts.quoted)
    return values if values else MISSING


FINDERS: dict[str, Callable[[Param, Facts, set], Any]] = {
    "enum": _find_enum, "const": _find_const, "number": _find_number, "array": _find_array,
    "date": _find_date, "start": _find_date, "end": _find_date,
    "base": _find_currency, "quote": _find_currency, "currency": _find_currency,
    "city": _find_city, "timezone": _find_timezone, "identifier": _find_identifier, "text": _find_text,
}

# Request verbs and politeness around the thing asked about: "search the web for X please" → X.
LEADING_VERBS = re.compile(
    r"^(?:please|pls|can you|could you|would you|will you|i want to know|i'd like to know|"
    r"search(?: the web| online)?(?: for)?|look up|find(?: me)?|tell me(?: about)?|what is|what's|"
    r"what are|who is|show me|get me|give me)\s+", re.IGNORECASE)
TRAILING_WORDS = ("ください", "下さい", "ちょうだい", "して", "て", "教え", "検索", "調べ", "探",
                  "について", "を", "は", "か", "吗", "一下", "搜索", "查找", "查询", "please", "for me")


def noun_phrase(text: str) -> str:
    """The request without its verbs and politeness: "東京の天気を調べて" → "東京の天気"."""
    phrase = text.strip()
    while True:
        before = phrase
        phrase = LEADING_VERBS.sub("", phrase).strip(" ?!.,。、")
        for word in TRAILING_WORDS:
            if phrase.endswith(word) and len(phrase) > len(word):
                phrase = phrase[:-len(word)].rstrip()
        if phrase == before:
            return phrase
