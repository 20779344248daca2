"""Each tutorial run once, the way a learner with their own model runs it, and the promises that run keeps.

The README promises that every tutorial runs to the end on your own model (AGENTKIT_BASE_URL and
AGENTKIT_MODEL, or AGENTKIT_PROVIDER), in English when AGENTKIT_LANG=en, and never shows your key. nbval
runs the tutorials on the simulator and compares their stored outputs; these tests run each one more time,
in a fresh kernel, with all of that switched on at once:

    the model        LEARNER_MODEL on the stand-in server of `learner_models`, which answers each request
                     in one of three ways (one tool per turn, no tool, mistakes): a run that starts with a
                     call goes through all three, and the tutorial's runs start in turn with a call, with
                     no call and with a mistake
    the language     AGENTKIT_LANG=en
    a planted key    in every provider's key variable: it must never appear in an output

and check what one run shows (`EveryTutorialPromise`, subclassed by each test_tutorial_NN_on_another_model.py
with its own checks). Outputs are not compared with the stored ones: another model answers differently.
One tutorial per file, so that `pytest -n 2 --dist loadfile` spreads them over the workers.
"""

from __future__ import annotations

import importlib.util
import json
import re
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from learner_models import JAPANESE, LEARNER_MODEL, MISTAKES, NO_TOOL, ONE_TOOL_PER_TURN, STARTS, Answered

from agentkit.providers import FORMATS, get_codec

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
KEY = "-".join(["sk", "switch", "test", "0123456789abcdef"])  # planted: must never be printed

# The notebook runner of tools/execute_notebooks.py (it sees each kernel message as it arrives).
_spec = importlib.util.spec_from_file_location("execute_notebooks", ROOT / "tools" / "execute_notebooks.py")
_execute_notebooks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_execute_notebooks)
NotebookClient = _execute_notebooks.PromptNotebookClient


def configure(monkeypatch, base_url: str, model: str, provider: str | None = None) -> None:
    """Set the environment as the README tells a learner to: a provider's format, or only a base URL;
    English prompts; a key in every provider's variable."""
    if provider is None:  # an OpenAI-compatible server of your own (Ollama, vLLM, ...): the URL says it all
        monkeypatch.delenv("AGENTKIT_PROVIDER", raising=False)
    else:
        monkeypatch.setenv("AGENTKIT_PROVIDER", provider)
    monkeypatch.setenv("AGENTKIT_BASE_URL", base_url)
    monkeypatch.setenv("AGENTKIT_MODEL", model)
    monkeypatch.setenv("AGENTKIT_LANG", "en")
    for fmt in FORMATS:
        for variable in get_codec(fmt).API_KEY_ENVS:
            monkeypatch.setenv(variable, KEY)


def execute(name: str, timeout: int = 180) -> nbformat.NotebookNode:
    """Run a notebook top to bottom in a fresh kernel; raises CellExecutionError if any cell fails."""
    path = NOTEBOOKS / name
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    return nb


def outputs_of(nb: nbformat.NotebookNode) -> str:
    """Every output of the executed notebook as one string, to search for the key and the endpoint."""
    return json.dumps([cell.get("outputs", []) for cell in nb.cells], ensure_ascii=False)


@dataclass(frozen=True)
class Tutorial:
    """A tutorial and how the learner configured it: `fmt` named in AGENTKIT_PROVIDER when `provider` is
    set, else reached through AGENTKIT_BASE_URL alone (which means openai-chat); `starts`, the ways the
    stand-in starts its runs in, in turn (see learner_models)."""

    notebook: str
    fmt: str = "openai-chat"
    provider: str | None = None
    starts: tuple[str, ...] = STARTS


@dataclass(frozen=True)
class TutorialRun:
    """What one run showed: every output as one string, and each request the stand-in answered for it."""

    tutorial: Tutorial
    endpoint: str          # the line lab.describe prints for the configured model
    outputs: str
    answered: tuple[Answered, ...]


def run_tutorial(tutorial: Tutorial, stand_in) -> TutorialRun:
    """Run `tutorial` once on the stand-in, configured as a learner would; raises if any cell fails."""
    server, respond = stand_in
    with pytest.MonkeyPatch.context() as monkeypatch:
        configure(monkeypatch, server.base_url(tutorial.fmt), LEARNER_MODEL, tutorial.provider)
        respond.begin(tutorial.starts)
        before = len(respond.log)
        outputs = outputs_of(execute(tutorial.notebook))
    return TutorialRun(tutorial, f"{server.base_url(tutorial.fmt)}: {LEARNER_MODEL} in {tutorial.fmt} format",
                       outputs, tuple(respond.log[before:]))


def tutorial_run(tutorial: Tutorial):
    """The module's `run` fixture: the tutorial run once, shared by every test of the file."""

    @pytest.fixture(scope="module")
    def run(stand_in) -> TutorialRun:
        return run_tutorial(tutorial, stand_in)

    return run


def ways_met(answered: tuple[Answered, ...]) -> set[str]:
    """Which of the stand-in's ways actually shaped an answer: a run that began with no tool, a request
    answered with one call, a call made wrong."""
    met = set()
    if any(a.first and a.way == NO_TOOL for a in answered):
        met.add(NO_TOOL)
    if any(a.way == ONE_TOOL_PER_TURN and a.calls == 1 for a in answered):
        met.add(ONE_TOOL_PER_TURN)
    if any(a.mistakes for a in answered):
        met.add(MISTAKES)
    return met


class EveryTutorialPromise:
    """What every tutorial's run must show; each test file subclasses it (`class Test...`) beside its fixture.

    `WAYS` is what the tutorial's run meets of the stand-in's ways (see `ways_met`): all three unless the
    tutorial asks the configured model too few times, which its file then says.
    """

    WAYS = {NO_TOOL, ONE_TOOL_PER_TURN, MISTAKES}
    ENGLISH_OUTPUTS = True  # no output shows a Japanese character (every prompt went through lab.prompt)

    def test_runs_to_the_end_and_its_configured_cells_reach_the_stand_in(self, run):
        assert run.endpoint in run.outputs  # lab.describe named the configured endpoint, not the simulator
        assert run.answered, "no request reached the configured model"

    def test_the_planted_key_never_appears_in_an_output(self, run):
        assert KEY not in run.outputs

    def test_every_prompt_it_sends_the_configured_model_is_in_english(self, run):
        assert not any(a.japanese for a in run.answered)
        if self.ENGLISH_OUTPUTS:
            found = JAPANESE.search(run.outputs)
            assert found is None, run.outputs[max(0, found.start() - 120):found.start() + 40]

    def test_one_run_meets_each_way_the_stand_in_answers(self, run):
        assert ways_met(run.answered) == self.WAYS, [(a.way, a.first, a.calls, a.mistakes) for a in run.answered]


def count(pattern: str, text: str) -> int:
    return len(re.findall(pattern, text))
