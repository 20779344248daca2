"""What the notebooks share: connecting (simulator or real provider) and showing JSON compactly.

    from agentkit import lab
    model = lab.connect("openai-chat")     # HTTPModel on the simulator, or on the configured provider
    print(lab.describe(model))             # "simulator: sim-reasoner in openai-chat format"
    client = lab.raw_client(model)         # an httpx.Client with the base URL and auth header set
    lab.SideBySide(request, response)      # two JSON documents in columns

Which model `connect(format)` gives (see the README, "Using a real provider"):
- a `sim-*` model name: always the simulator — behaviour presets exist only there;
- AGENTKIT_PROVIDER names this format (aliases: openai, responses, claude, google): the real provider,
  its key from the usual variable, the model from AGENTKIT_MODEL or the format's default;
- AGENTKIT_BASE_URL is set and the format is openai-chat: that OpenAI-compatible server;
- otherwise: the shared simulator (`agentkit.sim.shared()`), so a notebook that compares formats keeps
  every format it was not told about offline.
"""

from __future__ import annotations

import html
import json
import os
from typing import Any, Callable, Iterable

from . import sim
from .http import _PROVIDER_ALIASES, HTTPModel


# -- connecting ----------------------------------------------------------------------------------------

def configured_format() -> str | None:
    """The wire format the environment asks for (AGENTKIT_PROVIDER / AGENTKIT_BASE_URL), or None."""
    provider = os.environ.get("AGENTKIT_PROVIDER", "").strip().lower()
    provider = _PROVIDER_ALIASES.get(provider, provider)
    if provider == "sim":
        return None
    if provider:
        return provider
    return "openai-chat" if os.environ.get("AGENTKIT_BASE_URL") else None


def connect(format: str = "openai-chat", model: str | None = None, **kwargs: Any) -> HTTPModel:
    """An HTTPModel for `format`: the configured provider if it is this format, else the simulator."""
    if (model is not None and model.startswith("sim-")) or configured_format() != format:
        return simulator(format, model or "sim-reasoner", **kwargs)
    return HTTPModel.from_env(format, sim_url=sim.shared(), **kwargs)


def simulator(format: str = "openai-chat", model: str = "sim-reasoner", **kwargs: Any) -> HTTPModel:
    """An HTTPModel on the shared simulator whatever the environment says."""
    server = sim.shared()
    _warm_up()
    kwargs.setdefault("api_key", "sim-key")  # the simulator wants a key; a real one is never sent to it
    return HTTPModel(model, format, base_url=server.base_url(format), **kwargs)


def _warm_up() -> None:
    """Load the JSON Schema validator now, so the first run's timeline shows the run, not an import.

    (In a full lab install, `import jsonschema` takes most of a second: one of its optional format
    checkers builds a parser at import time.)
    """
    from .validate import validator_for

    validator_for({"type": "object"})


def simulated(model: HTTPModel) -> bool:
    """True when the model talks to the local simulator."""
    return model.base_url.startswith(sim.shared().url)


def describe(model: HTTPModel) -> str:
    """One stable line naming what the notebook talks to (no port, no key: safe for stored outputs)."""
    where = "simulator" if simulated(model) else model.base_url
    return f"{where}: {model.model} in {model.format} format"


def raw_client(model: HTTPModel, timeout: float = 30.0) -> Any:
    """An httpx.Client aimed where `model` is, with its auth header: for the raw-HTTP lessons."""
    import httpx

    headers = model.codec.auth_headers(model._api_key) if model._api_key else {}
    return httpx.Client(base_url=model.base_url, headers=headers, timeout=timeout)


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
                 max_str: int = 40, per_row: int = 2, hide: Iterable[Any] = ()):
        hide = tuple(hide)
        self.parts = [(t, _clip(compact_json(d, max_str=max_str, hide=hide), max_lines))
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
