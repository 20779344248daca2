"""Server-side tool search: deferred tools stay out of the model's sight until a search finds them.

Anthropic's tool search tool (`tool_search_tool_regex_20251119`, `tool_search_tool_bm25_20251119`): the
request defines every tool, marks the ones that should not load up front with `defer_loading: true`, and
the model sees only the others (and the search tool). When it needs a capability it searches; the API
runs the search over the deferred tools' names, descriptions, argument names and argument descriptions,
returns up to 5 matches as `tool_reference` blocks, expands them, and the model calls what it found.

    found = search(deferred, "weather", "regex")     # [ToolSpec('get_weather', ...)]
    run_search(deferred, messages, "regex")          # ("weather|forecast|…|paris", [ToolSpec('get_weather', ...)])

The app hands `run_search` to a server half that runs the search (`ServerFacts.serve_turn`), so the server
half itself needs nothing of the simulator's machinery.

The search itself follows the documentation: a Python `re.search` pattern, case-insensitive, of at most
200 characters (the regex variant), or natural-language words ranked by BM25 (at most 500 characters).
What the simulated model searches for is the kit's own choice: the words of the user's latest request
(for each concept the reasoner knows, such as weather for 天気, that concept's words, then the other
words). A real model writes its own query.

Left out on purpose: a search's error results (`tool_search_tool_result_error`), MCP toolsets, and
searching more than once per request.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from ..core.types import Message, ToolSpec
from .reasoner.choose import text_keys, tool_text
from .reasoner.facts import split_identifier
from .reasoner.lexicon import CONCEPTS

MAX_QUERY = {"regex": 200, "bm25": 500}
#: "each search returns up to 5 matching tools by default".
MAX_RESULTS = 5


def searchable_text(tool: ToolSpec) -> str:
    """What a search reads of a tool: its name (also split into words), description, argument names and
    their descriptions."""
    return f"{tool.name} {split_identifier(tool.name)} {tool_text(tool)}"


def search(catalog: Sequence[ToolSpec], query: str, variant: str) -> list[ToolSpec]:
    """The catalog's tools that match `query`, at most MAX_RESULTS, best first (regex: catalog order)."""
    if variant == "regex":
        try:
            pattern = re.compile(query[:MAX_QUERY["regex"]], re.IGNORECASE)
        except re.error:
            return []
        return [t for t in catalog if pattern.search(searchable_text(t))][:MAX_RESULTS]
    return _bm25(catalog, query[:MAX_QUERY["bm25"]])[:MAX_RESULTS]


def _bm25(catalog: Sequence[ToolSpec], query: str, k1: float = 1.2, b: float = 0.75) -> list[ToolSpec]:
    docs = [Counter(_terms(searchable_text(t))) for t in catalog]
    if not docs:
        return []
    average = sum(sum(d.values()) for d in docs) / len(docs) or 1.0
    scored = []
    for index, (tool, doc) in enumerate(zip(catalog, docs)):
        length, score = sum(doc.values()), 0.0
        for term in set(_terms(query)):
            holding = sum(1 for d in docs if term in d)
            if term in doc:
                idf = math.log(1 + (len(docs) - holding + 0.5) / (holding + 0.5))
                score += idf * doc[term] * (k1 + 1) / (doc[term] + k1 * (1 - b + b * length / average))
        if score > 0:
            scored.append((-score, index, tool))
    return [tool for _, _, tool in sorted(scored, key=lambda s: s[:2])]


def _terms(text: str) -> list[str]:
    """Concept keys, stemmed words and CJK pairs (the reasoner's reading of a text), as BM25 terms."""
    return sorted(text_keys(text))


def search_words(messages: Sequence[Message]) -> list[str]:
    """The words the simulated model searches with: for each concept of the latest user request, the
    concept's words (in every language the reasoner knows), then the request's other words; [] when the
    conversation does not end with a new request."""
    if not messages or messages[-1].role != "user" or not messages[-1].content:
        return []
    keys = text_keys(messages[-1].content)
    concepts = [form for key in sorted(k for k in keys if k.startswith("#")) for form in CONCEPTS.get(key[1:], ())]
    words = sorted(k for k in keys if not k.startswith("#"))
    return list(dict.fromkeys(concepts + words))


def query_for(words: Sequence[str], variant: str) -> str:
    """The query a variant takes: a regex alternation of the words, or the words as a phrase."""
    if variant == "regex":
        pattern = ""
        for word in words:
            part = re.escape(word)
            if len(pattern) + len(part) + 1 > MAX_QUERY["regex"]:
                break
            pattern = f"{pattern}|{part}" if pattern else part
        return pattern
    return " ".join(words)[:MAX_QUERY["bm25"]]


def run_search(catalog: Sequence[ToolSpec], messages: Sequence[Message], variant: str
               ) -> tuple[str, list[ToolSpec]] | None:
    """One search as the simulated model and the server run it: (the query the model writes, the tools the
    server finds), or None when the model would not search (the conversation does not end with a request)."""
    words = search_words(messages)
    if not words:
        return None
    query = query_for(words, variant)
    return query, search(catalog, query, variant)
