"""The client codec contract: every name a wire-format module in `providers/` provides.

A codec is a plain module (`openai_chat`, `anthropic`, `ollama`, ...) that encodes a request and decodes
a response, a stream and an error. `HTTPModel` uses it and knows no format by name: everything a client
knows about a format lives in its one file. `ClientCodec` below lists the names; `conforms(module)` says
what a module lacks, and `tests/test_codec_contract.py` runs it (and a behavioural round trip through
the simulator's server half) over every registered format.

    from agentkit.providers import contract, get_codec
    contract.conforms(get_codec("ollama"))      # [] : nothing missing

The same format's server half (decoding requests the way the real API validates them, writing its
answers, streams, errors and model list) is the simulator's: `agentkit.sim.wire.<format>`, checked
against `agentkit.sim.wire.contract.ServerCodec`. Adding a format is: one client file that satisfies
this contract plus one line in `providers.FORMATS`; one server file plus one line in `sim.wire.SERVERS`;
their tests and docs. Nothing in `http.py` or the rest of `sim/` changes.

What `HTTPModel` reads: where the API lives and how a key is sent, how a request is built, how a
response, a stream and an error are read, and whether a later request can continue from a response the
API stored.

Reasoning state (`types.ReasoningState`) is part of the verbs, not an extra: `parse_response` and the
`StreamAssembler` put the provider's state on the ModelTurn, and `build_request` sends it back only when
`common.own_reasoning` says the request's format and model may receive it.

Left out on purpose: an abstract base class (a module cannot inherit; the Protocol documents the shape
and `conforms` checks it) and anything about transport (retries, timeouts, SSE parsing: `http.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType
from typing import Any, Literal, Protocol

from ..core.errors import ProviderError
from ..core.types import Message, ModelOptions, ModelTurn, ToolChoice, ToolSpec
from .common import WireRequest


class ClientCodec(Protocol):
    """The names every client codec module defines. Signatures are the ones to implement."""

    # -- client side: where the API lives ---------------------------------------------------------------
    NAME: str                     # the format's name, as in providers.FORMATS ("openai-chat", ...)
    DEFAULT_BASE_URL: str         # the provider's documented base URL; request paths are relative to it
    API_KEY_ENVS: tuple[str, ...]  # environment variables that hold the key, in the order tried
    KEY_REQUIRED: bool            # does the provider's own URL refuse a call without a key? (local Ollama: no)
    DEFAULT_MODEL: str            # the model HTTPModel.from_env uses when AGENTKIT_MODEL is unset
    STREAM_FRAMING: Literal["sse", "ndjson"]  # how a stream is framed: SSE events or one JSON per line
    SERVER_SIDE_FALLBACK: bool    # True when the API takes a fallback list itself (OpenRouter `models`)
    CONTINUATION_FIELD: str | None  # the body field that continues a stored response by id
                                    # (Responses: "previous_response_id"); None: the API stores nothing

    # -- client side: verbs -------------------------------------------------------------------------------
    def auth_headers(self, api_key: str) -> dict:
        """The header(s) that carry the key (kept out of WireRequest.headers so requests log safely)."""

    def tool_to_wire(self, spec: ToolSpec) -> dict:
        """One tool definition as this format writes it."""

    def tool_choice_to_wire(self, choice: ToolChoice, parallel: bool | None = None) -> Any:
        """The neutral tool_choice (and parallel switch, where the format puts it inside the choice)
        as this format writes it; None when the format has no such field."""

    def build_request(self, model: str, messages: Sequence[Message], tools: Sequence[ToolSpec] = (),
                      options: ModelOptions | None = None, **extras: Any) -> WireRequest:
        """The request for one model call; `extras` are further body fields, sent as given."""

    def parse_response(self, body: Any) -> ModelTurn:
        """A non-streamed 2xx body -> ModelTurn; a body that is not this format's raises BadResponseError."""

    StreamAssembler: type
    """`StreamAssembler()` rebuilds a streamed answer: `.feed(event, data)` once per SSE event (event
    name or None, data text) or per NDJSON line (None, line); `.turn()` -> the ModelTurn parse_response
    would give. An in-stream error raises the typed ProviderError (retryable where the provider says so);
    a stream that ended early raises BadResponseError from turn()."""

    def parse_error(self, status: int, body: Any, headers: Any = None) -> ProviderError:
        """An error response -> the right ProviderError subclass, built once, whole."""

    def stored_response_id(self, body: dict, turn: ModelTurn) -> str | None:
        """The id a later request may continue from (with CONTINUATION_FIELD), when the API stored the
        response to `body`; None when it did not (or the format stores nothing)."""


#: Every name of the contract: (name, what it must be).
REQUIRED: tuple[tuple[str, type | tuple[type, ...] | str], ...] = (
    ("NAME", str), ("DEFAULT_BASE_URL", str), ("API_KEY_ENVS", tuple), ("KEY_REQUIRED", bool),
    ("DEFAULT_MODEL", str),
    ("STREAM_FRAMING", str), ("SERVER_SIDE_FALLBACK", bool), ("CONTINUATION_FIELD", (str, type(None))),
    ("auth_headers", "callable"), ("tool_to_wire", "callable"), ("tool_choice_to_wire", "callable"),
    ("build_request", "callable"), ("parse_response", "callable"), ("StreamAssembler", "class"),
    ("parse_error", "callable"), ("stored_response_id", "callable"),
)


def conforms(codec: ModuleType) -> list[str]:
    """What `codec` lacks or has wrong, one line each; [] when it satisfies the contract."""
    problems = missing_or_wrong(codec, REQUIRED)
    if getattr(codec, "STREAM_FRAMING", "sse") not in ("sse", "ndjson"):
        problems.append("STREAM_FRAMING is neither 'sse' nor 'ndjson'")
    return problems


def missing_or_wrong(module: ModuleType, required: Sequence[tuple[str, Any]]) -> list[str]:
    """Each (name, kind) of `required` that `module` lacks or has of the wrong kind, one line each.
    A kind is a type (or tuple of types), "callable", or "class" (a class with feed() and turn())."""
    problems = []
    for name, kind in required:
        if not hasattr(module, name):
            problems.append(f"missing {name}")
            continue
        value = getattr(module, name)
        if kind == "callable" and not callable(value):
            problems.append(f"{name} is not callable")
        elif kind == "class" and not (isinstance(value, type) and callable(getattr(value, "feed", None))
                                      and callable(getattr(value, "turn", None))):
            problems.append(f"{name} is not a class with feed() and turn()")
        elif isinstance(kind, (type, tuple)) and not isinstance(value, kind):
            names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
            problems.append(f"{name} is not a {names}")
    return problems
