"""The client codec contract: every name a wire-format module in `providers/` provides, said once.

A codec is a plain module (`openai_chat`, `anthropic`, `ollama`, ...) that encodes a request and decodes
a response, a stream and an error. `HTTPModel` uses it and knows no format by name: everything a client
knows about a format lives in its one file. `ClientCodec` below is the one list of those names — the facts
each codec states, the facts it may leave to their default, and the verbs — and everything else is read
from it: `NAMES` (name, type) for checking, `DEFAULTS` for the facts with a default, `fact(codec, name)`
for reading one (HTTPModel reads the optional facts only through it), and `conforms(module)`, which says
what a module lacks. `tests/test_codec_contract.py` runs `conforms` (and a behavioural round trip through
the simulator's server half) over every registered format.

    from agentkit.providers import contract, get_codec
    contract.conforms(get_codec("ollama"))      # [] : nothing missing
    contract.fact(get_codec("ollama"), "STREAM_FRAMING")   # "ndjson"
    contract.DEFAULTS["STREAM_FRAMING"]                     # "sse": what a codec that says nothing means

The same format's server half (decoding requests the way the real API validates them, writing its
answers, streams, errors and model list) is the simulator's: `agentkit.sim.wire.<format>`, the module of
the same name, checked against `agentkit.sim.wire.contract.ServerCodec`. Adding a format is: one client
file that satisfies this contract plus one line in `providers.FORMATS`; one server file of the same name;
their tests and docs. Nothing in `agentkit/http/` or the rest of `sim/` changes.

What `HTTPModel` reads: where the API lives and how a key is sent, how a request is built, how a
response, a stream and an error are read, and whether a later request can continue from a response the
API stored.

Reasoning state (`types.ReasoningState`) is part of the verbs, not an extra: `parse_response` and the
`StreamAssembler` put the provider's state on the ModelTurn, and `build_request` sends it back only when
`common.own_reasoning` says the request's format and model may receive it.

Left out on purpose: an abstract base class (a module cannot inherit; the Protocol documents the shape,
types `HTTPModel.codec`, and `conforms` checks a module against it) and anything about transport
(retries, timeouts, SSE parsing: `agentkit/http/`).
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Sequence
from typing import Any, Literal, Protocol

from ..core.errors import ProviderError
from ..core.types import Message, ModelOptions, ModelTurn, StreamDelta, ToolChoice, ToolSpec
from .common import WireRequest

__all__ = ["DEFAULTS", "NAMES", "Assembler", "ClientCodec", "conforms", "contract_names", "fact",
           "missing_or_wrong"]


class Assembler(Protocol):
    """What a codec's `StreamAssembler()` is: `.feed(event, data)` once per SSE event (event name or
    None, data text) or per NDJSON line (None, line); `.turn()` -> the ModelTurn parse_response would
    give. An in-stream error raises the typed ProviderError (retryable where the provider says so); a
    stream that ended early raises BadResponseError from turn().

    `feed` returns the pieces that event brought, in order (`core.types.TextDelta`, `ReasoningDelta`,
    `ToolCallDelta`): a turn's text pieces join into its text, and each call's argument pieces into its
    arguments' JSON text (`tests/test_stream_deltas.py` holds every format to it). An assembler whose
    feed returns None has its turn handed on whole, once it is complete (`HTTPModel` does that)."""

    def feed(self, event: str | None, data: str) -> list[StreamDelta] | None: ...

    def turn(self) -> ModelTurn: ...


class ClientCodec(Protocol):
    """The names every client codec module defines. Signatures are the ones to implement.

    A fact with a value here is optional: a codec that does not state it has that value (what most APIs
    do). Every other name is required.
    """

    # -- facts every codec states -----------------------------------------------------------------------
    NAME: str                     # the format's name, as in providers.FORMATS ("openai-chat", ...)
    DEFAULT_BASE_URL: str         # the provider's documented base URL; request paths are relative to it
    API_KEY_ENVS: tuple[str, ...]  # environment variables that hold the key, in the order tried
    DEFAULT_MODEL: str            # the model HTTPModel.from_env uses when AGENTKIT_MODEL is unset

    # -- facts with a default ------------------------------------------------------------------------------
    KEY_REQUIRED: bool = True     # does the provider's own URL refuse a call without a key? (local Ollama: no)
    STREAM_FRAMING: Literal["sse", "ndjson"] = "sse"  # how a stream is framed: SSE events or one JSON per line
    SERVER_SIDE_FALLBACK: bool = False  # True when the API takes a fallback list itself (OpenRouter `models`)
    CONTINUATION_FIELD: str | None = None  # the body field that continues a stored response by id
                                           # (Responses: "previous_response_id"); None: the API stores nothing

    # -- verbs ---------------------------------------------------------------------------------------------
    StreamAssembler: type[Assembler]  # the class that rebuilds a streamed answer (see `Assembler`)

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

    def parse_error(self, status: int, body: Any, headers: Any = None) -> ProviderError:
        """An error response -> the right ProviderError subclass, built once, whole."""

    def stored_response_id(self, body: dict, turn: ModelTurn) -> str | None:
        """The id a later request may continue from (with CONTINUATION_FIELD), when the API stored the
        response to `body`; None when it did not (or the format stores nothing)."""


# -- read from a Protocol: the names, their types, the defaults ---------------------------------------------

def contract_names(protocol: type) -> tuple[tuple[str, Any], ...]:
    """(name, what it must be) for every name `protocol` declares: its annotated facts (the annotation is
    the type), then its methods ("callable")."""
    facts = tuple(typing.get_type_hints(protocol).items())
    verbs = tuple((name, "callable") for name, value in vars(protocol).items()
                  if inspect.isfunction(value) and not name.startswith("_"))
    return facts + verbs


def _defaults(protocol: type) -> dict[str, Any]:
    """The facts `protocol` gives a value: those a module may leave out."""
    return {name: vars(protocol)[name] for name in typing.get_type_hints(protocol) if name in vars(protocol)}


#: Every name of the client contract: (name, what it must be), required or not.
NAMES = contract_names(ClientCodec)

#: The facts a codec may leave out, and the value it then has.
DEFAULTS = _defaults(ClientCodec)


def fact(codec: Any, name: str) -> Any:
    """One of `codec`'s facts: its own value, else the contract's default (KeyError for a required name)."""
    return getattr(codec, name) if hasattr(codec, name) else DEFAULTS[name]


def conforms(codec: types.ModuleType) -> list[str]:
    """What `codec` lacks or has wrong, one line each; [] when it satisfies the contract."""
    return missing_or_wrong(codec, NAMES, DEFAULTS)


def missing_or_wrong(module: types.ModuleType, names: Sequence[tuple[str, Any]],
                     defaults: dict[str, Any] | None = None) -> list[str]:
    """Each (name, kind) of `names` that `module` lacks (and has no default for) or has of the wrong
    kind, one line each. A kind is a type annotation (`str`, `tuple[str, ...]`, `str | None`, a
    `Literal[...]`, `type[SomeProtocol]`) or "callable"."""
    defaults = defaults or {}
    problems = []
    for name, kind in names:
        if not hasattr(module, name):
            if name not in defaults:
                problems.append(f"missing {name}")
            continue
        value = getattr(module, name)
        if kind == "callable":
            if not callable(value):
                problems.append(f"{name} is not callable")
        elif not _fits(value, kind):
            problems.append(f"{name} is not {_describe(kind)}")
    return problems


def _fits(value: Any, kind: Any) -> bool:
    """Does `value` fit the annotation `kind`? (Only the shapes a contract uses.)"""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if kind is Any:
        return True
    if kind is type(None):
        return value is None
    if origin is Literal:
        return value in args
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, arg) for arg in args)
    if origin is type:  # type[P]: a class with every method P names
        verbs = [name for name, _ in contract_names(args[0])]
        return isinstance(value, type) and all(callable(getattr(value, verb, None)) for verb in verbs)
    return isinstance(value, origin or kind)


def _describe(kind: Any) -> str:
    """`kind` in words, for a problem line: "a str", "one of 'sse', 'ndjson'", "a class with feed() and turn()"."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if kind is type(None):
        return "None"
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_describe(arg) for arg in args)
    if origin is type:
        return "a class with " + " and ".join(f"{name}()" for name, _ in contract_names(args[0]))
    return f"a {(origin or kind).__name__}"
