"""The notebooks' setup cell: the simulator by default, a real provider when the environment says so.

    from agentkit import lab
    model = lab.connect("openai-chat")     # HTTPModel on the simulator, or on AGENTKIT_PROVIDER
    print(lab.describe(model))             # "simulator: sim-reasoner in openai-chat format"
    client = lab.raw_client(model)         # an httpx.Client with the base URL and auth header set

Environment (see the README): AGENTKIT_PROVIDER picks a real provider (its key from the usual variable),
AGENTKIT_MODEL the model, AGENTKIT_BASE_URL an OpenAI-compatible server. With none of them set, every
notebook runs offline against `agentkit.sim.shared()`.
"""

from __future__ import annotations

from typing import Any

from . import sim
from .http import HTTPModel


def connect(format: str = "openai-chat", model: str | None = None, **kwargs: Any) -> HTTPModel:
    """An HTTPModel for `format`: the shared simulator (model `model` or sim-reasoner) unless configured."""
    server = sim.shared()
    _warm_up()
    if model is not None:
        kwargs["sim_model"] = model
    return HTTPModel.from_env(format, sim_url=server, **kwargs)


def simulator(format: str = "openai-chat", model: str = "sim-reasoner", **kwargs: Any) -> HTTPModel:
    """An HTTPModel on the shared simulator whatever the environment says (for side-by-side lessons)."""
    server = sim.shared()
    _warm_up()
    kwargs.setdefault("api_key", "sim-key")
    return HTTPModel(model, format, base_url=server.base_url(format), **kwargs)


def _warm_up() -> None:
    """Load the JSON Schema validator now, so the first run's timeline shows the run, not an import.

    (In a full lab install, `import jsonschema` takes most of a second: one of its optional format
    checkers builds a parser at import time.)
    """
    from .validate import validator_for

    validator_for({"type": "object"})


def simulated(model: HTTPModel) -> bool:
    """True when the model talks to the local simulator."""
    return model.base_url.startswith(sim.shared().url)


def describe(model: HTTPModel) -> str:
    """One stable line naming what the notebook talks to (no port, no key: safe for stored outputs)."""
    where = "simulator" if simulated(model) else model.base_url
    return f"{where}: {model.model} in {model.format} format"


def raw_client(model: HTTPModel, timeout: float = 30.0) -> Any:
    """An httpx.Client aimed where `model` is, with its auth header: for the raw-HTTP lessons."""
    import httpx

    headers = model.codec.auth_headers(model._api_key) if model._api_key else {}
    return httpx.Client(base_url=model.base_url, headers=headers, timeout=timeout)


def show_json(value: Any, max_chars: int = 2500) -> None:
    """Pretty-print JSON for a lesson, cut at `max_chars` with a note saying how much was left out."""
    import json

    text = json.dumps(value, ensure_ascii=False, indent=2)
    if len(text) > max_chars:
        text = text[:max_chars] + f"\n… ({len(text) - max_chars} more characters)"
    print(text)
