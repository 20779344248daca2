"""Classify, in HTTPModel's recipe: whatever went wrong in an attempt becomes one ProviderError.

    errors = Classifier("openai-chat", codec, secrets=[key])
    errors.status_error(httpx.Response(429, json=body), request)   # an error status, typed by the codec
    with errors.transport_errors(request):   # what httpx raises: timeout, refused, dropped, unreadable stream
        response = client.send(...)
    with errors.decoding(request):           # what a codec raises on a 2xx body: a bad response
        turn = codec.parse_response(body)

Every error is built in one place, `error()`: scrubbed of the keys, naming the format and model, listing
the call's attempts up to and including this one. Its class says what the retry may do with it (its
`retryable`), so retrying is decided from the error alone. Two answers get a class of their own whatever
the codec said, because the body, not the status, tells (`final_class`): a 429 whose code names a spend,
credit or usage limit is a SpendLimitError (final: no retry, no fallback), and OpenRouter's 404 "No
endpoints found that support tool use" a ToolsNotSupportedError. Nothing here touches the network: a status, a
body and headers (an `httpx.Response` built in a test is enough), or the exception httpx raised.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import httpx
import httpx_sse

from ..core.errors import (
    BadRequestError,
    BadResponseError,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeout,
    SpendLimitError,
    ToolsNotSupportedError,
    error_for_status,
)
from ..providers.common import retry_after_seconds
from .redaction import redact, redact_json
from .request import AttemptRequest
from .retries import attempt_outcome

__all__ = ["Classifier", "FINAL_429_CODES", "final_class"]

#: The codes of a 429 that no retry can fix: a spend, credit or usage limit was reached. OpenAI's help
#: centre: "Read the error message and error.code ... Billing-related errors can still use the broader
#: error.type value insufficient_quota", and "Retrying a billing, spending, or quota error does not
#: restore access"; Anthropic's rate-limits page: `error.details.error_code` enforced_spend_limit_reached.
FINAL_429_CODES = frozenset({"organization_spend_limit_exceeded", "project_spend_limit_exceeded",
                             "credit_balance_exhausted", "organization_usage_limit_exceeded",
                             "enforced_spend_limit_reached"})
#: How OpenRouter begins its 404 for a model none of whose endpoints takes tools (users' reports).
NO_TOOL_ENDPOINTS = "No endpoints found that support tool use"


def final_class(status: int | None, body: Any, message: str | None) -> tuple[type[ProviderError], str] | None:
    """(class, error type) for the answers whose body, not status, decides what a retry may do; else None.

        final_class(429, {"error": {"type": "requests", "code": "project_spend_limit_exceeded"}}, "...")
        -> (SpendLimitError, "project_spend_limit_exceeded")
    """
    error = body.get("error") if isinstance(body, dict) else None
    error = error if isinstance(error, dict) else {}
    details = error.get("details") if isinstance(error.get("details"), dict) else {}
    if status == 429:
        code = next((c for c in (error.get("code"), details.get("error_code"), error.get("type"))
                     if isinstance(c, str) and c in FINAL_429_CODES), None)
        if code is not None:
            return SpendLimitError, code
    if status == 404 and NO_TOOL_ENDPOINTS in (message or ""):
        return ToolsNotSupportedError, "no_tool_endpoints"
    return None


class Classifier:
    """An attempt's failure, whatever raised it, as one ProviderError of this model's format.

    `codec` reads the format's error bodies; `secrets` (the key and the other credentials in the URL
    and headers) are scrubbed out of every message and body; the timeouts are named in timeout errors.
    """

    def __init__(self, format: str, codec: Any, secrets: Sequence[str | None] = (), *,
                 attempt_timeout: float | None = None, total_timeout: float | None = None):
        self.format, self.codec, self.secrets = format, codec, tuple(secrets)
        self.attempt_timeout, self.total_timeout = attempt_timeout, total_timeout

    def error(self, cls: type[ProviderError], message: Any, request: AttemptRequest, *, status: int | None = None,
              error_type: str | None = None, retry_after: float | None = None, body: Any = None,
              retryable: bool | None = None, provider: str | None = None,
              model: str | None = None) -> ProviderError:
        """Every error this model raises is built here, once and whole: scrubbed of the keys, naming the
        format and model, listing the call's attempts up to and including this one."""
        secrets = self.secrets
        error_type = None if error_type is None else redact(str(error_type), secrets)
        outcome = attempt_outcome(status, error_type, cls.__name__)
        return cls(redact(str(message), secrets), status=status, error_type=error_type,
                   provider=provider or self.format, model=model or request.model, retry_after=retry_after,
                   body=redact_json(body, secrets), retryable=retryable,
                   attempts=[*request.history, (request.model, outcome)])

    def from_codec(self, raw: ProviderError, request: AttemptRequest, status: int,
                   retry_after: float | None = None) -> ProviderError:
        """Our error from the codec's: the codec knows the format's error body, we know the rest."""
        cls = type(raw) if type(raw).__init__ is ProviderError.__init__ else error_for_status(status)
        error_type = raw.error_type
        final = final_class(raw.status if raw.status is not None else status, raw.body, raw.message)
        if final is not None:
            cls, error_type = final
        return self.error(cls, raw.message, request, status=raw.status if raw.status is not None else status,
                          error_type=error_type,
                          retry_after=retry_after if retry_after is not None else raw.retry_after,
                          body=raw.body,
                          retryable=None if final or raw.retryable == cls.retryable else raw.retryable,
                          provider=raw.provider, model=raw.model)

    @contextmanager
    def transport_errors(self, request: AttemptRequest) -> Iterator[None]:
        """What httpx raises inside the block, as a ProviderError; our own ProviderErrors pass through untouched."""
        try:
            yield
        except ProviderError:
            raise
        except (httpx_sse.SSEError, httpx.DecodingError) as exc:  # before TransportError: SSEError is one
            # A "stream" that is not text/event-stream, or a body whose gzip/brotli coding is broken.
            raise self.error(BadResponseError, f"the response could not be read: {exc}", request,
                             status=200, error_type=type(exc).__name__) from None
        except httpx.TimeoutException as exc:
            raise self.timeout(exc, request) from None
        except httpx.LocalProtocolError:
            # httpx refused to send what we built; its text would quote the offending header value.
            raise self.error(BadRequestError, "httpx refused to send the request (a header value HTTP does "
                             "not allow?)", request, error_type="LocalProtocolError") from None
        except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
            # A base_url without http:// or https://, or not a URL: a setting to fix, not a failure to retry.
            raise self.error(ProviderError, f"cannot send to this URL: {exc}", request,
                             error_type=type(exc).__name__) from None
        except httpx.TransportError as exc:
            # Refused, reset, or dropped mid-body (a truncated response ends up here too).
            name = type(exc).__name__
            raise self.error(ProviderConnectionError, f"connection failed or dropped ({name}: {exc})",
                             request, error_type=name) from None
        except UnicodeEncodeError:
            raise self.error(BadRequestError, "a request header holds a character HTTP cannot carry", request,
                             error_type="UnicodeEncodeError") from None

    def timeout(self, exc: httpx.TimeoutException, request: AttemptRequest) -> ProviderError:
        """A timeout, named by the bound that passed: "total_timeout", "stalled" (a stream), "timeout"."""
        bound = request.clock.expired()
        if bound == "total_timeout":
            spent = f"{self.total_timeout:g}" if self.total_timeout is not None else "?"
            return self.error(ProviderTimeout, f"total_timeout={spent} s used up by this call's "
                              "attempts and waits", request, error_type="total_timeout")
        limit = f"{self.attempt_timeout:g}" if self.attempt_timeout is not None else "?"
        if bound == "timeout" and request.stream:
            return self.error(ProviderTimeout, f"the stream brought no event for timeout={limit} s "
                              "(`: keep-alive` comments are not events)", request, error_type="stalled")
        if bound == "timeout":
            return self.error(ProviderTimeout, f"no complete answer within timeout={limit} s", request,
                              error_type="timeout")
        return self.error(ProviderTimeout, f"httpx stopped waiting ({type(exc).__name__})", request,
                          error_type=type(exc).__name__)

    @contextmanager
    def decoding(self, request: AttemptRequest) -> Iterator[None]:
        """What a codec raises on a 2xx body inside the block: its own ProviderError (an error inside a 200
        body or stream), or ValueError/KeyError/... and RecursionError (nested too deep): a bad response."""
        try:
            yield
        except ProviderError as raw:
            raise self.from_codec(raw, request, 200) from None
        except (ValueError, KeyError, TypeError, IndexError, AttributeError, RecursionError) as exc:
            reason = redact(f"{type(exc).__name__}: {exc}", self.secrets)[:200]
            raise self.error(BadResponseError, f"the response does not fit the {self.format} format ({reason})",
                             request, status=200, error_type="invalid_response") from None

    def empty_stream(self, request: AttemptRequest) -> ProviderError:
        return self.error(BadResponseError, "the stream ended before its first event", request, status=200,
                          error_type="empty_stream")

    def status_error(self, response: httpx.Response, request: AttemptRequest) -> ProviderError:
        """An error status, typed by the codec (which reads the format's error body and body hints)."""
        status, content = response.status_code, response.content
        try:
            body: Any = json.loads(content) if content else None
        except (ValueError, RecursionError):
            body = redact(content.decode("utf-8", "replace"), self.secrets)[:500]
        try:
            raw = self.codec.parse_error(status, body, response.headers)
        except Exception:  # noqa: BLE001 - a codec that chokes on an odd error body must not hide the status
            raw = None
        hint = retry_after_seconds(response.headers)  # the header, when sent, wins over a hint in the body
        if isinstance(raw, ProviderError):
            return self.from_codec(raw, request, status, hint)
        body = redact_json(body, self.secrets)  # also cuts hostile nesting, so str() below is safe
        return self.error(error_for_status(status), f"HTTP {status}: {str(body)[:200]}", request,
                          status=status, retry_after=hint, body=body)
