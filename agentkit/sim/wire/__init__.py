"""The server half of every wire format: what the simulator answers in each (see `contract`).

One pure module per format, the same verbs in each: decode a request the way the real API validates it,
write its answers, streams, errors and model list, and `SERVER`, the facts around the body (routes, key
headers, wording). The client half of the same format is `agentkit.providers.<format>`; this package
imports from there, never the other way round.

    from agentkit.sim.wire import get_server
    server = get_server("anthropic")
    request = server.parse_request(body)           # -> ChatRequest, or RequestInvalid in the API's words
    body = server.build_response(turn, request)
"""

from __future__ import annotations

import importlib
from types import ModuleType

from ...providers import FORMATS

#: format name -> module name: `providers.FORMATS` itself, because a format has both halves under one
#: module name (`providers/<module>.py` for the client, `sim/wire/<module>.py` here for the server).
SERVERS = FORMATS


def get_server(fmt: str) -> ModuleType:
    """The server half for a format name, e.g. get_server("gemini")."""
    try:
        module = SERVERS[fmt]
    except KeyError:
        raise ValueError(f"unknown format {fmt!r}; choose one of {sorted(FORMATS)}") from None
    return importlib.import_module(f"{__name__}.{module}")
