"""Provider codecs, the client's half of each wire format: one pure module per format, the same verbs in
each (see `contract`).

    from agentkit.providers import get_codec
    codec = get_codec("anthropic")
    request = codec.build_request("claude-sonnet-4-5", messages, tools, options)

The server half of each format (what the simulator answers) is `agentkit.sim.wire`, registered there under
the same names; nothing here imports it.
"""

from __future__ import annotations

import importlib
from types import ModuleType

#: format name -> module name; the names are the ones HTTPModel and the notebooks use.
FORMATS = {
    "openai-chat": "openai_chat",
    "openai-responses": "openai_responses",
    "anthropic": "anthropic",
    "gemini": "gemini",
    "openrouter": "openrouter",
    "ollama": "ollama",
}


def get_codec(fmt: str) -> ModuleType:
    """The codec module for a format name, e.g. get_codec("gemini")."""
    try:
        module = FORMATS[fmt]
    except KeyError:
        raise ValueError(f"unknown format {fmt!r}; choose one of {sorted(FORMATS)}") from None
    return importlib.import_module(f"{__name__}.{module}")
