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
import math
import time
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
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


# -- reading error responses: the same chores in every format ---------------------------------------------

def json_or_none(body: Any) -> Any:
    """A response body as JSON: bytes and text are parsed (None if they are not JSON), objects kept."""
    if isinstance(body, (bytes, bytearray)):
        body = bytes(body).decode("utf-8", "replace")
    if isinstance(body, str):
        try:
            return json.loads(body)
        except ValueError:
            return None
    return body


def event_object(data: str, provider: str) -> dict:
    """One SSE event's `data:` as a JSON object, or BadResponseError (a stream cut mid-event, say)."""
    from ..errors import BadResponseError

    try:
        payload = json.loads(data)
    except ValueError:
        raise BadResponseError(f"a stream event is not JSON: {data[:80]!r}", provider=provider) from None
    if not isinstance(payload, dict):
        raise BadResponseError("a stream event is not a JSON object", provider=provider, body=payload)
    return payload


def body_text(body: Any, limit: int = 500) -> str:
    """A non-JSON body (a proxy's HTML page, say) as a short message; "" for anything else."""
    if isinstance(body, (bytes, bytearray)):
        body = bytes(body).decode("utf-8", "replace")
    return body.strip()[:limit] if isinstance(body, str) else ""


def retry_after_seconds(headers: Any, now: float | None = None) -> float | None:
    """The server's wait hint in seconds: `retry-after-ms`, else `retry-after` (seconds or HTTP date).

        retry_after_seconds({"retry-after-ms": "50"})  ->  0.05
        retry_after_seconds({"retry-after": "2"})      ->  2.0
    Unparseable values count as no hint; a date in the past means 0.
    """
    if not headers:
        return None
    pairs = headers.items() if hasattr(headers, "items") else headers
    lower = {str(k).lower(): str(v).strip() for k, v in pairs}
    for key, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            seconds = float(lower[key]) * scale
        except (KeyError, ValueError):
            continue
        if math.isfinite(seconds):
            return max(0.0, seconds)
    value = lower.get("retry-after")
    if not value:
        return None
    try:  # an HTTP date: the only place a codec looks at the clock
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))
