"""What the notebooks share: connecting (simulator or real provider) and showing JSON compactly.

    from agentkit import lab
    model = lab.connect("openai-chat")     # HTTPModel on the simulator, or on the configured provider
    print(lab.describe(model))             # "simulator: sim-reasoner in openai-chat format"
    client = lab.raw_client(model)         # an httpx.Client with the base URL and auth header set
    lab.SideBySide(request, response)      # two JSON documents in columns
    lab.where(request, "get_weather")      # "tools[0].function.name": where a value sits in a document

Which model `connect(format)` gives (see the README, "Using a real provider"):
- a `sim-*` model name: always the simulator — behaviour presets exist only there;
- AGENTKIT_PROVIDER names this format (aliases: openai, responses, claude, google): the real provider,
  its key from the usual variable, the model from AGENTKIT_MODEL or the format's default;
- AGENTKIT_BASE_URL is set and the format is openai-chat: that OpenAI-compatible server, with the model
  AGENTKIT_MODEL names (required: such a server has only the models you installed);
- otherwise: the shared simulator (`agentkit.sim.shared()`), so a notebook that compares formats keeps
  every format it was not told about offline.
A model name other than `sim-*` is the simulator's name for the model; a configured provider uses
AGENTKIT_MODEL instead.

The language of the tutorials' prompts (one setting): the seed articles' questions are Japanese and stay so
by default; AGENTKIT_LANG=en, set before JupyterLab starts, sends every tutorial's prompts (questions, tool
descriptions, tool results) in English instead, for a model that does not read Japanese:

    QUESTION = lab.prompt(ja="東京の天気は？", en="What's the weather in Tokyo?")
"""

from __future__ import annotations

import html
import json
import os
import re
from typing import Any, Callable, Iterable

from . import http, sim
from .http import HTTPModel
from .redaction import redact


# -- connecting ----------------------------------------------------------------------------------------

def configured_format() -> str | None:
    """The format AGENTKIT_PROVIDER / AGENTKIT_BASE_URL ask for, or None for the simulator."""
    return http.configured_format()


def connect(format: str = "openai-chat", model: str | None = None, **kwargs: Any) -> HTTPModel:
    """An HTTPModel for `format`: the configured provider if it is this format, else the simulator.

    Raises ValueError when AGENTKIT_BASE_URL is set without AGENTKIT_MODEL (see http.configured_model).
    """
    if (model is not None and model.startswith("sim-")) or configured_format() != format:
        return simulator(format, model or "sim-reasoner", **kwargs)
    http.configured_model(format)  # fail here, with the fix, rather than at the first request with a 404
    _warm_up()
    return HTTPModel.from_env(format, **kwargs)


def simulator(format: str = "openai-chat", model: str = "sim-reasoner", **kwargs: Any) -> HTTPModel:
    """An HTTPModel on the shared simulator whatever the environment says."""
    server = sim.shared()
    _warm_up()
    kwargs.setdefault("api_key", "sim-key")  # the simulator needs none; a dummy keeps a real one from it
    return HTTPModel(model, format, base_url=server.base_url(format), **kwargs)


def _warm_up() -> None:
    """Load the JSON Schema validator now, so the first run's timeline shows the run, not an import.

    Done on every path of `connect`: a real provider's first run would otherwise wait for it too.

    (In a full lab install, `import jsonschema` takes most of a second: one of its optional format
    checkers builds a parser at import time.)
    """
    from .validate import validator_for

    validator_for({"type": "object"})


def simulated(model: HTTPModel) -> bool:
    """True when the model talks to the local simulator (asking starts no simulator)."""
    server = sim.server.shared_if_running()  # a model on the shared simulator has started it already
    return server is not None and model.base_url.startswith(server.url)


def how_shown(model: Any) -> str:
    """How a number about `model`'s behaviour was shown, for the note printed beside it: "by construction"
    when a simulator preset or a script was written to behave so, "measured" when your own model did it."""
    if not isinstance(model, HTTPModel):
        return "by construction (a scripted model)"
    if simulated(model):
        return f"by construction (the simulator's {model.model}, a rule-based model)"
    return f"measured (your model, {model.model})"


def describe(model: HTTPModel) -> str:
    """One stable line naming what the notebook talks to (no port, no key: safe for stored outputs)."""
    where = "simulator" if simulated(model) else redact(model.base_url)  # a `?key=` in it stays hidden
    return f"{where}: {model.model} in {model.format} format"


def raw_client(model: HTTPModel, timeout: float = 30.0) -> Any:
    """An httpx.Client aimed where `model` is, with its auth header: for the raw-HTTP lessons."""
    import httpx

    headers = model.codec.auth_headers(model.api_key) if model.api_key else {}
    return httpx.Client(base_url=model.base_url, headers=headers, timeout=timeout)


# -- the prompts' language -------------------------------------------------------------------------------

LANGUAGES = ("ja", "en")


def language() -> str:
    """The language of the tutorials' prompts: AGENTKIT_LANG ("ja", the default, or "en").

    Raises ValueError for any other value, naming the ones there are."""
    chosen = os.environ.get("AGENTKIT_LANG", "").strip().lower() or "ja"
    if chosen not in LANGUAGES:
        raise ValueError(f"AGENTKIT_LANG={chosen!r} is not a language of the tutorials: "
                         f"use one of {', '.join(LANGUAGES)}")
    return chosen


def prompt(ja: str, en: str) -> str:
    """The text a tutorial sends the model, in the language AGENTKIT_LANG chooses (Japanese by default)."""
    return en if language() == "en" else ja


# -- showing JSON ----------------------------------------------------------------------------------------

def show_json(value: Any, max_chars: int = 2500) -> None:
    """Pretty-print JSON for a lesson, cut at `max_chars` with a note saying how much was left out."""
    text = json.dumps(value, ensure_ascii=False, indent=2)
    if len(text) > max_chars:
        text = text[:max_chars] + f"\n… ({len(text) - max_chars} more characters)"
    print(text)


def _shorten(value: Any, max_str: int, hide: tuple, hide_label: str) -> Any:
    if hide and any(value == h for h in hide):
        return hide_label
    if isinstance(value, dict):
        return {k: _shorten(v, max_str, hide, hide_label) for k, v in value.items()}
    if isinstance(value, list):
        return [_shorten(v, max_str, hide, hide_label) for v in value]
    if isinstance(value, str) and len(value) > max_str:
        return value[:max_str - 1] + "…"
    return value


def compact_json(value: Any, width: int = 64, max_str: int = 40, hide: Iterable[Any] = (),
                 hide_label: str = "‹schema›") -> str:
    """JSON text where anything that fits in `width` stays on one line; long strings are cut with '…',
    and values equal to one in `hide` (e.g. tool schemas shown elsewhere) become `hide_label`."""
    def fmt(v: Any, pad: int, lead: int = 0) -> str:  # lead: characters already on this line
        one = json.dumps(v, ensure_ascii=False)
        if pad + lead + len(one) <= width or not isinstance(v, (dict, list)) or not v:
            return one
        inner = " " * (pad + 2)
        if isinstance(v, dict):
            keys = {k: json.dumps(k, ensure_ascii=False) + ": " for k in v}
            items = [inner + keys[k] + fmt(x, pad + 2, len(keys[k])) for k, x in v.items()]
            return "{\n" + ",\n".join(items) + "\n" + " " * pad + "}"
        return "[\n" + ",\n".join(inner + fmt(x, pad + 2) for x in v) + "\n" + " " * pad + "]"
    return fmt(_shorten(value, max_str, tuple(hide), hide_label), 0)


def _clip(text: str, max_lines: int) -> str:
    lines = text.splitlines()
    if len(lines) <= max_lines:
        return text
    return "\n".join(lines[:max_lines] + [f"… ({len(lines) - max_lines} more lines)"])


class SideBySide:
    """JSON documents in columns in JupyterLab (HTML, `per_row` to a row), one after another as text."""

    def __init__(self, *docs: Any, titles: Iterable[str] = ("request", "response"), max_lines: int = 40,
                 max_str: int = 40, per_row: int = 2, hide: Iterable[Any] = (), width: int = 64):
        hide = tuple(hide)
        self.parts = [(t, _clip(compact_json(d, width=width, max_str=max_str, hide=hide), max_lines))
                      for t, d in zip(titles, docs)]
        self.per_row = per_row

    def _repr_html_(self) -> str:
        cells = [f'<td style="vertical-align:top;text-align:left"><b>{html.escape(t)}</b>'
                 f'<pre style="font-size:85%;font-family:monospace">{html.escape(s)}</pre></td>'
                 for t, s in self.parts]
        rows = ["<tr>" + "".join(cells[i:i + self.per_row]) + "</tr>"
                for i in range(0, len(cells), self.per_row)]
        return "<table>" + "".join(rows) + "</table>"

    def __repr__(self) -> str:
        return "\n\n".join(f"── {t} ──\n{s}" for t, s in self.parts)


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


# -- where a value sits in a JSON document --
#
# A path names one place in a JSON document the way Python would reach it, without the quotes:
# `choices[0].message.tool_calls[1].id`. `find_paths` (above) lists the paths whose value matches; `where`
# turns them into one path for a value (tutorial 09 finds a tool's schema in each format's definition with
# it). Left out on purpose: keys that contain `.`, `[` or `(` (no provider uses one), and JSON Pointer /
# JSONPath syntax (more to learn, nothing gained).

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


# -- reading server-sent event streams (tutorial 02) --

def sse_events(response: Any) -> list[tuple[str | None, Any]]:
    """A streamed httpx response as [(event name, data)], the data parsed when it is JSON.

    httpx-sse does the framing: comment lines (`: keep-alive`) are not events, and an event without an
    `event:` line gets the name None (SSE calls it "message"). Data that is not JSON stays text, e.g.
    OpenAI's closing `[DONE]`.
    """
    from httpx_sse import EventSource

    events: list[tuple[str | None, Any]] = []
    for sse in EventSource(response).iter_sse():
        try:
            data = json.loads(sse.data)
        except ValueError:
            data = sse.data
        events.append((None if sse.event == "message" else sse.event, data))
    return events


def sse_framing(text: str) -> str:
    """How a stream's raw text is framed, in a few words:

        "event: + data: lines · no [DONE]"
        "data: lines only · 1 comment line · ends with data: [DONE]"

    Comment lines (starting with ':') are keep-alives, not events: httpx-sse and `sse_events` skip them.
    """
    blocks = [b for b in text.replace("\r\n", "\n").split("\n\n") if b.strip()]
    lines = [line for b in blocks for line in b.splitlines()]
    words = ["event: + data: lines" if any(line.startswith("event:") for line in lines) else "data: lines only"]
    comments = sum(line.startswith(":") for line in lines)
    if comments:
        words.append(f"{comments} comment line{'s' if comments > 1 else ''}")
    words.append("ends with data: [DONE]" if blocks and blocks[-1].strip() == "data: [DONE]" else "no [DONE]")
    return " · ".join(words)
