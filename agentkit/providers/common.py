"""What every client codec shares: the request/response shapes that are not any one provider's.

Each codec module (`openai_chat`, `openai_responses`, `anthropic`, `gemini`, `openrouter`, `ollama`) is
pure (no I/O) and offers the same client verbs; `contract.py` names them all and
`tests/test_codec_contract.py` checks every registered format against it. This module holds only what
those verbs pass around:

    WireRequest    an HTTP request ready to send (path, body, headers without auth)
    SSEvent        one server-sent event (`event:` name, `data:` text, or a comment)
    JSONLine       one line of a newline-delimited JSON stream (Ollama)

plus small helpers every codec needs: stable ids, compact JSON, reading error bodies and Retry-After, and
for reasoning state:

    own_reasoning  the one place a codec asks "may this request carry this message's reasoning state?"
                   (only the format and model that produced it; anything else is dropped, never forwarded)

What only a server needs (the decoded `ChatRequest`, `RequestInvalid`, checking a tool's schema, the
simulator's signatures) is `agentkit.sim.wire.common`. A round trip (client build_request -> server
parse_request -> server build_response -> client parse_response) must give back what went in; the codec
tests check it for every format.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any, Union

from ..core.types import Message, ModelTurn, ReasoningState


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

    It has the same three fields as SSEvent, so code that walks a server half's `build_stream` output reads
    either kind alike; only `encode()` differs: the JSON text and a newline, nothing else.
    """

    data: str
    event: None = None
    comment: None = None

    def encode(self) -> str:
        return self.data + "\n"


#: What a server half's `build_stream` returns and `StreamAssembler.feed` reads, whatever the framing.
StreamEvent = Union[SSEvent, JSONLine]


def stable_id(*parts: Any, length: int = 24) -> str:
    """A deterministic id fragment from any JSON-able parts (same request -> same ids)."""
    text = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def dumps(obj: Any) -> str:
    """Compact JSON as the providers send it (UTF-8 kept, not escaped)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


# -- reading error responses: the same chores in every format ---------------------------------------------

def json_or_none(body: Any) -> Any:
    """A response body as JSON: bytes and text are parsed (None if they are not JSON, or nested too deep for
    Python's parser), objects kept."""
    if isinstance(body, (bytes, bytearray)):
        body = bytes(body).decode("utf-8", "replace")
    if isinstance(body, str):
        try:
            return json.loads(body)
        except (ValueError, RecursionError):
            return None
    return body


def event_object(data: str, provider: str) -> dict:
    """One SSE event's `data:` as a JSON object, or BadResponseError (a stream cut mid-event, say)."""
    from ..core.errors import BadResponseError

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


# -- reasoning state ------------------------------------------------------------------------------------

def own_reasoning(message: Message, fmt: str, model: str) -> ReasoningState | None:
    """The message's reasoning state when a request in `fmt` to `model` may carry it, else None.

    Every encoder asks here, and only here: a signature is valid for the API and model that made it, so
    state from another format or model is dropped cleanly (the request goes out as if there were none)
    rather than forwarded, where the provider would refuse it as invalid or corrupted.
    """
    state = message.reasoning
    return state if state is not None and state.usable_for(fmt, model) else None


def no_stored_id(body: dict, turn: ModelTurn) -> None:
    """No response of this API can be continued by id."""
    return None
