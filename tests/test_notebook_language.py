"""AGENTKIT_LANG=en: one setting sends every tutorial's prompts in English (a small model may not read Japanese).

Tutorials 01-03 hold the seeds' Japanese questions, tool descriptions and tool results. Run in English on the
simulator, no output of theirs may show a Japanese character: every prompt went through `lab.prompt`.
"""

from __future__ import annotations

import re

import pytest
from notebook_switch import execute, outputs_of

JAPANESE = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")


@pytest.mark.parametrize("tutorial", ["01_the_loop_from_raw_calls.ipynb", "02_provider_formats.ipynb",
                                      "03_tools_schemas_and_validation.ipynb"])
def test_a_tutorial_in_english_sends_and_shows_no_japanese(tutorial, clean_env):
    clean_env.setenv("AGENTKIT_LANG", "en")
    outputs = outputs_of(execute(tutorial))  # no cell raises: the exercises' asserts hold in English too
    found = JAPANESE.search(outputs)
    assert found is None, outputs[max(0, found.start() - 120):found.start() + 40]
