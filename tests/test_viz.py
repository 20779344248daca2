"""Charts: each function returns one closed matplotlib Figure showing what it was given."""

from __future__ import annotations

import subprocess
import sys

import matplotlib

matplotlib.use("Agg")

import agentkit  # noqa: E402
from agentkit import viz  # noqa: E402
from agentkit.models import parallel_calls  # noqa: E402


def _labels(ax):
    return [t.get_text() for t in ax.get_xticklabels() + ax.get_yticklabels()]


def test_timeline_has_a_row_for_the_model_and_one_per_worker():
    @agentkit.tool
    def nap(i: int) -> int:
        """Quick."""
        return i

    run = agentkit.run(parallel_calls("nap", 3), "go", tools=[nap])
    fig = viz.timeline(run, title="three calls")
    (ax,) = fig.axes
    rows = [t.get_text() for t in ax.get_yticklabels()]
    assert rows[0] == "model" and len(rows) == 1 + len({s.worker for s in run.trace.spans()})
    assert ax.get_title() == "three calls"
    assert len(ax.patches) == run.steps + run.tool_runs  # one bar per model call and per tool attempt


def test_bars_label_every_bar_with_its_value():
    fig = viz.bars({"a": 1, "b": 2.5}, title="t")
    (ax,) = fig.axes
    assert [p.get_height() for p in ax.patches] == [1, 2.5]
    assert [t.get_text() for t in ax.texts] == ["1", "2.5"]


def test_grouped_bars_draw_one_bar_per_group_and_series():
    fig = viz.grouped_bars({"x": {"request": 10, "response": 20}, "y": {"request": 5, "response": 7}})
    (ax,) = fig.axes
    assert len(ax.patches) == 4 and {"x", "y"} <= set(_labels(ax))


def test_matrix_writes_only_the_filled_cells():
    fig = viz.matrix(["f1", "f2"], ["parse", "schema"], {("f1", "schema"): "type"})
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.texts] == ["type"]


def test_importing_agentkit_does_not_import_matplotlib():
    code = "import sys, agentkit; print('matplotlib' in sys.modules, 'agentkit.viz' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_stacked_bars_stack_the_parts_of_each_row():
    fig = viz.stacked_bars({"turn 1": {"tools": 600, "talk": 80}, "turn 2": {"tools": 600, "talk": 800}})
    (ax,) = fig.axes
    widths = sorted(p.get_width() for p in ax.patches)
    assert widths == [80, 600, 600, 800]
