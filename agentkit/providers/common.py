"""What every codec shares: the request/response shapes that are not any one provider's.

Each codec module (`openai_chat`, `openai_responses`, `anthropic`, `gemini`, `openrouter`, `ollama`) is
pure (no I/O) and offers the same verbs for both sides of its wire format; `contract.py` names them all
and `tests/test_codec_contract.py` checks every registered format against it. This module holds only
what those verbs pass around:

    WireRequest    an HTTP request ready to send (path, body, headers without auth)
    SSEvent        one server-sent event (`event:` name, `data:` text, or a comment)
    JSONLine       one line of a newline-delimited JSON stream (Ollama)
    ChatRequest    a decoded request, provider-neutral: what the simulator's models decide on
    RequestInvalid a client mistake found while decoding; the server answers it with the format's 4xx

plus small helpers every codec needs: stable ids, compact JSON, reading error bodies and Retry-After,
and `schema_problem` (is a tool's parameter schema valid JSON Schema?).

A round trip (client build_request -> server parse_request -> server build_response -> client
parse_response) must give back what went in; the codec tests check it for every format.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any, Union

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
class JSONLine:
    """One line of a newline-delimited JSON stream (`application/x-ndjson`, Ollama's framing).

    It has the same three fields as SSEvent, so code that walks a codec's `build_stream` output reads
    either kind alike; only `encode()` differs: the JSON text and a newline, nothing else.
    """

    data: str
    event: None = None
    comment: None = None

    def encode(self) -> str:
        return self.data + "\n"


#: What `build_stream` returns and `StreamAssembler.feed` reads, whatever the framing.
StreamEvent = Union[SSEvent, JSONLine]


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


# -- checking a tool's parameter schema ---------------------------------------------------------------

#: Schemas nested deeper than this are refused before any recursive validator sees them.
MAX_SCHEMA_DEPTH = 64


def schema_problem(schema: Any) -> str | None:
    """Why `schema` is not a valid JSON Schema (Draft 2020-12), or None when it is.

        schema_problem({"type": "nope"})        ->  "'nope' is not valid under any of the given schemas"
        schema_problem({"properties": -1})      ->  "-1 is not of type 'object'"
    The wording is python-jsonschema's, which is also what OpenAI's 400 quotes. The quick yes comes
    from jsonschema-rs (a few microseconds); only a refusal loads python-jsonschema to explain itself.
    """
    if _depth(schema) > MAX_SCHEMA_DEPTH:
        return f"the schema is nested more than {MAX_SCHEMA_DEPTH} levels deep"
    try:
        import jsonschema_rs

        if jsonschema_rs.meta.is_valid(schema):
            return None
    except ImportError:  # pragma: no cover - jsonschema-rs is a dependency; python-jsonschema decides alone
        pass
    except Exception:  # noqa: BLE001 - a value it cannot even read: let python-jsonschema word it
        pass
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match

    error = best_match(Draft202012Validator(Draft202012Validator.META_SCHEMA).iter_errors(schema))
    return None if error is None else error.message


def _depth(value: Any) -> int:
    """How deeply arrays and objects nest in `value`, counted without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        deepest = max(deepest, level)
        if deepest > MAX_SCHEMA_DEPTH:
            break
        stack.extend((child, level + 1) for child in children)
    return deepest
