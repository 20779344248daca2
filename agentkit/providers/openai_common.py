"""What OpenAI's two APIs share on the client side: the platform's auth and its error bodies.

Chat Completions (`openai_chat`) and Responses (`openai_responses`) are two formats on one platform:
the same key header, the same `{"error": {"message", "type", "param", "code"}}` body, the same
`arguments` string on a call. Those pieces live here, public, so that either codec can be read (and
copied) with only this module and `common` beside it.

    from agentkit.providers import openai_common as oc
    oc.parse_error(429, {"error": {"message": "slow down", "type": "requests"}})   # -> RateLimitError

The server half (the platform's words for a missing or mistyped field, its error bodies, ids and model
list, as the simulator writes them) is `agentkit.sim.wire.openai_common`.

Left out on purpose: anything only one of the two APIs does (their request and response shapes).
"""

from __future__ import annotations

import json
from typing import Any

from ..core.errors import ProviderError, QuotaExceededError, error_for_status
from .common import body_text, json_or_none, retry_after_seconds

#: An error's `type` or `code` inside a 200 body or stream -> the status the same error has as a plain
#: answer. Anything else counts as a server failure (500): the request was accepted, then it broke.
KIND_STATUS = {"server_error": 500, "api_error": 500, "rate_limit_exceeded": 429, "requests": 429,
               "tokens": 429, "insufficient_quota": 429, "invalid_request_error": 400,
               "invalid_prompt": 400, "context_length_exceeded": 400}


# --- client side -----------------------------------------------------------------------------------

def auth_headers(api_key: str) -> dict:
    """The key as a bearer token (kept out of WireRequest.headers, so requests can be logged safely)."""
    return {"Authorization": f"Bearer {api_key}"}


def parse_error(status: int, body: Any, headers: Any = None, provider: str = "openai") -> ProviderError:
    """An error response -> the right ProviderError subclass, with the API's type, message and Retry-After.

    Tolerates bodies that are not JSON (a proxy's HTML page): the text becomes the message. A 429 with
    `insufficient_quota` is billing, not load: a QuotaExceededError, which is not retryable.
    """
    data = json_or_none(body)
    error = data.get("error") if isinstance(data, dict) else None
    kind = None
    if isinstance(error, dict):
        message = str(error.get("message") or f"HTTP {status}")
        kind = error.get("type") or error.get("code")
    elif isinstance(error, str) and error:
        message = error
    else:
        message = body_text(body) or f"HTTP {status}"
    quota = isinstance(error, dict) and "insufficient_quota" in (error.get("type"), error.get("code"))
    cls = QuotaExceededError if quota and status == 429 else error_for_status(status)
    return cls(message, status=status, error_type=None if kind is None else str(kind), provider=provider,
               retry_after=retry_after_seconds(headers), body=data if data is not None else body)


def in_band_error(body: dict, provider: str, raw: Any = None) -> ProviderError:
    """A 2xx body or stream chunk whose top-level `error` is set, as the error it stands for.

    The HTTP status was 200, so the class comes from the error's own `type`/`code` (KIND_STATUS; a
    number there, as OpenRouter sends, is taken as the status itself): a server_error is a retryable
    ServerError, a rate limit a RateLimitError, an invalid request a BadRequestError. `raw` is what the
    error keeps as its body (default: `body`).
    """
    error = body.get("error")
    if isinstance(error, dict):
        message = str(error.get("message") or "error in the response")
        kind = error.get("type") or error.get("code")
    else:
        message, kind = str(error), None
    if isinstance(kind, int) and not isinstance(kind, bool) and 400 <= kind <= 599:
        status = kind
    else:
        status = KIND_STATUS.get(str(kind), 500) if kind is not None else 500
    cls = QuotaExceededError if kind == "insufficient_quota" else error_for_status(status)
    return cls(message, status=status, error_type=None if kind is None else str(kind), provider=provider,
               body=body if raw is None else raw)


def raw_arguments(arguments: Any) -> str | dict:
    """A call's `arguments` as they came, for ToolCall.from_raw: a string (the spec; possibly invalid
    JSON, which the loop's parse gate reports), an object (some compatible servers), "" when absent;
    anything else is re-serialised."""
    if arguments is None or isinstance(arguments, (str, dict)):
        return "" if arguments is None else arguments
    return json.dumps(arguments)


def token_details(usage: dict, key: str) -> dict:
    """A `*_tokens_details` object of a usage block ({} when absent or not an object)."""
    details = usage.get(key)
    return details if isinstance(details, dict) else {}


def count(value: Any) -> int:
    """A token count from a response (0 for anything that is not a finite number)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    try:
        return int(value)
    except (OverflowError, ValueError):  # Infinity and NaN parse as JSON numbers in Python
        return 0
