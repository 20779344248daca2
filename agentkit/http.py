"""HTTPModel: a model that answers over real HTTP — httpx plus one provider codec.

    from agentkit.http import HTTPModel
    model = HTTPModel("gpt-4.1-mini")                                     # key from OPENAI_API_KEY
    turn = model.complete([Message.user("Weather in Paris?")], tools, ModelOptions())

    local = HTTPModel("llama3.1", base_url="http://localhost:11434/v1")   # Ollama, vLLM, llama.cpp: no key

The codec (`agentkit.providers`) knows the wire format; this module knows the network. Every call
follows one recipe, numbered the same way in the code below:

    1. build      codec.build_request -> path, headers, JSON body; plus the auth header and extras
    2. send       POST with httpx: a plain response, or SSE read with httpx-sse when options.stream
    3. classify   2xx -> decode; error status -> codec.parse_error; a dropped or slow connection
                  -> ProviderTimeout
    4. retry      a retryable failure (408/409/429/5xx/529, transport, bad body): wait, same model again
       fall back  retries used up, or a model-specific 4xx: the next model of `fallback_models`
    5. decode     codec.parse_response, or StreamAssembler().feed(event, data) ... .turn() -> ModelTurn

How long to wait (step 4): the server's `retry-after-ms`, else `retry-after` (seconds or an HTTP date), else
the body's hint (Gemini's RetryInfo.retryDelay, read by the codec), else capped exponential backoff with
jitter. A hint longer than `max_retry_wait` is not waited for: the call falls over to the next model at
once (or raises). The policy itself is `RetryPlan`, a small class with no I/O, so the sync and async
drivers cannot drift apart and a test can walk it by hand.

API keys never appear in a repr, an exception, `last_attempts` or a log line: the key travels only in a
header (never `?key=`), and every message built from a response or an httpx exception is scrubbed.

Left out on purpose: HTTP/2, proxies beyond httpx's defaults, request signing (Vertex AI, Bedrock),
client-side rate limiting from `x-ratelimit-*` headers, circuit breakers that remember failures across
calls, the SDKs' `x-should-retry` header, and retrying a stream after its first event reached the caller.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import re
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import aclosing, closing, contextmanager
from dataclasses import asdict, dataclass, replace
from types import ModuleType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import httpx
import httpx_sse

from .errors import (
    AuthenticationError,
    BadResponseError,
    ProviderError,
    ProviderTimeout,
    error_for_status,
)
from .providers import FORMATS, get_codec
from .providers.common import retry_after_seconds
from .providers.common import SSEvent
from .types import Message, ModelOptions, ModelTurn, ToolSpec

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["Attempt", "Backoff", "HTTPModel", "RetryPlan", "TurnStream", "redact", "retry_after_seconds"]

log = logging.getLogger("agentkit.http")

#: AGENTKIT_PROVIDER accepts the format names and these friendlier words.
_PROVIDER_ALIASES = {"openai": "openai-chat", "responses": "openai-responses", "claude": "anthropic",
                     "google": "gemini"}


# --------------------------------------------------------------------------------------------------
# Small pieces: keys out of text, Retry-After, backoff, one attempt's record
# --------------------------------------------------------------------------------------------------

# `?key=...` is Gemini's query-string auth; `Bearer ...` is everyone else's header, should it ever be echoed.
_SECRET_PATTERNS = (
    re.compile(r"([?&](?:key|api_key|api-key|access_token)=)[^&#\s'\"]+", re.IGNORECASE),
    re.compile(r"(Bearer\s+)[A-Za-z0-9._~+/=-]+", re.IGNORECASE),
)


def redact(text: str, secrets: Sequence[str | None] = ()) -> str:
    """`text` with every secret, `?key=` value and bearer token replaced by ***.

        redact("GET /m?key=AIza123 failed", ["AIza123"])  ->  "GET /m?key=*** failed"
    """
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub(r"\1***", text)
    return text


def _redact_json(value: Any, secrets: Sequence[str | None]) -> Any:
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, dict):
        return {k: _redact_json(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact_json(v, secrets) for v in value]
    return value




@dataclass(frozen=True)
class Backoff:
    """Capped exponential backoff with jitter: `initial * multiplier**n`, at most `maximum`, less `jitter`.

        Backoff().delay(0, random.Random(1))  ->  between 0.375 and 0.5
        Backoff().delay(9, random.Random(1))  ->  between 6.0 and 8.0   (capped)

    Jitter only ever shortens the wait (as the OpenAI and Anthropic SDKs do), so `maximum` is a real cap,
    while clients that failed together still spread out instead of retrying in lockstep.
    """

    initial: float = 0.5
    maximum: float = 8.0
    multiplier: float = 2.0
    jitter: float = 0.25

    def delay(self, retry: int, rng: random.Random) -> float:
        """Seconds to wait before retry number `retry` (0 = the first retry)."""
        base = min(self.maximum, self.initial * self.multiplier ** min(retry, 64))  # min: no float overflow
        return base * (1 - self.jitter * rng.random())


@dataclass(frozen=True)
class Attempt:
    """One HTTP try of a call: which model, which URL path, what came back, the wait before it, its duration.

    `status` is the HTTP status (None when no response arrived); `error` the ProviderError class name and
    `error_type` the provider's error type, or for transport failures the httpx exception name
    ("ConnectError", "ReadTimeout", ...). `message` is already scrubbed of keys.
    """

    model: str
    path: str
    status: int | None = None
    error: str | None = None
    error_type: str | None = None
    message: str | None = None
    wait: float = 0.0
    elapsed: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def outcome(self) -> int | str:
        """The HTTP status when there was one to blame, else the name of what went wrong."""
        if self.status is not None and (self.ok or self.status >= 400):
            return self.status
        return self.error_type or self.error or "?"

    def to_dict(self) -> dict:
        return asdict(self)


# --------------------------------------------------------------------------------------------------
# Step 4 as a plan without I/O: after each failure, which model next and how long to wait first
# --------------------------------------------------------------------------------------------------

def moves_to_fallback(error: ProviderError, model: str) -> bool:
    """Would another model plausibly succeed where `model` failed?

    Yes for anything retryable (the retries were used up), for 404 (model not found), and for a 400/422
    whose message names the model or says something is not supported ("model does not support tools").
    No for 401/403 (same key everywhere), 413 and other 400s: the request itself is wrong.
    """
    if error.retryable or error.status == 404:
        return True
    if error.status in (400, 422):
        text = f"{error.error_type or ''} {error.message or ''}".lower()
        return model.lower() in text or "support" in text
    return False


class RetryPlan:
    """The retry and fallback policy for one call: no I/O, just decisions.

        plan = RetryPlan(["a", "b"], max_retries=2, backoff=Backoff(), max_retry_wait=60, rng=Random(0))
        plan.model             -> "a"
        plan.after(error_429)  -> 0.05      (wait this long, then try plan.model again)
        ...                    -> 0.0       (retries used up: plan.model is now "b")
        ...                    -> None      (nothing left: raise the error)
    """

    def __init__(self, models: Sequence[str], max_retries: int, backoff: Backoff, max_retry_wait: float,
                 rng: random.Random):
        self.models, self.max_retries, self.backoff = tuple(models), max_retries, backoff
        self.max_retry_wait, self.rng = max_retry_wait, rng
        self.index = 0  # which model
        self.retries = 0  # retries of that model so far

    @property
    def model(self) -> str:
        return self.models[self.index]

    def after(self, error: ProviderError) -> float | None:
        """Seconds to wait before the next attempt (of `self.model`, which may have moved on), or None."""
        if error.retryable and self.retries < self.max_retries:
            hint = error.retry_after
            wait = max(0.0, hint) if hint is not None else self.backoff.delay(self.retries, self.rng)
            if wait <= self.max_retry_wait:
                self.retries += 1
                return wait
            # The server wants a longer pause than we accept: do not sleep on it, fall over instead.
        if moves_to_fallback(error, self.model) and self.index + 1 < len(self.models):
            self.index, self.retries = self.index + 1, 0
            return 0.0  # a different model has its own limits: no reason to wait
        return None


# --------------------------------------------------------------------------------------------------
# The stream a notebook can watch
# --------------------------------------------------------------------------------------------------

class TurnStream:
    """Raw SSE events of one streamed turn as they arrive; `.turn` is the assembled ModelTurn at the end.

        stream = model.stream(messages, tools)
        for event in stream:                     # or: async for event in model.astream(...)
            print(event.event, event.data[:60])
        stream.turn.tool_calls
    """

    def __init__(self) -> None:
        self.turn: ModelTurn | None = None
        self._events: Any = None

    def __iter__(self) -> Iterator[SSEvent]:
        if not hasattr(self._events, "__next__"):
            raise TypeError("this stream came from astream(): use `async for`")
        return self._events

    def __aiter__(self) -> AsyncIterator[SSEvent]:
        if not hasattr(self._events, "__anext__"):
            raise TypeError("this stream came from stream(): use a plain `for`")
        return self._events


@dataclass(frozen=True)
class _Request:
    """Step 1's output: everything needed to send one attempt."""

    model: str
    url: str
    path: str  # URL path + query, for the record (never holds a key)
    headers: dict
    body: dict
    stream: bool


# --------------------------------------------------------------------------------------------------
# HTTPModel
# --------------------------------------------------------------------------------------------------

class HTTPModel:
    """A model behind an HTTP API, in any format agentkit has a codec for.

        model = HTTPModel("claude-haiku-4-5", "anthropic", fallback_models=["claude-sonnet-4-5"])
        turn = model.complete(messages, tools, ModelOptions(stream=True))
        model.last_attempts     # [Attempt(model=..., status=529, ...), Attempt(..., status=200)]

    The key comes from `api_key`, else the codec's env vars (OPENAI_API_KEY, ANTHROPIC_API_KEY,
    GEMINI_API_KEY / GOOGLE_API_KEY, OPENROUTER_API_KEY). The base URL from `base_url`, else env
    AGENTKIT_BASE_URL, else the provider's own. A missing key is an error only at the provider's own URL:
    local servers (Ollama, vLLM, llama.cpp) and the simulator need none. Like the official SDKs, an env
    key is also sent to a custom base URL; pass api_key="" to send none.

    For tests and notebooks: `transport=httpx.MockTransport(handler)` (or `client=`/`async_client=`)
    replaces the network, `sleep=`/`asleep=` replace waiting, `seed=` fixes the jitter, and
    `on_attempt=` sees every Attempt as it happens. `codec=` takes any module with the codec verbs.
    """

    def __init__(self, model: str, format: str = "openai-chat", *, base_url: str | None = None,
                 api_key: str | None = None, fallback_models: Sequence[str] = (),
                 timeout: float | httpx.Timeout = 60.0, max_retries: int = 2, backoff: Backoff = Backoff(),
                 max_retry_wait: float = 60.0, client: httpx.Client | None = None,
                 async_client: httpx.AsyncClient | None = None,
                 transport: httpx.BaseTransport | httpx.AsyncBaseTransport | None = None,
                 headers: dict | None = None, extra_body: dict | None = None, seed: int | None = None,
                 sleep: Callable[[float], None] = time.sleep,
                 asleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                 on_attempt: Callable[[Attempt], None] | None = None, codec: ModuleType | None = None):
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        if isinstance(fallback_models, str):
            raise TypeError("fallback_models is a list of model names, not one string")
        self.model, self.format = model, format
        self.codec = codec if codec is not None else get_codec(format)
        self.fallback_models = tuple(fallback_models)
        # Each codec names its provider's URL and key variables: one source of truth per format.
        default_url = getattr(self.codec, "DEFAULT_BASE_URL", "").rstrip("/")
        self.base_url = (base_url or os.environ.get("AGENTKIT_BASE_URL") or default_url).rstrip("/")
        if not self.base_url:
            raise ValueError(f"no base_url given and codec {format!r} has no DEFAULT_BASE_URL")
        self.key_envs = tuple(getattr(self.codec, "API_KEY_ENVS", ()))
        if api_key is None:
            api_key = next((os.environ[e] for e in self.key_envs if os.environ.get(e)), None)
        self._api_key = api_key or None
        if self._api_key is None and self.base_url == default_url:
            names = " or ".join(self.key_envs) or "api_key"
            raise AuthenticationError(f"no API key: set {names}, or pass api_key=... (a custom base_url, "
                                      "e.g. a local server, needs none)", provider=format, model=model)
        self.timeout = timeout if isinstance(timeout, httpx.Timeout) else httpx.Timeout(timeout)
        self.max_retries, self.backoff, self.max_retry_wait = max_retries, backoff, max_retry_wait
        self.headers, self.extra_body = dict(headers or {}), dict(extra_body or {})
        self.on_attempt, self._sleep, self._asleep = on_attempt, sleep, asleep
        self._rng = random.Random(seed)  # jitter only; seeded so tests and notebooks are repeatable
        self.last_attempts: list[Attempt] = []
        # Clients: injected ones belong to the caller (never closed here); ours are made on first use.
        self._transport, self._client, self._async_client = transport, client, async_client
        self._owns_client, self._owns_async_client = client is None, async_client is None
        self._async_loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        key = "***" if self._api_key else None
        fallbacks = f", fallback_models={list(self.fallback_models)!r}" if self.fallback_models else ""
        return (f"HTTPModel(model={self.model!r}, format={self.format!r}, base_url={self.base_url!r}, "
                f"api_key={key!r}{fallbacks})")

    @property
    def models(self) -> tuple[str, ...]:
        """The primary model, then the fallbacks, in the order they are tried."""
        return (self.model, *self.fallback_models)

    @classmethod
    def from_env(cls, default_format: str = "openai-chat", sim_url: Any = None, *,
                 sim_model: str = "sim-reasoner", **kwargs: Any) -> HTTPModel:
        """The model the environment asks for, else the simulator at `sim_url` — what the notebooks call.

            with agentkit.sim.serve() as sim:
                model = HTTPModel.from_env(sim_url=sim.url)     # or sim_url=sim

        First match wins:
          1. AGENTKIT_PROVIDER: a format name ("openai-chat", "anthropic", "gemini", ...; also "openai",
             "claude", "google"), or "sim" to force the simulator even when keys are set;
          2. AGENTKIT_BASE_URL: `default_format` at that URL (Ollama, vLLM, llama.cpp, a proxy);
          3. the simulator at `sim_url`, model `sim_model`, in `default_format`.
        A provider key alone switches nothing: a key left in your shell must never turn `make test` or a
        tutorial into a paid run. The model name for 1-2 is AGENTKIT_MODEL, else the codec's
        DEFAULT_MODEL. Other keyword arguments go to HTTPModel (fallback_models, timeout, seed, ...).
        """
        env = os.environ
        provider = env.get("AGENTKIT_PROVIDER", "").strip().lower()
        provider = _PROVIDER_ALIASES.get(provider, provider)
        fmt: str | None = None
        if provider and provider != "sim":
            if provider not in FORMATS:
                raise ValueError(f"AGENTKIT_PROVIDER={provider!r}: choose 'sim' or one of {sorted(FORMATS)}")
            fmt = provider
        elif not provider and env.get("AGENTKIT_BASE_URL"):
            fmt = default_format
        if fmt is not None:
            model = env.get("AGENTKIT_MODEL") or get_codec(fmt).DEFAULT_MODEL
            return cls(model, fmt, **kwargs)
        if not sim_url:
            raise ValueError("no provider configured and no simulator: start one with agentkit.sim.serve() "
                             "and pass sim_url=..., or set AGENTKIT_PROVIDER / a provider API key")
        sim_url = getattr(sim_url, "url", sim_url)  # the handle from agentkit.sim.serve() works too
        # The simulator takes any key but wants one; a dummy means a real key is never sent to it.
        kwargs.setdefault("api_key", "sim-key")
        return cls(sim_model, default_format, base_url=cls.sim_base_url(sim_url, default_format), **kwargs)

    @staticmethod
    def sim_base_url(sim_url: str, format: str) -> str:
        """Where a format lives on the simulator: its routes mirror the real hosts, so keep their path part.

            sim_base_url("http://127.0.0.1:8123", "openrouter")  ->  "http://127.0.0.1:8123/api/v1"
        """
        return sim_url.rstrip("/") + urlsplit(get_codec(format).DEFAULT_BASE_URL).path.rstrip("/")

    # -- clients: lazy, reused for keep-alive, closable -----------------------------------------------

    def _sync_client(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                self._client = httpx.Client(transport=self._transport, timeout=self.timeout)
            return self._client

    def _aclient(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        with self._lock:
            # An AsyncClient's pooled connections belong to the event loop that opened them. Scripts that
            # call asyncio.run() twice get a new loop each time, so our own client is remade for it.
            if self._async_client is not None and self._owns_async_client and self._async_loop is not loop:
                self._async_client = None
            if self._async_client is None:
                self._async_client = httpx.AsyncClient(transport=self._transport, timeout=self.timeout)
                self._async_loop = loop
            return self._async_client

    def close(self) -> None:
        """Close the sync client made here (an injected client is the caller's to close)."""
        if self._client is not None and self._owns_client:
            self._client.close()
            self._client = None

    async def aclose(self) -> None:
        """Close both clients made here."""
        self.close()
        if self._async_client is not None and self._owns_async_client:
            await self._async_client.aclose()
            self._async_client = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- the public verbs ------------------------------------------------------------------------------

    def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec] = (),
                 options: ModelOptions | None = None) -> ModelTurn:
        """One model turn, with retries and fallbacks; streamed on the wire when options.stream."""
        return self._call(messages, tools, options or ModelOptions(), self._send)

    async def acomplete(self, messages: Sequence[Message], tools: Sequence[ToolSpec] = (),
                        options: ModelOptions | None = None) -> ModelTurn:
        """`complete` for asyncio."""
        return await self._acall(messages, tools, options or ModelOptions(), self._asend)

    def stream(self, messages: Sequence[Message], tools: Sequence[ToolSpec] = (),
               options: ModelOptions | None = None) -> TurnStream:
        """The raw SSE events of one turn, as they arrive (see TurnStream).

        Retries and fallbacks apply until the first event arrives; after that a failure raises at once,
        because the caller has already seen part of the answer.
        """
        options = replace(options or ModelOptions(), stream=True)
        result = TurnStream()
        result._events = self._watch(result, messages, tools, options)
        return result

    def astream(self, messages: Sequence[Message], tools: Sequence[ToolSpec] = (),
                options: ModelOptions | None = None) -> TurnStream:
        """`stream` for asyncio: `async for event in model.astream(...)`."""
        options = replace(options or ModelOptions(), stream=True)
        result = TurnStream()
        result._events = self._awatch(result, messages, tools, options)
        return result

    # -- step 4: the drivers (sync and async are the same loop; RetryPlan decides) ---------------------

    def _call(self, messages, tools, options, send, attempts=None):
        """Attempt after attempt until one succeeds or the plan gives up; `send` does steps 2, 3, 5."""
        plan, attempts = self._plan(), [] if attempts is None else attempts
        self.last_attempts = attempts  # the most recent call's, for notebooks and the trace
        wait = 0.0
        while True:
            if wait > 0:
                self._sleep(wait)
            request = self._build(plan.model, messages, tools, options)    # 1. build
            started = time.perf_counter()
            try:
                result, status = send(request)                             # 2. send 3. classify 5. decode
            except ProviderError as error:
                self._note(attempts, request, wait, started, error=error)
                wait = plan.after(error)                                   # 4. retry or fall back
                if wait is None:
                    self._final(error, attempts)
                    raise
            else:
                self._note(attempts, request, wait, started, status=status)
                return result

    async def _acall(self, messages, tools, options, send, attempts=None):
        plan, attempts = self._plan(), [] if attempts is None else attempts
        self.last_attempts = attempts  # the most recent call's, for notebooks and the trace
        wait = 0.0
        while True:
            if wait > 0:
                await self._asleep(wait)
            request = self._build(plan.model, messages, tools, options)    # 1. build
            started = time.perf_counter()
            try:
                result, status = await send(request)                       # 2. send 3. classify 5. decode
            except ProviderError as error:
                self._note(attempts, request, wait, started, error=error)
                wait = plan.after(error)                                   # 4. retry or fall back
                if wait is None:
                    self._final(error, attempts)
                    raise
            else:
                self._note(attempts, request, wait, started, status=status)
                return result

    def _plan(self) -> RetryPlan:
        return RetryPlan(self.models, self.max_retries, self.backoff, self.max_retry_wait, self._rng)

    def _note(self, attempts: list, request: _Request, wait: float, started: float, *,
              status: int | None = None, error: ProviderError | None = None) -> None:
        if error is not None:
            status = self._own(error, request.model).status
        attempt = Attempt(request.model, request.path, status,
                          error=type(error).__name__ if error is not None else None,
                          error_type=error.error_type if error is not None else None,
                          message=error.message if error is not None else None,
                          wait=round(wait, 6), elapsed=time.perf_counter() - started)
        attempts.append(attempt)
        log.debug("%s %s -> %s (waited %.3fs)", attempt.model, attempt.path, attempt.outcome, wait)
        if self.on_attempt is not None:
            self.on_attempt(attempt)

    def _final(self, error: ProviderError, attempts: list[Attempt]) -> ProviderError:
        """The error the caller sees: the last one, with every attempt of the call listed."""
        error.attempts = [(a.model, a.outcome) for a in attempts]
        return error

    def _spoilt(self, attempts: list[Attempt], error: ProviderError) -> None:
        """A watched stream broke after its first event: its attempt counted as a success, correct that."""
        attempts[-1] = replace(attempts[-1], error=type(error).__name__, error_type=error.error_type,
                               message=error.message)
        self._final(error, attempts)

    def _own(self, error: ProviderError, model: str, status: int | None = None) -> ProviderError:
        """Fill in what the codec could not know (which model, which format) and scrub the key out."""
        secrets = [self._api_key]
        # Re-running __init__ rebuilds str(error), so the message names the model that failed.
        ProviderError.__init__(
            error, redact(str(error.message), secrets),
            status=error.status if error.status is not None else status, error_type=error.error_type,
            provider=error.provider or self.format, model=error.model or model,
            retry_after=error.retry_after, body=_redact_json(error.body, secrets))
        return error

    # -- step 1: build ---------------------------------------------------------------------------------

    def _build(self, model: str, messages, tools, options: ModelOptions) -> _Request:
        extras: dict[str, Any] = {}
        if self.format == "openrouter":
            # OpenRouter falls back server-side too: send it the models from this one on, in order.
            remaining = list(self.models[self.models.index(model):])
            if len(remaining) > 1:
                extras["models"] = remaining
        extras.update(self.extra_body)
        wire = self.codec.build_request(model, list(messages), list(tools), options, **extras)
        auth = self.codec.auth_headers(self._api_key) if self._api_key else {}
        headers = {**wire.headers, **auth, **self.headers}
        url = f"{self.base_url}/{wire.path.lstrip('/')}"
        parsed = httpx.URL(url)
        path = parsed.path + (f"?{parsed.query.decode()}" if parsed.query else "")
        return _Request(model, url, redact(path), headers, wire.body, bool(options.stream or wire.stream))

    # -- steps 2, 3, 5 for one attempt (sync) ----------------------------------------------------------

    def _send(self, request: _Request) -> tuple[ModelTurn, int]:
        if request.stream:
            assembler = self.codec.StreamAssembler()
            with closing(self._events(request)) as events:
                for event in events:
                    with self._decoding(request.model):
                        assembler.feed(event.event, event.data)
            with self._decoding(request.model):
                return assembler.turn(), 200
        with self._classify(request.model):
            response = self._sync_client().post(request.url, json=request.body, headers=request.headers,
                                                timeout=self.timeout)
            content = response.content  # read inside: a dropped connection surfaces here
        return self._decode(response.status_code, content, response.headers, request.model)

    def _events(self, request: _Request) -> Iterator[SSEvent]:
        """The SSE events of one attempt; httpx-sse does the framing (comments and keep-alives skipped)."""
        with self._classify(request.model), httpx_sse.connect_sse(
                self._sync_client(), "POST", request.url, json=request.body, headers=dict(request.headers),
                timeout=self.timeout) as source:
            response = source.response
            if not response.is_success:
                response.read()
                raise self._status_error(response.status_code, response.content, response.headers,
                                         request.model)
            for sse in source.iter_sse():
                yield _event(sse)

    def _open(self, request: _Request) -> tuple[Iterator[SSEvent], int]:
        """For stream(): an attempt succeeds once its first event is in hand."""
        events = self._events(request)
        try:
            first = next(events)
        except StopIteration:
            raise self._empty_stream(request.model) from None
        return _prepend(first, events), 200

    def _watch(self, result: TurnStream, messages, tools, options) -> Iterator[SSEvent]:
        attempts: list[Attempt] = []
        events = self._call(messages, tools, options, self._open, attempts)
        model, assembler = attempts[-1].model, self.codec.StreamAssembler()
        try:
            with closing(events):
                for event in events:
                    with self._decoding(model):
                        assembler.feed(event.event, event.data)
                    yield event
            with self._decoding(model):
                result.turn = assembler.turn()
        except ProviderError as error:  # after the first event: no retry, the caller saw part of it
            self._spoilt(attempts, self._own(error, model))
            raise

    # -- steps 2, 3, 5 for one attempt (async: the same shape, awaited) --------------------------------

    async def _asend(self, request: _Request) -> tuple[ModelTurn, int]:
        if request.stream:
            assembler = self.codec.StreamAssembler()
            async with aclosing(self._aevents(request)) as events:
                async for event in events:
                    with self._decoding(request.model):
                        assembler.feed(event.event, event.data)
            with self._decoding(request.model):
                return assembler.turn(), 200
        with self._classify(request.model):
            response = await self._aclient().post(request.url, json=request.body, headers=request.headers,
                                                  timeout=self.timeout)
            content = response.content
        return self._decode(response.status_code, content, response.headers, request.model)

    async def _aevents(self, request: _Request) -> AsyncIterator[SSEvent]:
        with self._classify(request.model):
            async with httpx_sse.aconnect_sse(self._aclient(), "POST", request.url, json=request.body,
                                              headers=dict(request.headers), timeout=self.timeout) as source:
                response = source.response
                if not response.is_success:
                    await response.aread()
                    raise self._status_error(response.status_code, response.content, response.headers,
                                             request.model)
                async for sse in source.aiter_sse():
                    yield _event(sse)

    async def _aopen(self, request: _Request) -> tuple[AsyncIterator[SSEvent], int]:
        events = self._aevents(request)
        try:
            first = await events.__anext__()
        except StopAsyncIteration:
            raise self._empty_stream(request.model) from None
        return _aprepend(first, events), 200

    async def _awatch(self, result: TurnStream, messages, tools, options) -> AsyncIterator[SSEvent]:
        attempts: list[Attempt] = []
        events = await self._acall(messages, tools, options, self._aopen, attempts)
        model, assembler = attempts[-1].model, self.codec.StreamAssembler()
        try:
            async with aclosing(events):
                async for event in events:
                    with self._decoding(model):
                        assembler.feed(event.event, event.data)
                    yield event
            with self._decoding(model):
                result.turn = assembler.turn()
        except ProviderError as error:
            self._spoilt(attempts, self._own(error, model))
            raise

    # -- step 3: classify; step 5: decode --------------------------------------------------------------

    @contextmanager
    def _classify(self, model: str) -> Iterator[None]:
        """Turn httpx's failures into ProviderErrors; ProviderErrors pass through untouched."""
        try:
            yield
        except ProviderError:
            raise
        except (httpx_sse.SSEError, httpx.DecodingError) as exc:  # before TransportError: SSEError is one
            # A "stream" that is not text/event-stream, or a body whose gzip/brotli coding is broken.
            raise BadResponseError(f"the response could not be read: {redact(str(exc), [self._api_key])}",
                                   status=200, error_type=type(exc).__name__, provider=self.format,
                                   model=model) from None
        except httpx.TimeoutException as exc:
            raise ProviderTimeout(f"no answer within the timeout ({type(exc).__name__})",
                                  error_type=type(exc).__name__, provider=self.format, model=model) from None
        except httpx.UnsupportedProtocol as exc:
            # A base_url without http:// or https:// — a setting to fix, not a failure to retry.
            raise ProviderError(f"cannot send to this URL: {redact(str(exc), [self._api_key])}",
                                error_type="UnsupportedProtocol", provider=self.format, model=model) from None
        except httpx.TransportError as exc:
            # Connection refused, reset or dropped mid-body (a truncated response ends up here too).
            detail = redact(str(exc), [self._api_key])
            raise ProviderTimeout(f"connection failed or dropped ({type(exc).__name__}: {detail})",
                                  error_type=type(exc).__name__, provider=self.format, model=model) from None

    @contextmanager
    def _decoding(self, model: str) -> Iterator[None]:
        """A codec that cannot read a 2xx body raises ValueError/KeyError/...: that is a bad response."""
        try:
            yield
        except ProviderError as error:
            if error.status is None:  # an error inside a 200 body or stream: the HTTP status was 200
                error.status = 200
            raise
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
            raise BadResponseError(f"the response does not fit the {self.format} format "
                                   f"({type(exc).__name__}: {redact(str(exc), [self._api_key])[:200]})",
                                   status=200, error_type="invalid_response", provider=self.format,
                                   model=model) from None

    def _empty_stream(self, model: str) -> BadResponseError:
        return BadResponseError("the stream ended before its first event", status=200,
                                error_type="empty_stream", provider=self.format, model=model)

    def _decode(self, status: int, content: bytes, headers: httpx.Headers,
                model: str) -> tuple[ModelTurn, int]:
        if not 200 <= status < 300:
            raise self._status_error(status, content, headers, model)
        try:
            body = json.loads(content)
        except ValueError as exc:
            where = f" at char {exc.pos} of {len(content)}" if isinstance(exc, json.JSONDecodeError) else ""
            reason = (exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)) + where
            raise BadResponseError(f"the response body is not valid JSON ({reason})", status=status,
                                   error_type="invalid_json", provider=self.format, model=model) from None
        with self._decoding(model):
            return self.codec.parse_response(body), status

    def _status_error(self, status: int, content: bytes, headers: httpx.Headers, model: str) -> ProviderError:
        """An error status, typed by the codec (which reads the format's error body and body hints)."""
        try:
            body: Any = json.loads(content) if content else None
        except ValueError:
            body = content.decode("utf-8", "replace")[:500]
        try:
            error = self.codec.parse_error(status, body, headers)
        except Exception:  # noqa: BLE001 - a codec that chokes on an odd error body must not hide the status
            error = None
        if not isinstance(error, ProviderError):
            error = error_for_status(status)(f"HTTP {status}: {str(body)[:200]}", status=status,
                                             provider=self.format, model=model, body=body)
        hint = retry_after_seconds(headers)  # the header, when sent, wins over a hint in the body
        if hint is not None:
            error.retry_after = hint
        return self._own(error, model, status)


def _event(sse: httpx_sse.ServerSentEvent) -> SSEvent:
    # httpx-sse names unnamed events "message"; the codecs expect None for "no event: line".
    return SSEvent(data=sse.data, event=None if sse.event == "message" else sse.event)


def _prepend(first: SSEvent, rest: Iterator[SSEvent]) -> Iterator[SSEvent]:
    with closing(rest):  # closing this generator closes the HTTP stream too
        yield first
        yield from rest


async def _aprepend(first: SSEvent, rest: AsyncIterator[SSEvent]) -> AsyncIterator[SSEvent]:
    async with aclosing(rest):
        yield first
        async for event in rest:
            yield event
