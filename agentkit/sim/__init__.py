"""The embedded simulator: every provider's wire format, offline, over loopback HTTP.

    from agentkit import sim

    with sim.serve() as server:                                  # 127.0.0.1, an OS-chosen port
        client = OpenAI(base_url=server.sdk_base_url("openai-chat"), api_key="any")
        ...

    server = sim.shared()                                        # notebooks: one per process

    $ python -m agentkit.sim --port 8765                         # from a shell

What is here:
    server.py      serve(), shared(), SimServer: uvicorn in a background thread
    app.py         create_app(): the request recipe, reading each format's routes and rules from sim/wire
    wire/          each format's server half: decode requests, encode answers, streams, errors (one file each)
    faults.py      errors on demand (model suffix "-429" or header "x-sim-fault: 429"), as a table
    store.py       what a stateful API keeps between requests (Responses' stored responses), bounded
    behaviours.py  respond(ChatRequest) -> ModelTurn: what the simulated models decide, by model name
    reasoner/      sim-reasoner, the default model: plain rules that decide like a small model

Nothing outside `wire/` is about one wire format: each format's server half (`sim/wire/<format>.py`,
beside its client half in `agentkit.providers`) says what that format's server does, and the simulator
serves every registered format that way. It needs no API key and takes any;
`serve(require_key=True)` (`--require-key` from a shell) answers a request with no key at all with the
provider's own 401 or 403 (a local Ollama needs none), so the "forgot the key" mistake can be shown as it
looks against the real API.

Importing this package is cheap: uvicorn and starlette load only when a server or app is created.
"""

from __future__ import annotations

from typing import Any

from .server import SimServer, serve, shared

__all__ = ["SimServer", "create_app", "serve", "shared"]


def create_app(*args: Any, **kwargs: Any) -> Any:
    """The simulator as an ASGI (Starlette) app, e.g. for httpx.ASGITransport; see `app.create_app`."""
    from .app import create_app as _create_app

    return _create_app(*args, **kwargs)
