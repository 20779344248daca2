"""Execute notebooks in place with deterministic stored outputs, so nbval can compare them.

    python tools/execute_notebooks.py notebooks/*.ipynb

What makes a rerun give no diff (each measured: `jupyter nbconvert --execute --inplace` twice gave a large
diff of timestamps, widget ids and reordered widget state):
- start from a cleaned copy: outputs, execution counts, per-cell execution metadata and the saved
  widget state are removed first, so nothing old survives;
- execute with nbclient, record_timing=False, PYTHONHASHSEED=0 and a fixed SOURCE_DATE_EPOCH;
- rename widget model ids (random UUIDs) to ids derived from the notebook name and their order;
- a chart of measured wall-clock time (a cell tagged `timing-chart`) differs by a pixel on every run: its
  stored picture is kept when the chart's text (its title and size, which nbval compares) is unchanged;
  so is the picture a playground in such a cell shows (in the saved widget state of its Output widget);
- a progress bar's text reads its finished count, taken from its saved widget state (see finish_progress_text).
The kernel runs with the notebook's folder as its working directory, as JupyterLab and nbval do.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import queue
import re
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import nbformat
from nbclient import NotebookClient

WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


class PromptNotebookClient(NotebookClient):
    """nbclient's NotebookClient, which sees each kernel message within a second of its arrival.

    nbclient waits for a cell's reply with one asyncio poll of the whole cell timeout. pyzmq's asyncio poll
    can miss the wake-up of a message that arrives meanwhile (a ZeroMQ socket signals through an
    edge-triggered file descriptor); it looks once more when its timeout ends and returns the message then,
    so a cell that took one second is seen finishing `timeout` seconds later, with no error. Measured on
    tutorial 04 under load: 180 s of silence after its playground cell (a widget), the cell timeout, in
    one run out of two. A known report: https://github.com/jupyter/nbclient/issues/312. Here every wait
    is cut into polls of at most `POLL_SECONDS`, each of which ends with that last look, so a missed
    wake-up costs at most a second; the cell timeout itself is unchanged.
    """

    POLL_SECONDS = 1.0

    async def async_start_new_kernel_client(self):
        kc = await super().async_start_new_kernel_client()
        for channel in (kc.shell_channel, kc.iopub_channel):
            channel.get_msg = _in_short_polls(channel.get_msg, self.POLL_SECONDS)
        return kc


def _in_short_polls(get_msg: Callable[..., Awaitable[dict]], seconds: float) -> Callable[..., Awaitable[dict]]:
    """`get_msg(timeout=t)` as polls of at most `seconds` each until `t` has passed (forever for None)."""

    async def get_msg_in_short_polls(timeout: float | None = None) -> dict:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = seconds if deadline is None else max(0.0, min(seconds, deadline - time.monotonic()))
            try:
                return await get_msg(timeout=left)
            except queue.Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    raise

    return get_msg_in_short_polls


def clean(nb: nbformat.NotebookNode) -> None:
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None


def coalesce_streams(nb: nbformat.NotebookNode) -> None:
    """Merge consecutive stdout (or stderr) outputs of a cell into one.

    ipykernel flushes printed text on a timer, so one cell's output arrives in a different number of
    pieces from run to run; nbval joins them when comparing, but the stored file would differ.
    """
    for cell in nb.cells:
        merged = []
        for out in cell.get("outputs", []):
            if (out.get("output_type") == "stream" and merged and merged[-1].get("output_type") == "stream"
                    and merged[-1].get("name") == out.get("name")):
                merged[-1]["text"] += out["text"]
            else:
                merged.append(out)
        if cell.cell_type == "code":
            cell.outputs = merged


def rename_widget_ids(nb: nbformat.NotebookNode, name: str) -> None:
    """Replace random widget model ids by stable ones, everywhere they appear."""
    text = json.dumps(nb)
    ids = []
    state = _widget_state(nb)
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            model_id = out.get("data", {}).get(WIDGET_VIEW, {}).get("model_id")
            if model_id and model_id not in ids:
                ids.append(model_id)
    ids += [k for k in state if k not in ids]
    for i, old in enumerate(ids):
        new = hashlib.sha256(f"{name}:{i}".encode()).hexdigest()[:32]
        text = text.replace(old, new)
    nb.clear()
    nb.update(nbformat.from_dict(json.loads(text)))


def _widget_state(nb: nbformat.NotebookNode) -> dict:
    """model id -> saved state of every widget the notebook stores."""
    return nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})


def _timing_cells(old: nbformat.NotebookNode,
                  new: nbformat.NotebookNode) -> Iterator[tuple[nbformat.NotebookNode, nbformat.NotebookNode]]:
    """(stored, new) pairs of the cells tagged `timing-chart` whose source did not change."""
    for before, after in zip(old.cells, new.cells):
        if "timing-chart" in after.get("metadata", {}).get("tags", []) and before.source == after.source:
            yield before, after


def _keep_pictures(outputs_old: list, outputs_new: list) -> None:
    """Put the stored PNG back into each new output whose text (what nbval compares) is the same."""
    for out_old, out_new in zip(outputs_old, outputs_new):
        data_old, data_new = out_old.get("data", {}), out_new.get("data", {})
        if "image/png" in data_old and "image/png" in data_new and \
                data_old.get("text/plain") == data_new.get("text/plain"):
            data_new["image/png"] = data_old["image/png"]


def keep_timing_charts(old: nbformat.NotebookNode, new: nbformat.NotebookNode) -> None:
    """For cells tagged `timing-chart`, keep the old PNG when everything else in the output is the same."""
    for before, after in _timing_cells(old, new):
        _keep_pictures(before.get("outputs", []), after.get("outputs", []))


def _widgets_of(cell: nbformat.NotebookNode, state: dict) -> set[str]:
    """The widget models a cell's outputs show, with every model they contain (children, outputs)."""
    found: set[str] = set()
    todo = [out.get("data", {}).get(WIDGET_VIEW, {}).get("model_id") for out in cell.get("outputs", [])]
    while todo:
        model_id = todo.pop()
        if model_id and model_id not in found and model_id in state:
            found.add(model_id)
            todo += re.findall(r"IPY_MODEL_([0-9a-f]{32})", json.dumps(state[model_id]))
    return found


def keep_timing_widget_pictures(old: nbformat.NotebookNode, new: nbformat.NotebookNode) -> None:
    """For cells tagged `timing-chart` whose widgets show a picture (a playground's Output widget), keep the
    old PNG in the saved widget state when its text is the same. Run after rename_widget_ids (same ids)."""
    old_state, new_state = _widget_state(old), _widget_state(new)
    for _, after in _timing_cells(old, new):
        for model_id in _widgets_of(after, new_state):
            _keep_pictures(old_state.get(model_id, {}).get("state", {}).get("outputs", []),
                           new_state[model_id].get("state", {}).get("outputs", []))


def finish_progress_text(nb: nbformat.NotebookNode) -> None:
    """A progress bar (tqdm's notebook widget: an HBox of label, bar and timings) keeps as its text/plain the
    line it had when first shown, "0/48"; a reader of the file (or of JupyterLab before the widgets load)
    should read the finished count. Its saved widget state has it: the text is rebuilt from there."""
    state = _widget_state(nb)
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            box = state.get(out.get("data", {}).get(WIDGET_VIEW, {}).get("model_id"), {})
            children = [state.get(ref.removeprefix("IPY_MODEL_"), {})
                        for ref in box.get("state", {}).get("children", [])]
            if box.get("model_name") != "HBoxModel" or \
                    not any(c.get("model_name") == "FloatProgressModel" for c in children):
                continue
            words = [html.unescape(re.sub(r"<[^>]*>", "", c["state"].get("value", ""))) for c in children
                     if c.get("model_name") == "HTMLModel"]
            out["data"]["text/plain"] = " ".join(" ".join(words).replace("\u2007", " ").split())


def execute(path: Path) -> float:
    nb = nbformat.read(path, as_version=4)
    stored = nbformat.read(path, as_version=4)
    clean(nb)
    start = time.perf_counter()
    client = PromptNotebookClient(nb, timeout=120, kernel_name="python3", record_timing=False,
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    elapsed = time.perf_counter() - start
    coalesce_streams(nb)
    finish_progress_text(nb)
    keep_timing_charts(stored, nb)
    rename_widget_ids(nb, path.stem)
    keep_timing_widget_pictures(stored, nb)
    nbformat.write(nb, path)
    return elapsed


def main(paths: list[str]) -> int:
    os.environ.setdefault("PYTHONHASHSEED", "0")
    os.environ.setdefault("SOURCE_DATE_EPOCH", "1767225600")
    os.environ.pop("AGENTKIT_PROVIDER", None)  # stored outputs always come from the simulator
    os.environ.pop("AGENTKIT_LANG", None)      # ... and hold the seeds' prompts, in Japanese
    failed = 0
    for p in paths:
        path = Path(p)
        try:
            print(f"{path}: {execute(path):.1f} s")
        except Exception as exc:  # noqa: BLE001 — report every notebook, then fail
            failed += 1
            print(f"{path}: FAILED {type(exc).__name__}: {str(exc)[:2000]}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
