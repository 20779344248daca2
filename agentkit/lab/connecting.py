"""Connecting a notebook to a model: the simulator, or the real provider the environment names.

    model = from_env(sim_url=agentkit.sim.shared())  # the configured provider, any format; else the simulator
    model = connect("anthropic")                     # the configured provider if it speaks this format

`from_env` is HTTPModel.from_env with the simulator as the last resort (HTTPModel itself knows nothing of
the simulator). Which model `connect(format)` gives (see the README, "Using a real provider"):
- a `sim-*` model name: always the simulator — behaviour presets exist only there;
- AGENTKIT_PROVIDER names this format (aliases: openai, responses, claude, google): the real provider,
  its key from the usual variable, the model from AGENTKIT_MODEL or the format's default;
- AGENTKIT_BASE_URL is set and the format is openai-chat: that OpenAI-compatible server, with the model
  AGENTKIT_MODEL names (required: such a server has only the models you installed);
- otherwise: the shared simulator (`agentkit.sim.shared()`), so a notebook that compares formats keeps
  every format it was not told about offline.
A model name other than `sim-*` is the simulator's name for the model; a configured provider uses
AGENTKIT_MODEL instead.
"""

from __future__ import annotations

from typing import Any

from .. import http, sim
from ..http.model import HTTPModel
from ..http.redaction import redact
from ..sim.server import base_url_on


def configured_format() -> str | None:
    """The format AGENTKIT_PROVIDER / AGENTKIT_BASE_URL ask for, or None for the simulator."""
    return http.configured_format()


def from_env(default_format: str = "openai-chat", sim_url: Any = None, *, sim_model: str = "sim-reasoner",
             **kwargs: Any) -> HTTPModel:
    """The model the environment asks for, else the simulator at `sim_url` — what the notebooks call.

        with agentkit.sim.serve() as sim:
            model = lab.from_env(sim_url=sim)     # or sim_url=sim.url

    First match wins:
      1. AGENTKIT_PROVIDER: a format name ("openai-chat", "anthropic", "gemini", ...; also "openai",
         "claude", "google"), or "sim" to force the simulator even when keys are set;
      2. AGENTKIT_BASE_URL: `default_format` at that URL (Ollama, vLLM, llama.cpp, a proxy);
      3. the simulator at `sim_url` (a URL, or the handle `agentkit.sim.serve()` gives), model `sim_model`,
         in `default_format`.
    1 and 2 are `HTTPModel.from_env` (a key alone switches nothing; the model is AGENTKIT_MODEL, else the
    codec's DEFAULT_MODEL). Other keyword arguments go to HTTPModel (fallback_models, timeout, seed, ...).
    """
    if http.configured_format(default_format) is not None:
        return HTTPModel.from_env(default_format, **kwargs)
    if not sim_url:
        raise ValueError("no provider configured and no simulator: start one with agentkit.sim.serve() "
                         "and pass sim_url=..., or set AGENTKIT_PROVIDER / a provider API key")
    sim_url = getattr(sim_url, "url", sim_url)  # the handle from agentkit.sim.serve() works too
    # The simulator needs no key; a dummy one means a real key from the environment is never sent to it.
    kwargs.setdefault("api_key", "sim-key")
    return HTTPModel(sim_model, default_format, base_url=base_url_on(sim_url, default_format), **kwargs)


def connect(format: str = "openai-chat", model: str | None = None, **kwargs: Any) -> HTTPModel:
    """An HTTPModel for `format`: the configured provider if it is this format, else the simulator.

    Raises ValueError when AGENTKIT_BASE_URL is set without AGENTKIT_MODEL (see http.configured_model).
    """
    if (model is not None and model.startswith("sim-")) or configured_format() != format:
        return simulator(format, model or "sim-reasoner", **kwargs)
    http.configured_model(format)  # fail here, with the fix, rather than at the first request with a 404
    _warm_up()
    return HTTPModel.from_env(format, **kwargs)


def simulator(format: str = "openai-chat", model: str = "sim-reasoner", **kwargs: Any) -> HTTPModel:
    """An HTTPModel on the shared simulator whatever the environment says."""
    server = sim.shared()
    _warm_up()
    kwargs.setdefault("api_key", "sim-key")  # the simulator needs none; a dummy keeps a real one from it
    return HTTPModel(model, format, base_url=server.base_url(format), **kwargs)


def _warm_up() -> None:
    """Load the JSON Schema validator now, so the first run's timeline shows the run, not an import.

    Done on every path of `connect`: a real provider's first run would otherwise wait for it too.

    (In a full lab install, `import jsonschema` takes most of a second: one of its optional format
    checkers builds a parser at import time.)
    """
    from ..core.validate import validator_for

    validator_for({"type": "object"})


def simulated(model: HTTPModel) -> bool:
    """True when the model talks to the local simulator (asking starts no simulator)."""
    server = sim.server.shared_if_running()  # a model on the shared simulator has started it already
    return server is not None and model.base_url.startswith(server.url)


def how_shown(model: Any) -> str:
    """How a number about `model`'s behaviour was shown, for the note printed beside it: "by construction"
    when a simulator preset or a script was written to behave so, "measured" when your own model did it."""
    if not isinstance(model, HTTPModel):
        return "by construction (a scripted model)"
    if simulated(model):
        return f"by construction (the simulator's {model.model}, a rule-based model)"
    return f"measured (your model, {model.model})"


def describe(model: HTTPModel) -> str:
    """One stable line naming what the notebook talks to (no port, no key: safe for stored outputs)."""
    where = "simulator" if simulated(model) else redact(model.base_url)  # a `?key=` in it stays hidden
    return f"{where}: {model.model} in {model.format} format"


def raw_client(model: HTTPModel, timeout: float = 30.0) -> Any:
    """An httpx.Client aimed where `model` is, with its auth header: for the raw-HTTP lessons."""
    import httpx

    headers = model.codec.auth_headers(model.api_key) if model.api_key else {}
    return httpx.Client(base_url=model.base_url, headers=headers, timeout=timeout)
