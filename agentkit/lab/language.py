"""The language of the tutorials' prompts (one setting).

The seed articles' questions are Japanese and stay so by default; AGENTKIT_LANG=en, set before JupyterLab
starts, sends every tutorial's prompts (questions, tool descriptions, tool results) in English instead, for
a model that does not read Japanese:

    QUESTION = lab.prompt(ja="東京の天気は？", en="What's the weather in Tokyo?")
"""

from __future__ import annotations

import os

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
