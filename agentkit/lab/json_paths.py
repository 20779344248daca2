"""Where a value sits in a JSON document.

A path names one place in a JSON document the way Python would reach it, without the quotes:
`choices[0].message.tool_calls[1].id`. `find_paths` (below) lists the paths whose value matches; `where`
turns them into one path for a value (tutorial 09 finds a tool's schema in each format's definition with
it). Left out on purpose: keys that contain `.`, `[` or `(` (no provider uses one), and JSON Pointer /
JSONPath syntax (more to learn, nothing gained).
"""

from __future__ import annotations

import re
from typing import Any, Callable


def find_paths(doc: Any, match: Callable[[Any], bool], at: str = "") -> list[tuple[str, Any]]:
    """[(path, value)] for every value in `doc`, depth first, for which match(value) is true.

        find_paths(body, lambda v: v == "get_weather")  ->  [("tools[0].function.name", "get_weather")]
    """
    found = [(at, doc)] if match(doc) else []
    if isinstance(doc, dict):
        for k, v in doc.items():
            found += find_paths(v, match, f"{at}.{k}" if at else k)
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            found += find_paths(v, match, f"{at}[{i}]")
    return found


# One step of a path: a list index (`[3]`, or `[i]` once generalised) with its optional tag, or a key.
_STEP = re.compile(r"\[(\d+|i)\](?:\([^()]*\))?|([^.\[\]]+)")


def _steps(path: str) -> list:
    """'a.b[0](type=x).c' -> ['a', 'b', 0, 'c']: keys as str, indexes as int, a generalised [i] as None."""
    steps: list = []
    for match in _STEP.finditer(path):
        index, key = match.groups()
        steps.append(key if key is not None else (int(index) if index.isdigit() else None))
    return steps


def _same(a: Any, b: Any) -> bool:
    """Equal and of the same type: True is not 1, 1.0 is not 1."""
    return type(a) is type(b) and a == b


def where(doc: Any, *values: Any, tags: bool = False) -> str | None:
    """The path where `values` sit in `doc`, or None when one of them is not there.

        where(body, "get_weather")                       ->  "tools[0].function.name"
        where(body, "get_weather", "get_exchange_rate")  ->  "tools[i].function.name"
        where(body, "get_weather", tags=True)            ->  "tools[0](type=function).function.name"

    Several values (both tools, both calls of a reply) give one path: the list index in which their
    paths differ is written `[i]` (see `generalise`). A value matches an equal value of the same type.
    When it occurs more than once, the place nearest the top of the document wins, then the first in
    document order. `tags=True` marks each list item on the way with its role or type (see `tagged`).
    """
    if not values:
        raise TypeError("where() needs at least one value to look for")
    paths = []
    for value in values:
        found = [path for path, _ in find_paths(doc, lambda v, value=value: _same(v, value))]
        if not found:
            return None
        nearest = min(found, key=lambda p: len(_steps(p)))  # min keeps the first of equals
        paths.append(tagged(doc, nearest) if tags else nearest)
    return generalise(*paths)


def generalise(*paths: str) -> str:
    """One path for paths that differ only in list indexes, each differing index written `[i]`.

        generalise("tools[0].function.name", "tools[1].function.name")  ->  "tools[i].function.name"

    Raises ValueError when the paths differ anywhere else: they are not places in the same list.
    """
    if not paths:
        raise ValueError("generalise() needs at least one path")
    pieces = [re.split(r"(\[\d+\])", p) for p in paths]  # keys and tags at even places, indexes at odd
    if len({len(p) for p in pieces}) > 1:
        raise ValueError(f"paths of different shapes: {paths}")
    out = []
    for place, variants in enumerate(zip(*pieces)):
        if len(set(variants)) == 1:
            out.append(variants[0])
        elif place % 2:
            out.append("[i]")
        else:
            raise ValueError(f"paths differ outside a list index: {paths}")
    return "".join(out)


def tagged(doc: Any, path: str) -> str:
    """`path` with each list item on the way marked by its `role` or `type`, when it has one.

        tagged(body, "messages[2].content")  ->  "messages[2](role=tool).content"

    An index says *which* item; the tag says what *kind* it is (a tool message, a tool_use block), which
    is what tells the formats apart.
    """
    out, node = "", doc
    for step in _steps(path):
        node = node[step]
        if isinstance(step, int):
            out += f"[{step}]"
            if isinstance(node, dict):
                for kind in ("role", "type"):
                    if isinstance(node.get(kind), str):
                        out += f"({kind}={node[kind]})"
                        break
        else:
            out += f".{step}" if out else step
    return out
