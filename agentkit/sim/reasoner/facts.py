"""Reading facts out of text: numbers with units, dates and months, currencies and their sides,
cities, quoted strings, ids and `name=value` pairs.

    read_facts("1ドル何円？").currencies      # the base (USD) and the quote (JPY)

Left out on purpose: any grammar; each reader is a few regular expressions over the word lists.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from typing import Any, Iterable

from .lexicon import CITIES, CURRENCIES, City, MONTHS, SPELLED_NUMBERS, UNIT_FAMILIES
from ...providers.common import json_or_none
from .understand import normalise


@dataclass(frozen=True)
class Number:
    value: int | float
    family: str | None  # unit family ("second", "money", ...) or None when the number has no unit
    pos: int


@dataclass(frozen=True)
class CityMention:
    city: City | None  # None: a place name found by pattern ("weather in Springfield"), not the gazetteer
    surface: str
    pos: int


@dataclass(frozen=True)
class Facts:
    """Everything step 3 can put into an argument, read once from a piece of text."""

    text: str
    low: str
    numbers: tuple[Number, ...] = ()
    dates: tuple[tuple[int, date, date], ...] = ()  # (position, first day, last day) per mention
    currencies: tuple[str, ...] = ()                # codes in order of mention
    base: str | None = None
    quote: str | None = None
    cities: tuple[CityMention, ...] = ()
    quoted: tuple[str, ...] = ()
    ids: tuple[str, ...] = ()
    zones: tuple[str, ...] = ()                     # IANA names written out ("Europe/Paris")
    assigned: tuple[tuple[str, Any], ...] = ()      # values dictated as name=value ("x=abc")


def read_facts(text: str) -> Facts:
    """Find every value the text offers; each finder masks what it took so numbers inside dates,
    quotes and ids are not read twice."""
    text = normalise(text)
    low = lower_aligned(text)
    quoted, masked, quote_spans = _find_quoted(text, low)
    ids, masked = _find_ids(text, masked)
    dates, masked = _find_dates(masked)
    currencies, no_money = _find_currencies(masked)
    base, quote = _currency_roles(masked, currencies)
    # a quoted place is still a place: "the weather in 'Tokyo'" names Tokyo (quotes hide numbers, not cities)
    places = _restore(no_money, low, quote_spans)
    return Facts(text, low, numbers=tuple(_find_numbers(masked)), dates=tuple(dates),
                 currencies=tuple(dict.fromkeys(code for code, _, _ in currencies)), base=base, quote=quote,
                 cities=tuple(_find_cities(text, places)), quoted=tuple(quoted), ids=tuple(ids),
                 zones=tuple(re.findall(r"\b[A-Z][a-z]+/[A-Z][A-Za-z_]+\b", text)),
                 assigned=tuple(_find_assignments(text)))


def _find_assignments(text: str) -> list[tuple[str, Any]]:
    """`x=abc`, `limit: 5`, `city="Tokyo"`: the user dictates a value; numbers and booleans are
    read as JSON, anything else stays a string (so "x=abc" for an integer reaches the schema gate)."""
    found = []
    for m in re.finditer(r"(?<![\w/])([A-Za-z_]\w*)\s*[=:](?!//)\s*(\"[^\"]*\"|'[^']*'|[^\s,;]+)", text):
        raw = m.group(2)
        if raw[:1] in "\"'" and len(raw) >= 2:
            found.append((m.group(1), raw[1:-1]))
        else:
            value = json_or_none(raw)
            found.append((m.group(1), value if isinstance(value, (int, float, bool)) else raw))
    return found


def lower_aligned(text: str) -> str:
    """Lower-case without changing length (a few characters grow when lowered), so positions agree."""
    low = text.lower()
    if len(low) == len(text):
        return low
    return "".join(c.lower() if len(c.lower()) == 1 else c for c in text)


def _mask(text: str, spans: list[tuple[int, int]]) -> str:
    """The text with each (start, end) span blanked out, in one pass: blanking one span at a time
    copied the whole text per match, which made a text full of matches cost its length squared."""
    if not spans:
        return text
    pieces, done = [], 0
    for start, end in sorted(spans):
        pieces += [text[done:start], " " * (end - start)]
        done = end
    return "".join(pieces) + text[done:]


def _restore(masked: str, low: str, spans: list[tuple[int, int]]) -> str:
    """`masked` with the characters of each span put back from `low` (the same length, positions agree)."""
    if not spans:
        return masked
    pieces, done = [], 0
    for start, end in sorted(spans):
        pieces += [masked[done:start], low[start:end]]
        done = end
    return "".join(pieces) + masked[done:]


def _find_quoted(text: str, low: str) -> tuple[list[str], str, list[tuple[int, int]]]:
    found, spans = [], []
    pattern = r"\"([^\"]+)\"|“([^”]+)”|「([^」]+)」|『([^』]+)』|(?:(?<=\s)|^)'([^']+)'(?=[\s.,!?]|$)"
    for m in re.finditer(pattern, text):
        found.append((m.start(), next(g for g in m.groups() if g)))
        spans.append(m.span())
    return [value for _, value in sorted(found)], _mask(low, spans), spans


def _find_ids(text: str, low: str) -> tuple[list[str], str]:
    found, spans = [], []
    for m in re.finditer(r"\b[A-Z]{2,}[-_]?\d+\b", text):
        if low[m.start():m.end()].strip():  # not inside a quoted string already taken
            found.append(m.group())
            spans.append(m.span())
    return found, _mask(low, spans)


_MONTH_RE = "|".join(sorted(MONTHS, key=len, reverse=True))
DATE_PATTERNS: tuple[tuple[str, str], ...] = (
    # (kind, regex on lower-case text); earlier patterns win, and mask what they match
    ("mmy", rf"\b({_MONTH_RE})\.?\s+(?:and|to|through|until|-)\s+({_MONTH_RE})\.?,?\s+(\d{{4}})\b"),
    ("ymm", r"(\d{4})年(\d{1,2})月(?:から|~|-|〜|到|至)(\d{1,2})月"),
    ("ymd", r"(?<!\d)(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?!\d)"),
    ("ymd", r"(\d{4})年(\d{1,2})月(\d{1,2})[日号]"),
    ("ym", r"(\d{4})年(\d{1,2})月(?!\d)"),
    ("mdy", rf"\b({_MONTH_RE})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b"),
    ("dmy", rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH_RE})\.?,?\s+(\d{{4}})\b"),
    ("my", rf"\b({_MONTH_RE})\.?,?\s+(?:of\s+)?(\d{{4}})\b"),
    ("ym", r"(?<!\d)(\d{4})-(\d{1,2})(?![\d-])"),
    ("y", r"(\d{4})年(?!\d)"),
    ("y", r"\b(?:in|during|for|from|of)\s+(\d{4})\b"),
)


def _find_dates(low: str) -> tuple[list[tuple[int, date, date]], str]:
    found = []
    for kind, pattern in DATE_PATTERNS:
        taken = []  # this pattern's matches, blanked before the next pattern reads the text
        for m in re.finditer(pattern, low):
            two_months = kind in ("mmy", "ymm")
            span = _two_month_span(kind, m.groups()) if two_months else _date_span(kind, m.groups())
            if span is not None:
                found.append((m.start(), *span))
                taken.append(m.span())
        low = _mask(low, taken)
    return sorted(found), low


def _date_span(kind: str, groups: tuple[str, ...]) -> tuple[date, date] | None:
    """A mention as (first day, last day): one day for a date, the whole month for "January 2026"."""
    g = {"ymd": (0, 1, 2), "mdy": (2, 0, 1), "dmy": (2, 1, 0), "ym": (0, 1, None), "my": (1, 0, None),
         "y": (0, None, None)}[kind]
    try:
        year = int(groups[g[0]])
        month = None if g[1] is None else _month_number(groups[g[1]])
        day = None if g[2] is None else int(groups[g[2]])
        if not 1900 <= year <= 2100:
            return None
        if month is None:
            return date(year, 1, 1), date(year, 12, 31)
        if day is None:
            return date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1])
        return date(year, month, day), date(year, month, day)
    except (ValueError, KeyError):
        return None


def _two_month_span(kind: str, groups: tuple[str, ...]) -> tuple[date, date] | None:
    """"January to March 2026" / "2026年1月から3月": the first month's first day to the last one's last."""
    year, first, last = (groups[2], groups[0], groups[1]) if kind == "mmy" else groups
    start, end = _date_span("ym", (year, first)), _date_span("ym", (year, last))
    return (start[0], end[1]) if start and end and start[0] <= end[1] else None


def _month_number(text: str) -> int:
    return int(text) if text.isdigit() else MONTHS[text]


_CURRENCY_FORMS = sorted(((form, code) for code, forms in CURRENCIES.items() for form in forms),
                         key=lambda fc: len(fc[0]), reverse=True)


def _find_currencies(low: str) -> tuple[list[tuple[str, int, int]], str]:
    """(code, start, end) per mention, longest form first ("豪ドル" is AUD, not USD)."""
    found = []
    for form, code in _CURRENCY_FORMS:
        spans = positions(low, form)
        found += [(code, start, end) for start, end in spans]
        low = _mask(low, spans)
    return sorted(found, key=lambda m: m[1]), low


# Words right before/after a currency that say which side it is on: "how many yen" asks for the
# quote; "1 dollar", "per dollar", "ドルから" name the base.
QUOTE_BEFORE = re.compile(r"(?:\b(?:how\s+many|how\s+much|into|in|to)|何|多少|/|->|→)\s*$")
QUOTE_AFTER = re.compile(r"^\s*(?:に|へ|で)")
BASE_BEFORE = re.compile(r"(?:\d|\bone|\ba|\ban|\bper)\s*$")
BASE_AFTER = re.compile(r"^\s*(?:から|to\b|/|->|→|兑|\d)")


def _currency_roles(low: str, mentions: list[tuple[str, int, int]]) -> tuple[str | None, str | None]:
    """Which mentioned currency is the base and which the quote ("1ドル何円" → USD, JPY)."""
    def flagged(pattern_before: re.Pattern, pattern_after: re.Pattern, skip: str | None) -> str | None:
        for code, start, end in mentions:
            if code != skip and (pattern_before.search(low[max(0, start - 12):start])
                                 or pattern_after.search(low[end:end + 4])):
                return code
        return None

    quote = flagged(QUOTE_BEFORE, QUOTE_AFTER, None)
    base = flagged(BASE_BEFORE, BASE_AFTER, quote)
    rest = [code for code in dict.fromkeys(c for c, _, _ in mentions) if code not in (base, quote)]
    if base is None and rest:
        base = rest.pop(0)
    if quote is None and rest:
        quote = rest.pop(0)
    return base, quote


_CITY_FORMS = sorted(((name, city) for city in CITIES for name in city.names()),
                     key=lambda nc: len(nc[0]), reverse=True)
_NOT_PLACES = frozenset(list(MONTHS) + ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday",
                                        "sunday", "english", "japanese", "chinese", "celsius", "fahrenheit"])


def _find_cities(text: str, low: str) -> list[CityMention]:
    """Gazetteer names first; if none, a place-like phrase ("in Springfield", "札幌市の天気")."""
    found = []
    for name, city in _CITY_FORMS:
        spans = positions(low, name.lower())
        found += [CityMention(city, text[start:end], start) for start, end in spans]
        low = _mask(low, spans)
    return sorted(found, key=lambda c: c.pos) or _place_by_pattern(text)


PLACE_PATTERNS = (
    r"\b(?:in|for|at)\s+[\"'“「]?([A-Z][A-Za-z'-]*[A-Za-z](?:\s+[A-Z][A-Za-z'-]*[A-Za-z])*)",
    r"([\u4e00-\u9fff\u30a0-\u30ff]{1,10})の(?:天気|気温|天候|予報|時刻|時間|現在時刻)",
    r"([\u4e00-\u9fff]{2,6})的(?:天气|气温|时间)",
)


def _place_by_pattern(text: str) -> list[CityMention]:
    for pattern in PLACE_PATTERNS:
        m = re.search(pattern, text)
        if m and m.group(1).lower() not in _NOT_PLACES:
            return [CityMention(None, m.group(1), m.start(1))]
    return []


def _find_numbers(low: str) -> list[Number]:
    found = []
    for m in re.finditer(r"(?<![A-Za-z0-9_.\-])(-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)(?![\d])", low):
        found.append(Number(as_number(m.group(1)), _unit_family(low[m.end():m.end() + 12]), m.start()))
    for m in re.finditer(r"\b(" + "|".join(SPELLED_NUMBERS) + r")\b", low):
        found.append(Number(SPELLED_NUMBERS[m.group(1)], _unit_family(low[m.end():m.end() + 12]), m.start()))
    return sorted(found, key=lambda n: n.pos)


def as_number(text: str) -> int | float:
    text = text.replace(",", "")  # "1,000" is one thousand
    return float(text) if "." in text else int(text)


def _unit_family(after: str) -> str | None:
    after = after.lstrip()
    for family, (units, _) in UNIT_FAMILIES.items():
        for unit in units:
            if after.startswith(unit) and not (unit.isascii() and unit.isalpha()
                                               and after[len(unit):len(unit) + 1].isalpha()):
                return family
    return None


def positions(low: str, form: str) -> list[tuple[int, int]]:
    """Where `form` occurs: whole words for Latin forms, anywhere for CJK and symbols."""
    if not form:
        return []
    return [(m.start(), m.end()) for m in _form_regex(form).finditer(low)]


def mentions(low: str, forms: Iterable[str]) -> bool:
    forms = tuple(f for f in forms if f)
    return bool(forms) and _forms_regex(forms).search(low) is not None


@lru_cache(maxsize=4096)
def _form_regex(form: str) -> re.Pattern:
    if re.fullmatch(r"[a-z0-9 .'-]+", form):  # plurals count: "invoices" mentions "invoice"
        plural = "(?:e?s)?" if form[-1].isalpha() else ""
        return re.compile(r"(?<![a-z0-9])" + re.escape(form) + plural + r"(?![a-z0-9])")
    return re.compile(re.escape(form))


@lru_cache(maxsize=1024)
def _forms_regex(forms: tuple[str, ...]) -> re.Pattern:
    """One compiled alternation per word list: matching is the reasoner's hot loop."""
    return re.compile("|".join(f"(?:{_form_regex(f).pattern})" for f in forms))

def split_identifier(name: str) -> str:
    """get_exchange_rate → "get exchange rate"; searchInvoices → "search Invoices"."""
    return re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name).replace("_", " ").replace("-", " ")
