"""tools/execute_notebooks.py: a playground in a `timing-chart` cell keeps its stored picture when only the
pixels changed, so re-executing the notebooks gives no diff."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import nbformat

TOOL = Path(__file__).resolve().parents[1] / "tools" / "execute_notebooks.py"
spec = importlib.util.spec_from_file_location("execute_notebooks", TOOL)
execute_notebooks = importlib.util.module_from_spec(spec)
spec.loader.exec_module(execute_notebooks)

BOX, OUT = "a" * 32, "b" * 32


def notebook(png: str, text: str = "<Figure size 800x300 with 1 Axes>",
             tags: tuple = ("timing-chart",)) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("widgets.playground(...)", id="c1")
    cell.metadata["tags"] = list(tags)
    cell.outputs = [nbformat.v4.new_output("execute_result", data={
        execute_notebooks.WIDGET_VIEW: {"model_id": BOX, "version_major": 2, "version_minor": 0},
        "text/plain": "interactive(...)"}, execution_count=1)]
    nb.cells = [cell]
    state = {BOX: {"model_name": "VBoxModel", "state": {"children": [f"IPY_MODEL_{OUT}"]}},
             OUT: {"model_name": "OutputModel", "state": {"outputs": [
                 {"output_type": "display_data", "data": {"image/png": png, "text/plain": text}}]}}}
    nb.metadata["widgets"] = {execute_notebooks.WIDGET_STATE: {"state": state}}
    return nb


def picture(nb: nbformat.NotebookNode) -> str:
    state = nb.metadata["widgets"][execute_notebooks.WIDGET_STATE]["state"]
    return state[OUT]["state"]["outputs"][0]["data"]["image/png"]


def test_a_playgrounds_picture_is_kept_when_only_its_pixels_changed():
    new = notebook("new pixels")
    execute_notebooks.keep_timing_widget_pictures(notebook("old pixels"), new)
    assert picture(new) == "old pixels"


def test_a_new_picture_is_stored_when_its_text_changed_or_the_cell_is_not_a_timing_chart():
    new = notebook("new pixels", text="<Figure size 800x400 with 2 Axes>")
    execute_notebooks.keep_timing_widget_pictures(notebook("old pixels"), new)
    assert picture(new) == "new pixels"
    new = notebook("new pixels", tags=())
    execute_notebooks.keep_timing_widget_pictures(notebook("old pixels", tags=()), new)
    assert picture(new) == "new pixels"


def progress_bar_notebook(shown: str, label: str, done: float, total: float) -> nbformat.NotebookNode:
    """A cell that displayed a tqdm bar (an HBox of label, progress and timings) when it was 0 of `total`."""
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("await run_benchmark(..., progress=bar)", id="c1")
    cell.outputs = [nbformat.v4.new_output("display_data", data={
        execute_notebooks.WIDGET_VIEW: {"model_id": BOX, "version_major": 2, "version_minor": 0},
        "text/plain": shown})]
    nb.cells = [cell]
    text, bar, timings = "c" * 32, "d" * 32, "e" * 32
    state = {BOX: {"model_name": "HBoxModel", "state": {"children": [f"IPY_MODEL_{m}" for m in (text, bar, timings)]}},
             text: {"model_name": "HTMLModel", "state": {"value": label}},
             bar: {"model_name": "FloatProgressModel", "state": {"value": done, "max": total}},
             timings: {"model_name": "HTMLModel", "state": {"value": ""}}}
    nb.metadata["widgets"] = {execute_notebooks.WIDGET_STATE: {"state": state}}
    return nb


def test_a_progress_bars_stored_text_reads_its_finished_count_not_the_count_when_it_was_first_shown():
    nb = progress_bar_notebook("oracle: 0/48           ", "oracle:\u200748/48\u2007", 48.0, 48.0)
    execute_notebooks.finish_progress_text(nb)
    assert nb.cells[0].outputs[0]["data"]["text/plain"] == "oracle: 48/48"


# -- PromptNotebookClient: a kernel message missed by one asyncio poll is seen at the next short one ------

def polls_until_answered(answer_on_call: int):
    """A channel's get_msg that misses the message until its `answer_on_call`-th poll, recording timeouts."""
    asked: list = []

    async def get_msg(timeout=None):
        asked.append(timeout)
        if len(asked) < answer_on_call:
            raise execute_notebooks.queue.Empty
        return {"msg_type": "execute_reply"}

    return get_msg, asked


def test_a_wait_for_a_cells_reply_is_cut_into_polls_of_a_second_so_a_missed_wake_up_costs_a_second():
    import asyncio

    get_msg, asked = polls_until_answered(3)
    poll = execute_notebooks._in_short_polls(get_msg, execute_notebooks.PromptNotebookClient.POLL_SECONDS)
    assert asyncio.run(poll(timeout=180)) == {"msg_type": "execute_reply"}
    assert len(asked) == 3 and all(0 <= t <= 1.0 for t in asked)  # never one poll of the whole 180 s


def test_a_wait_without_a_timeout_keeps_polling_and_one_with_a_timeout_still_ends_in_empty():
    import asyncio

    get_msg, asked = polls_until_answered(5)
    assert asyncio.run(execute_notebooks._in_short_polls(get_msg, 1.0)(timeout=None))["msg_type"] == "execute_reply"
    assert asked == [1.0] * 5
    get_msg, asked = polls_until_answered(10**9)
    try:
        asyncio.run(execute_notebooks._in_short_polls(get_msg, 1.0)(timeout=0.01))
    except execute_notebooks.queue.Empty:
        pass
    else:
        raise AssertionError("a wait whose timeout passed must end in Empty, as jupyter_client's does")
