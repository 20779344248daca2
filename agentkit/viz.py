"""Charts for the notebooks: one function per picture, each returning a matplotlib Figure.

    fig = viz.timeline(run)          # model calls and tool spans on one time axis
    fig = viz.timelines({"sequential": r1, "threads": r2})   # one panel each, on a shared time axis
    fig = viz.bars({"a": 1, "b": 2}, title="...")

Figures are closed in pyplot before they are returned, so a notebook shows each exactly once (as the
cell's value). matplotlib is imported on first use: `import agentkit` never loads it.

Left out on purpose: styling options. Each function draws one clear picture; copy it to restyle.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

PALETTE = ["#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C"]


def pyplot():
    """matplotlib.pyplot with the kit's chart style, imported on first use (importing agentkit stays fast)."""
    from .extras import need

    matplotlib = need("matplotlib", "viz", "a chart")
    matplotlib.rcParams.update({"figure.dpi": 100, "font.size": 9, "axes.spines.top": False,
                                "axes.spines.right": False, "svg.hashsalt": "agentkit"})
    import matplotlib.pyplot as plt

    return plt


def finish(fig: Any) -> Any:
    """Lay a figure out and close it, so a notebook shows it once (as the cell's value), not twice."""
    fig.tight_layout()
    pyplot().close(fig)
    return fig


def _workers(spans: Sequence[Any]) -> list[str]:
    """The workers (threads or tasks) that ran these spans, in the order each first started one."""
    first: dict[str, float] = {}
    for s in spans:
        first[s.worker] = min(s.start, first.get(s.worker, s.start))
    return sorted(first, key=first.__getitem__)


def timeline(run_or_trace: Any, title: str = "Run timeline") -> Any:
    """Model calls and tool attempts on one time axis, one row per worker thread or task."""
    return timelines({title: run_or_trace})


def timelines(runs: Mapping[str, Any], title: str = "") -> Any:
    """One `timeline` panel per run (a Run or a Trace), titled by its key, on one shared time axis — so
    two runs of the same work compare by length: {"sequential": r1, "threads": r2}."""
    plt = pyplot()
    traces = [getattr(run, "trace", run) for run in runs.values()]
    heights = [1 + len(_workers(t.spans())) for t in traces]
    fig, axes = plt.subplots(len(traces), 1, sharex=True, squeeze=False,
                             figsize=(8, max(2.4, sum(0.6 + 0.45 * h for h in heights))),
                             gridspec_kw={"height_ratios": [max(h, 2) for h in heights]})
    tools = sorted({s.tool for t in traces for s in t.spans()})
    for ax, label, trace in zip(axes[:, 0], runs, traces):
        spans = trace.spans()
        rows = ["model"] + _workers(spans)
        for req, resp in zip(trace.of("model_request"), trace.of("model_response")):
            ax.barh(0, (resp.t - req.t) * 1000 or 0.05, left=req.t * 1000, color=PALETTE[0], height=0.6)
        for s in spans:
            color = PALETTE[1 + tools.index(s.tool) % (len(PALETTE) - 1)] if s.ok else "#C44E52"
            ax.barh(rows.index(s.worker), max(s.duration * 1000, 0.05), left=s.start * 1000, color=color,
                    height=0.6, edgecolor="white")
        ax.set_yticks(range(len(rows)), rows)
        ax.set_ylim(len(rows) - 0.5, -0.5)
        ax.set_title(label, fontsize=9, loc="left")
    axes[-1, 0].set_xlabel("milliseconds since the run started")
    handles = [plt.Rectangle((0, 0), 1, 1, color=PALETTE[0])] + [
        plt.Rectangle((0, 0), 1, 1, color=PALETTE[1 + i % (len(PALETTE) - 1)]) for i in range(len(tools))]
    axes[0, 0].legend(handles, ["model call"] + tools, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=7,
                      frameon=False)
    if title:
        fig.suptitle(title)
    return finish(fig)


def bars(values: Mapping[str, float], title: str = "", xlabel: str = "", ylabel: str = "",
         annotate: str = "{:g}", horizontal: bool = False, colors: Sequence[str] | None = None) -> Any:
    """A plain bar chart of label -> value, each bar labelled with its value."""
    plt = pyplot()
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
    return finish(fig)


def grouped_bars(table: Mapping[str, Mapping[str, float]], title: str = "", ylabel: str = "",
                 annotate: str = "{:g}") -> Any:
    """Bars grouped by outer key, one colour per inner key: {"openai-chat": {"request": 812, ...}, ...}."""
    plt = pyplot()
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
    return finish(fig)


def matrix(rows: Sequence[str], columns: Sequence[str], cells: Mapping[tuple[str, str], str],
           title: str = "") -> Any:
    """A labelled grid: which row (e.g. fixture) was caught where (e.g. gate). Non-empty cells are shaded."""
    plt = pyplot()
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
    return finish(fig)


# -- charts for 02_provider_formats --

def stacked_bars(table: Mapping[str, Mapping[str, float]], title: str = "", xlabel: str = "",
                 annotate: str = "{:g}") -> Any:
    """Horizontal bars cut into parts, one bar per outer key: {"openai-chat": {"tools": 540, "rest": 240}}.

    Each part is labelled inside the bar when it is wide enough, and the total at the bar's end.
    """
    plt = pyplot()
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
    return finish(fig)


# -- charts for 05_parallel_tools and 07_transport_faults_and_fallbacks --

_WORKER_COLOURS = [c for c in PALETTE[1:] if c != "#C44E52"]  # red means a failed attempt


def worker_colours(count: int) -> list[str]:
    """`count` different colours, one per worker: the palette's while it lasts, else evenly spaced along
    viridis (purple to yellow, no red). A colour seen twice would read "the same thread" — the very thing
    a Gantt chart of workers is there to tell apart."""
    if count <= len(_WORKER_COLOURS):
        return _WORKER_COLOURS[:count]
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    viridis = colormaps["viridis"]
    return [to_hex(viridis(i / (count - 1))) for i in range(count)]


def _call_order(trace: Any) -> list[str]:
    """Call ids in the model's emitted order: the order of the `result` events (the loop answers in
    that order); calls without a result yet follow in the order they started."""
    order = [e.data["call_id"] for e in trace.of("result")]
    return order + [s.call_id for s in trace.spans() if s.call_id not in order]


def gantt(runs: Mapping[str, Any], title: str = "", seconds: bool = True) -> Any:
    """One panel per run (a Run or a Trace), on a shared time axis: a row for the model's calls, then
    one row per tool call in the order the model asked for them; each attempt's bar coloured by the
    worker (thread or task) that ran it, failed attempts red.

        viz.gantt({"sequential": r1, "threads": r2, "asyncio": r3}, title="one batch, three executors")
    """
    plt = pyplot()
    traces = {label: getattr(run, "trace", run) for label, run in runs.items()}
    heights = [1 + len(_call_order(t)) for t in traces.values()]
    fig, axes = plt.subplots(len(traces), 1, sharex=True, squeeze=False,
                             figsize=(8, 0.9 + sum(0.22 * h + 0.45 for h in heights)),
                             gridspec_kw={"height_ratios": [max(h, 2) for h in heights]})
    scale, unit = (1.0, "seconds") if seconds else (1000.0, "milliseconds")
    for ax, (label, trace) in zip(axes[:, 0], traces.items()):
        calls = _call_order(trace)
        spans = trace.spans()
        workers = _workers(spans)
        colours = worker_colours(len(workers))
        for req, resp in zip(trace.of("model_request"), trace.of("model_response")):
            ax.barh(0, max((resp.t - req.t) * scale, 0.002 * scale), left=req.t * scale, color=PALETTE[0],
                    height=0.7)
        for s in spans:
            color = colours[workers.index(s.worker)] if s.ok else "#C44E52"
            ax.barh(1 + calls.index(s.call_id), max(s.duration * scale, 0.002 * scale), left=s.start * scale,
                    color=color, height=0.7, edgecolor="white", linewidth=0.5)
        rows = ["model"] + [f"call {i + 1}" for i in range(len(calls))]
        step = max(1, len(rows) // 12)  # at most about a dozen labels: 64 calls would be a black smear
        ax.set_yticks(range(0, len(rows), step), rows[::step], fontsize=7)
        ax.set_ylim(len(rows) - 0.4, -0.6)
        ax.set_title(f"{label} — {len(workers)} worker{'s' if len(workers) != 1 else ''}", fontsize=9, loc="left")
    # Bars pin the axis to the earliest bar (matplotlib's sticky edges), and the first model call starts at
    # about 0: without a margin its thin bar would be drawn under the axis line, out of sight.
    left, right = axes[0, 0].get_xlim()  # the panels share this axis
    axes[0, 0].set_xlim(left - 0.015 * (right - left), right)
    axes[-1, 0].set_xlabel(f"{unit} since the run started")
    if title:
        fig.suptitle(title)
    return finish(fig)


def scaling(measured: Mapping[str, Sequence[tuple[float, float]]],
            expected: Mapping[str, Sequence[tuple[float, float]]] | None = None, title: str = "",
            xlabel: str = "", ylabel: str = "", annotate: str | None = None) -> Any:
    """Measured points as lines with markers, one per series: {"threads": [(1, 0.10), (8, 0.11), ...]};
    `expected` as dashed step lines in the same colours (a series of the same name), e.g. the waves a
    capped pool must take. `annotate` (a format such as "{:.2f}") labels each measured point."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 3.8))
    colours = {name: PALETTE[i % len(PALETTE)] for i, name in
               enumerate(dict.fromkeys([*measured, *(expected or {})]))}
    for name, points in (expected or {}).items():
        xs, ys = zip(*points) if points else ((), ())
        ax.step(xs, ys, where="post", linestyle="--", linewidth=1, color=colours[name], alpha=0.7,
                label=f"{name} (expected)")
    for name, points in measured.items():
        xs, ys = zip(*points) if points else ((), ())
        ax.plot(xs, ys, marker="o", markersize=4, linewidth=1.5, color=colours[name], label=name)
        if annotate:
            for x, y in points:
                ax.annotate(annotate.format(y), (x, y), textcoords="offset points", xytext=(0, 5), fontsize=7,
                            ha="center", color=colours[name])
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    ax.legend(frameon=False, fontsize=7, loc="upper left")
    return finish(fig)


def table(columns: Sequence[str], rows: Sequence[Sequence[Any]], title: str = "",
          widths: Sequence[float] | None = None) -> Any:
    """A table as a figure: for measured values in a notebook cell tagged `timing-chart` (text output
    is compared by nbval and must not change between runs; a figure's picture is not). A "\n" in a
    column name breaks its header line."""
    plt = pyplot()
    header_lines = max((str(c).count("\n") + 1 for c in columns), default=1)
    units = header_lines + len(rows)  # in lines of text: every body row is one
    fig, ax = plt.subplots(figsize=(9, 0.45 + 0.3 * units))
    ax.axis("off")
    drawn = ax.table(cellText=[[str(c) for c in row] for row in rows], colLabels=list(columns),
                     colWidths=list(widths) if widths else None, cellLoc="left", bbox=[0, 0, 1, 1])
    drawn.auto_set_font_size(False)
    drawn.set_fontsize(8)
    for (r, _), cell in drawn.get_celld().items():
        cell.set_height((header_lines if r == 0 else 1) / units)
        cell.set_edgecolor("#DDDDDD")
        if r == 0:
            cell.set_text_props(weight="bold")
            cell.set_facecolor("#F2F2F2")
    if title:
        ax.set_title(title, fontsize=9, loc="left")
    return finish(fig)


def attempt_path(attempts: Sequence[Any]) -> str:
    """The outcomes of a call's attempts in order, repeats counted, each model named after the first:
    "503 ×3 → 500 ×3 (b) → 200 (c)"."""
    groups: list[list[Any]] = []
    first = attempts[0].model if attempts else None
    for a in attempts:
        key = (a.outcome, a.model)
        if groups and groups[-1][0] == key:
            groups[-1][1] += 1
        else:
            groups.append([key, 1])
    return " → ".join(f"{outcome}" + (f" ×{n}" if n > 1 else "") + ("" if model == first else f" ({model})")
                      for (outcome, model), n in groups)


def attempt_timeline(rows: Mapping[str, Sequence[Any]], title: str = "") -> Any:
    """One bar per call, cut into its attempts: the wait before each retry (grey, hatched) and each
    attempt (red when it failed, green when it answered); at the bar's end the attempts' outcomes
    (429, 503, "timeout", ..., and the model after a fallback) and the call's total time. `rows` maps a
    label to that call's attempts: objects with `.wait`, `.elapsed`, `.ok`, `.outcome` and `.model`,
    like `agentkit.http.retries.Attempt`."""
    plt = pyplot()
    labels = list(rows)
    fig, ax = plt.subplots(figsize=(8.5, max(2.0, 0.9 + 0.42 * len(labels))))
    longest = max((sum(a.wait + a.elapsed for a in attempts) for attempts in rows.values()), default=0) or 1
    for y, label in enumerate(labels):
        left = 0.0
        for attempt in rows[label]:
            if attempt.wait > 0:
                ax.barh(y, attempt.wait, left=left, color="#BBBBBB", height=0.6, hatch="//", edgecolor="white")
                left += attempt.wait
            width = max(attempt.elapsed, longest * 0.008)  # an instant answer stays visible
            ax.barh(y, width, left=left, color=PALETTE[2] if attempt.ok else "#C44E52", height=0.6,
                    edgecolor="white")
            left += width
        attempts = rows[label]
        ax.text(left, y, f"  {attempt_path(attempts)}   ({len(attempts)} attempt{'s' if len(attempts) != 1 else ''}, "
                         f"{left:.2f} s)", va="center", fontsize=7)
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    ax.set_xlim(0, longest * 1.9)  # the right part holds the outcomes' text, not time
    ax.set_xticks([t for t in ax.get_xticks() if 0 <= t <= longest * 1.05])
    ax.spines["bottom"].set_bounds(0, longest)
    ax.invert_yaxis()
    ax.set_xlabel("seconds since the call started (red: a failed attempt, grey: waiting, green: the answer)",
                  loc="left")
    ax.set_title(title)
    return finish(fig)


# -- charts for 04_error_handling and 06_limits_and_stopping --

#: What the sweep's metrics mean, as axis titles (tutorial 04).
SWEEP_LABELS = {"success_rate": "share of runs that got an answer", "tool_runs": "tool runs per run",
                "model_calls": "model calls per run", "seconds": "seconds per run"}


#: Line styles and markers of `sweep_panels`, by series, so that overlapping lines stay apart.
SERIES_DASHES, SERIES_MARKERS = ("-", "--", "-.", ":"), ("o", "s", "^", "D")


def sweep_panels(rows: Sequence[Mapping[str, Any]], metrics: Sequence[str] = tuple(SWEEP_LABELS),
                 x: str = "failure_rate", series: str = "strategy", title: str = "",
                 xlabel: str = "chance that one tool run fails") -> Any:
    """One small line chart per metric, one line per series, from flat rows:

        [{"strategy": "report", "failure_rate": 0.1, "success_rate": 0.97, "tool_runs": 1.1, ...}, ...]
    """
    plt = pyplot()
    names = list(dict.fromkeys(row[series] for row in rows))
    columns = 2 if len(metrics) > 1 else 1
    lines = (len(metrics) + columns - 1) // columns
    fig, axes = plt.subplots(lines, columns, figsize=(8.5, 0.6 + 2.5 * lines), squeeze=False)
    for ax, metric in zip(axes.flat, metrics):
        for i, name in enumerate(names):
            mine = [row for row in rows if row[series] == name]
            # Series that coincide (Retry -> report and -> raise at low rates) must both stay visible: each
            # later line is thinner, dashed differently and drawn on top of the wider ones before it.
            ax.plot([row[x] for row in mine], [row[metric] for row in mine], marker=SERIES_MARKERS[i % 4],
                    markersize=2.5 + 1.2 * (len(names) - 1 - i), linewidth=1.0 + 0.6 * (len(names) - 1 - i),
                    linestyle=SERIES_DASHES[i % 4],
                    color=PALETTE[i % len(PALETTE)], label=name, zorder=2 + i)
        ax.set_title(SWEEP_LABELS.get(metric, metric), fontsize=9)
        ax.set_xlabel(xlabel, fontsize=8)
        if metric == "success_rate":
            ax.set_ylim(-0.04, 1.04)
            ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:.0%}"))
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(metrics):]:
        ax.set_visible(False)
    if title:
        fig.suptitle(title, fontsize=9, y=0.995)
    fig.legend(*axes.flat[0].get_legend_handles_labels(), loc="upper center", ncol=len(names), frameon=False,
               fontsize=8, bbox_to_anchor=(0.5, 0.96 if title else 1.0))
    fig.tight_layout(rect=(0, 0, 1, 0.92 if title else 0.95))
    pyplot().close(fig)
    return fig


#: The colours of `outcome_grid`'s categories, light enough to read black text on.
OUTCOME_COLORS = {"raises": "#F4B6B6", "reports": "#BFD3EE", "own text": "#C5E5C5"}


def outcome_grid(rows: Sequence[str], columns: Sequence[str], cells: Mapping[tuple[str, str], tuple[str, str]],
                 colors: Mapping[str, str] | None = None, title: str = "") -> Any:
    """A labelled grid whose cells are coloured by category: {(row, column): (text, category)}.

    Tutorial 04 draws failures (rows) against error strategies (columns), coloured by what happened.
    """
    from matplotlib.colors import to_rgb

    plt = pyplot()
    colors = dict(OUTCOME_COLORS if colors is None else colors)
    fig, ax = plt.subplots(figsize=(1.9 + 1.25 * len(columns), 1.0 + 0.55 * len(rows)))
    blank = to_rgb("#FFFFFF")
    image = [[to_rgb(colors[cells[r, c][1]]) if (r, c) in cells and cells[r, c][1] in colors else blank
              for c in columns] for r in rows]
    ax.imshow(image, aspect="auto")
    for i, r in enumerate(rows):
        for j, c in enumerate(columns):
            if (r, c) in cells:
                ax.text(j, i, cells[r, c][0], ha="center", va="center", fontsize=7)
    ax.set_xticks(range(len(columns)), columns, rotation=30, ha="left", fontsize=8)
    ax.set_yticks(range(len(rows)), rows, fontsize=8)
    ax.xaxis.tick_top()
    ax.set_xticks([j - 0.5 for j in range(1, len(columns))], minor=True)
    ax.set_yticks([i - 0.5 for i in range(1, len(rows))], minor=True)
    ax.grid(which="minor", color="white", linewidth=2)
    ax.tick_params(which="both", length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    used = [k for k in colors if any(cat == k for _, cat in cells.values())]
    ax.legend([plt.Rectangle((0, 0), 1, 1, color=colors[k]) for k in used], used, loc="upper left",
              bbox_to_anchor=(0, -0.02), ncol=len(used), frameon=False, fontsize=8)
    ax.set_title(title, fontsize=9, pad=8)
    return finish(fig)


#: How `calls_per_step` sorts a tool call by the result the model read for it, and the colour of each.
CALL_FATES = {"ran: ok": PALETTE[2], "ran: failed": PALETTE[3], "refused at a gate": PALETTE[5],
              "denied": PALETTE[6], "blocked by a limit": PALETTE[1], "not run": "#BBBBBB"}


def call_fate(ok: bool, error_kind: str | None) -> str:
    """The `CALL_FATES` category of one result: did the tool run, and how did it go?"""
    if ok:
        return "ran: ok"
    if error_kind in ("tool_error", "timeout", "bad_return"):
        return "ran: failed"
    if error_kind in ("limit", "not_run", "denied"):
        return {"limit": "blocked by a limit", "not_run": "not run", "denied": "denied"}[error_kind]
    return "refused at a gate"


def calls_per_step(runs: Any, title: str = "What became of each tool call, model call by model call") -> Any:
    """A stacked bar per model call: the calls it asked for, by what became of each (`CALL_FATES`).

    Takes a Run, or several (the runs of one Thread), read from their traces. A model call that asked for no
    tool is marked "answer"; each run is labelled with its stop reason.
    """
    plt = pyplot()
    runs = list(runs) if isinstance(runs, (list, tuple)) else [runs]
    bars: list[dict[str, int]] = []
    ticks, spans, answers = [], [], []
    for run_number, one in enumerate(runs, 1):
        first = len(bars)
        for event in one.trace.events:
            if event.kind == "model_request":
                bars.append(dict.fromkeys(CALL_FATES, 0))
                ticks.append(str(event.data["step"]))
            elif event.kind == "model_response" and not event.data["tool_calls"]:
                answers.append(len(bars) - 1)
            elif event.kind == "result" and bars:
                bars[-1][call_fate(event.data["ok"], event.data.get("error"))] += 1
        spans.append((first, len(bars), f"run {run_number}\n{one.stop_reason}" if len(runs) > 1
                       else f"stop: {one.stop_reason}"))
    fig, ax = plt.subplots(figsize=(max(7.5, 2.5 + 0.34 * len(bars)), 3.4))
    bottom = [0] * len(bars)
    for fate_name, color in CALL_FATES.items():
        heights = [bar[fate_name] for bar in bars]
        if any(heights):
            ax.bar(range(len(bars)), heights, bottom=bottom, color=color, label=fate_name, width=0.75,
                   edgecolor="white")
            bottom = [b + h for b, h in zip(bottom, heights)]
    top = max(bottom, default=0) or 1
    for i in answers:
        ax.text(i, 0.02 * top, "answer", rotation=90, ha="center", va="bottom", fontsize=7)
    for i, (first, last, label) in enumerate(spans):
        if first:
            ax.axvline(first - 0.5, color="#555555", linewidth=0.8, linestyle="--")
        # two rows of labels, alternating, so that the labels of one-bar runs side by side do not overlap
        ax.text((first + last - 1) / 2, top * (1.05 if i % 2 == 0 else 1.25), label, ha="center", va="bottom",
                fontsize=7)
    ax.set_ylim(0, top * (1.5 if len(spans) > 1 else 1.3))
    ax.set_xticks(range(len(bars)), ticks, fontsize=7)
    ax.set_xlabel("model call (step) number")
    ax.set_ylabel("tool calls asked for")
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=7, frameon=False)
    ax.set_title(title, fontsize=9)
    return finish(fig)


# -- charts for 14_untrusted_tool_results --

#: The two rates of a defence: red for the attacker's, green for the user's.
RATE_COLOURS = {"attack success": "#C44E52", "task success": "#55A868"}


def defence_rates(table: Mapping[str, Mapping[str, float]], title: str = "") -> Any:
    """Two horizontal bars per row, attack success and task success, as percentages:
    {"none": {"attack success": 1.0, "task success": 0.5}, "fence": {...}, ...}. Rows top to bottom."""
    plt = pyplot()
    rows = list(table)
    fig, ax = plt.subplots(figsize=(8, 0.9 + 0.5 * len(rows)))
    height = 0.38
    for i, (name, colour) in enumerate(RATE_COLOURS.items()):
        ys = [r + (i - 0.5) * height for r in range(len(rows))]
        values = [100 * table[r].get(name, 0) for r in rows]
        drawn = ax.barh(ys, values, height, label=name, color=colour)
        ax.bar_label(drawn, labels=[f"{v:.0f}%" for v in values], padding=2, fontsize=7)
    ax.set_yticks(range(len(rows)), rows)
    ax.invert_yaxis()
    ax.set_xlim(0, 112)
    ax.set_xlabel("share of the runs (%)")
    ax.legend(loc="lower left", bbox_to_anchor=(0, 1.0), ncol=2, frameon=False, fontsize=8, borderaxespad=0.2)
    ax.set_title(title, fontsize=9, pad=20)
    return finish(fig)
