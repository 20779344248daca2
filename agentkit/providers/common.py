"""What every codec shares: the request/response shapes that are not any one provider's.

Each codec module (`openai_chat`, `openai_responses`, `anthropic`, `gemini`, `openrouter`) is pure
(no I/O) and offers the same verbs, for both sides of its wire format:

Client side (what `HTTPModel` uses):
    build_request(model, messages, tools, options) -> WireRequest      path, headers (no auth), JSON body
    auth_headers(api_key) -> dict                                      the format's auth header(s)
    parse_response(body) -> ModelTurn                                   a non-streamed JSON response
    StreamAssembler()                                                   feed(event, data) per SSE event,
                                                                        .turn() -> the same ModelTurn
    parse_error(status, body, headers) -> ProviderError                 the format's error body, typed

Server side (what the simulator uses):
    parse_request(body, model=None) -> ChatRequest                      raises RequestInvalid on bad input
    build_response(turn, request) -> dict                               the JSON a real server answers
    build_stream(turn, request) -> list[SSEvent]                        exact event framing
    build_error(status, message, error_type=None) -> dict               the format's own error body

Tool definitions:
    tool_to_wire(spec) -> dict  and  tool_from_wire(d) -> ToolSpec

A round trip (client build_request -> server parse_request -> server build_response -> client
parse_response) must give back what went in; tests/test_providers_roundtrip.py checks it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from ..types import Message, ModelOptions, ToolSpec


@dataclass(frozen=True)
class WireRequest:
    """An HTTP request ready to send: path relative to the base URL, headers (without auth), body."""

    path: str
    body: dict
    headers: dict = field(default_factory=dict)
    stream: bool = False


@dataclass(frozen=True)
class SSEvent:
    """One server-sent event as written on the wire: optional `event:` name, `data:` text, or a comment."""

    data: str
    event: str | None = None
    comment: str | None = None

    def encode(self) -> str:
        lines = []
        if self.comment is not None:
            lines.append(f": {self.comment}")
        if self.event is not None:
            lines.append(f"event: {self.event}")
        if self.data is not None and self.comment is None:
            lines.append(f"data: {self.data}")
        return "\n".join(lines) + "\n\n"


@dataclass(frozen=True)
class ChatRequest:
    """A decoded request, provider-neutral: what the simulator's models decide on."""

    model: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    options: ModelOptions = field(default_factory=ModelOptions)
    fallback_models: tuple[str, ...] = ()  # OpenRouter `models`
    extras: dict = field(default_factory=dict)  # fields a codec accepted but the kit does not model


class RequestInvalid(ValueError):
    """A client mistake found while decoding a request; the server answers it with the format's 4xx.

    `code` is the format's machine-readable code where it has one (OpenAI: "missing_required_parameter",
    "invalid_type", ...); pass it on to `build_error(..., param=e.param, code=e.code)`.
    """

    def __init__(self, message: str, param: str | None = None, status: int = 400, code: str | None = None):
        super().__init__(message)
        self.message, self.param, self.status, self.code = message, param, status, code


def stable_id(*parts: Any, length: int = 24) -> str:
    """A deterministic id fragment from any JSON-able parts (same request -> same ids)."""
    text = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def dumps(obj: Any) -> str:
    """Compact JSON as the providers send it (UTF-8 kept, not escaped)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
