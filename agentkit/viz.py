"""Charts for the notebooks: one function per picture, each returning a matplotlib Figure.

    fig = viz.timeline(run)          # model calls and tool spans on one time axis
    fig = viz.bars({"a": 1, "b": 2}, title="...")

Figures are closed in pyplot before they are returned, so a notebook shows each exactly once (as the
cell's value). matplotlib is imported on first use: `import agentkit` never loads it.

Left out on purpose: styling options. Each function draws one clear picture; copy it to restyle.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

PALETTE = ["#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C"]


def _plt():
    import matplotlib

    matplotlib.rcParams.update({"figure.dpi": 100, "font.size": 9, "axes.spines.top": False,
                                "axes.spines.right": False, "svg.hashsalt": "agentkit"})
    import matplotlib.pyplot as plt

    return plt


def _done(fig: Any) -> Any:
    fig.tight_layout()
    _plt().close(fig)
    return fig


def timeline(run_or_trace: Any, title: str = "Run timeline") -> Any:
    """Model calls and tool attempts on one time axis, one row per worker thread or task."""
    trace = getattr(run_or_trace, "trace", run_or_trace)
    plt = _plt()
    spans = trace.spans()
    workers = sorted({s.worker for s in spans}, key=lambda w: min(s.start for s in spans if s.worker == w))
    rows = ["model"] + workers
    fig, ax = plt.subplots(figsize=(8, max(2.4, 0.9 + 0.45 * len(rows))))
    requests = trace.of("model_request")
    responses = trace.of("model_response")
    for req, resp in zip(requests, responses):
        ax.barh(0, (resp.t - req.t) * 1000 or 0.05, left=req.t * 1000, color=PALETTE[0], height=0.6)
    tools = sorted({s.tool for s in spans})
    for s in spans:
        color = PALETTE[1 + tools.index(s.tool) % (len(PALETTE) - 1)] if s.ok else "#C44E52"
        ax.barh(rows.index(s.worker), max(s.duration * 1000, 0.05), left=s.start * 1000, color=color,
                height=0.6, edgecolor="white")
    ax.set_yticks(range(len(rows)), rows)
    ax.invert_yaxis()
    ax.set_xlabel("milliseconds since the run started")
    ax.set_title(title)
    handles = [plt.Rectangle((0, 0), 1, 1, color=PALETTE[0])] + [
        plt.Rectangle((0, 0), 1, 1, color=PALETTE[1 + i % (len(PALETTE) - 1)]) for i in range(len(tools))]
    ax.legend(handles, ["model call"] + tools, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=7,
              frameon=False)
    return _done(fig)


def bars(values: Mapping[str, float], title: str = "", xlabel: str = "", ylabel: str = "",
         annotate: str = "{:g}", horizontal: bool = False, colors: Sequence[str] | None = None) -> Any:
    """A plain bar chart of label -> value, each bar labelled with its value."""
    plt = _plt()
    labels, heights = list(values), list(values.values())
    fig, ax = plt.subplots(figsize=(7, 0.6 + 0.4 * len(labels)) if horizontal else (7, 3.2))
    colors = list(colors) if colors else [PALETTE[i % len(PALETTE)] for i in range(len(labels))]
    drawn = (ax.barh(labels, heights, color=colors) if horizontal else ax.bar(labels, heights, color=colors))
    ax.bar_label(drawn, labels=[annotate.format(h) for h in heights], padding=2, fontsize=8)
    if horizontal:
        ax.invert_yaxis()
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if not horizontal and max((len(str(label)) for label in labels), default=0) > 10:
        ax.tick_params(axis="x", rotation=20)
    return _done(fig)


def grouped_bars(table: Mapping[str, Mapping[str, float]], title: str = "", ylabel: str = "",
                 annotate: str = "{:g}") -> Any:
    """Bars grouped by outer key, one colour per inner key: {"openai-chat": {"request": 812, ...}, ...}."""
    plt = _plt()
    groups = list(table)
    series = list(dict.fromkeys(k for inner in table.values() for k in inner))
    width = 0.8 / max(len(series), 1)
    fig, ax = plt.subplots(figsize=(8, 3.4))
    for i, name in enumerate(series):
        xs = [g + i * width - 0.4 + width / 2 for g in range(len(groups))]
        heights = [table[g].get(name, 0) for g in groups]
        drawn = ax.bar(xs, heights, width, label=name, color=PALETTE[i % len(PALETTE)])
        ax.bar_label(drawn, labels=[annotate.format(h) for h in heights], padding=2, fontsize=7)
    ax.set_xticks(range(len(groups)), groups)
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    ax.legend(frameon=False, fontsize=8)
    return _done(fig)


def matrix(rows: Sequence[str], columns: Sequence[str], cells: Mapping[tuple[str, str], str],
           title: str = "") -> Any:
    """A labelled grid: which row (e.g. fixture) was caught where (e.g. gate). Non-empty cells are shaded."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(1.6 + 1.5 * len(columns), 0.6 + 0.42 * len(rows)))
    grid = [[1.0 if cells.get((r, c)) else 0.0 for c in columns] for r in rows]
    ax.imshow(grid, cmap="Blues", vmin=0, vmax=1.6, aspect="auto")
    for i, r in enumerate(rows):
        for j, c in enumerate(columns):
            text = cells.get((r, c), "")
            if text:
                ax.text(j, i, text, ha="center", va="center", fontsize=8)
    ax.set_xticks(range(len(columns)), columns)
    ax.set_yticks(range(len(rows)), rows)
    ax.xaxis.tick_top()
    ax.set_title(title, pad=24)
    for spine in ax.spines.values():
        spine.set_visible(False)
    return _done(fig)


# -- charts for 02_provider_formats --

def stacked_bars(table: Mapping[str, Mapping[str, float]], title: str = "", xlabel: str = "",
                 annotate: str = "{:g}") -> Any:
    """Horizontal bars cut into parts, one bar per outer key: {"openai-chat": {"tools": 540, "rest": 240}}.

    Each part is labelled inside the bar when it is wide enough, and the total at the bar's end.
    """
    plt = _plt()
    rows = list(table)
    parts = list(dict.fromkeys(k for inner in table.values() for k in inner))
    fig, ax = plt.subplots(figsize=(8, 1.0 + 0.36 * len(rows)))
    left = [0.0] * len(rows)
    widest = max((sum(inner.values()) for inner in table.values()), default=0) or 1
    for i, part in enumerate(parts):
        widths = [table[r].get(part, 0) for r in rows]
        drawn = ax.barh(rows, widths, left=left, height=0.62, label=part, color=PALETTE[i % len(PALETTE)])
        ax.bar_label(drawn, labels=[annotate.format(w) if w > 0.05 * widest else "" for w in widths],
                     label_type="center", fontsize=7, color="white")
        left = [a + w for a, w in zip(left, widths)]
    for y, total in enumerate(left):
        ax.text(total, y, " " + annotate.format(total), va="center", fontsize=8)
    ax.set_xlim(0, widest * 1.12)
    ax.invert_yaxis()
    ax.set_title(title, pad=22)
    ax.set_xlabel(xlabel)
    ax.legend(loc="lower left", bbox_to_anchor=(0, 1.0), ncol=len(parts), frameon=False, fontsize=8,
              borderaxespad=0.2)
    return _done(fig)
