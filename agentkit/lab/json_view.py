"""Showing JSON documents compactly in a notebook: cut long strings, keep short parts on one line, put
a request beside its response."""

from __future__ import annotations

import html
import json
from typing import Any, Iterable


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
