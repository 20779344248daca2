"""HTTPModel: a model that answers over real HTTP — httpx plus one provider codec.

    from agentkit.http import HTTPModel
    model = HTTPModel("gpt-4.1-mini")                                     # key from OPENAI_API_KEY
    turn = model.complete([Message.user("Weather in Paris?")], tools, ModelOptions())

    local = HTTPModel("llama3.1", base_url="http://localhost:11434/v1")   # Ollama, vLLM, llama.cpp: no key

The codec (`agentkit.providers`) knows the wire format; this module knows the network. Every call
follows one recipe, numbered the same way in the code below (`_drive`); each step is one call into a
short part of its own:

    1. build      codec.build_request -> path, headers, JSON body; plus the auth header and extras
                  (`_build` below; its output is an `AttemptRequest`, `agentkit.http.call`)
    2. send       POST with httpx under the attempt's clock: one response, or a stream of events (SSE
                  framed by httpx-sse, or NDJSON lines, as the codec's STREAM_FRAMING says)
                  (`agentkit.http.send`; the clients it sends with: `agentkit.http.clients`)
    3. classify   2xx -> decode; error status -> codec.parse_error; no connection -> ProviderConnectionError;
                  a time limit passed -> ProviderTimeout. Each error is built once, whole and scrubbed
                  (`agentkit.http.classify`)
    4. retry      a retryable failure (408/409/429/5xx/529, connection, timeout, bad body): wait, same model
       fall back  retries used up, a model-specific 4xx, or a wait too long to afford: the next model of
                  `fallback_models` (the decision: `Call.failed`, `agentkit.http.call`; the waiting: `_drive`)
    5. decode     codec.parse_response, or StreamAssembler().feed(event, data) ... .turn() -> ModelTurn
                  (`agentkit.http.decode`)

The parts of steps 2, 3 and 5 are base classes of HTTPModel (`SendStep`, which builds on `ClientsPart`,
`DecodeStep` and `ClassifyStep`): each reads a few attributes of the model, named in its docstring.

Time (step 2, `agentkit.http.deadlines`): `timeout` bounds one attempt from connect to last byte, and a stream
that brings no event for `timeout` seconds is stalled (SSE `: keep-alive` comments are not events);
`total_timeout` bounds the whole call, every attempt and every wait together. Either ends the call in a
ProviderTimeout whose error_type says which ("timeout", "stalled", "total_timeout").

How long to wait (step 4, `agentkit.http.retries`): the server's `retry-after-ms`, else `retry-after` (seconds
or an HTTP date), else the body's hint (Gemini's RetryInfo.retryDelay, read by the codec), else capped
exponential backoff with jitter. A wait longer than `max_retry_wait` or than the budget left is not waited
for: the call falls over to the next model at once (or raises). The policy is `RetryPlan`, with no I/O, and
each call's state is one `Call`, so the sync and async drivers share every decision.

Stored conversations (`continue_stored_responses=True`): an API that keeps its responses (OpenAI
Responses with `store`, the default; the codec's CONTINUATION_FIELD says which field continues one)
lets a request send only what is new since a stored response, plus that response's id. HTTPModel
remembers the last few stored responses it received and, when the messages of a call extend one of
those conversations exactly, sends only the new messages and `previous_response_id`. The loop does not
know: it always passes the whole conversation. If the server has forgotten the response (400), the call
is sent again, whole, at once. The bookkeeping is `agentkit.http.stored`.

Keys (`agentkit.http.redaction`): checked when the model is built (surrounding whitespace stripped; whitespace,
a control or a non-ASCII character inside is refused, naming where the key came from, never the key),
sent in the codec's auth header (or in the URL, if you put `?key=` into base_url yourself), and scrubbed,
in every form, out of every error, attempt record, repr and log line — httpx's own request log included.

Left out on purpose: HTTP/2, proxies beyond httpx's defaults, request signing (Vertex AI, Bedrock),
client-side rate limiting from `x-ratelimit-*` headers, circuit breakers that remember failures across
calls, the SDKs' `x-should-retry` header, and retrying a stream after its first event reached the caller.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import os
import random
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

import httpx

from ..core.errors import AuthenticationError, ProviderError
from ..core.types import Message, ModelOptions, ModelTurn, ToolSpec
from ..providers import FORMATS, get_codec
from ..providers.common import SSEvent, retry_after_seconds
from .call import RECORDERS, AttemptRequest, Call
from .deadlines import AttemptClock
from .redaction import (
    clean_key,
    header_secrets,
    key_problem,
    protect_library_logs,
    redact,
    secret_forms,
    url_secrets,
)
from .retries import Attempt
from .send import SendStep
from .stored import StoredConversations

__all__ = ["PROVIDER_ALIASES", "Attempt", "HTTPModel", "TurnStream", "retry_after_seconds"]

#: AGENTKIT_PROVIDER accepts the format names and these friendlier words.
PROVIDER_ALIASES = {"openai": "openai-chat", "responses": "openai-responses", "claude": "anthropic",
                    "google": "gemini"}


# --------------------------------------------------------------------------------------------------
# The stream a notebook can watch
# --------------------------------------------------------------------------------------------------

class TurnStream:
    """Raw events of one streamed turn as they arrive; `.turn` is the assembled ModelTurn at the end.

        stream = model.stream(messages, tools)
        for event in stream:                     # or: async for event in model.astream(...)
            print(event.event, event.data[:60])
        stream.turn.tool_calls
        stream.attempts                          # this call's Attempts (retries before the first event)

    An event is an SSEvent: an SSE event's name and data, or for NDJSON streams one line as `data`.
    """

    def __init__(self, attempts: list[Attempt] | None = None) -> None:
        self.turn: ModelTurn | None = None
        self.attempts: list[Attempt] = attempts if attempts is not None else []
        self._events: Any = None

    def __iter__(self) -> Iterator[SSEvent]:
        if not hasattr(self._events, "__next__"):
            raise TypeError("this stream came from astream(): use `async for`")
        return self._events

    def __aiter__(self) -> AsyncIterator[SSEvent]:
        if not hasattr(self._events, "__anext__"):
            raise TypeError("this stream came from stream(): use a plain `for`")
        return self._events


# --------------------------------------------------------------------------------------------------
# HTTPModel
# --------------------------------------------------------------------------------------------------

def configured_format(default_format: str = "openai-chat") -> str | None:
    """The wire format the environment asks for, or None for the simulator (see HTTPModel.from_env).

    AGENTKIT_PROVIDER names a format (or "sim"); a typo is an error, never a quiet fall-back to the
    simulator. Without it, AGENTKIT_BASE_URL means `default_format` at that URL.
    """
    provider = os.environ.get("AGENTKIT_PROVIDER", "").strip().lower()
    provider = PROVIDER_ALIASES.get(provider, provider)
    if provider == "sim":
        return None
    if provider:
        if provider not in FORMATS:
            raise ValueError(f"AGENTKIT_PROVIDER={provider!r}: choose 'sim' or one of {sorted(FORMATS)}")
        return provider
    return default_format if os.environ.get("AGENTKIT_BASE_URL", "").strip() else None


def configured_model(format: str) -> str:
    """AGENTKIT_MODEL, else the format's default model; with AGENTKIT_BASE_URL the model must be named.

    A server at your own URL (Ollama, vLLM, llama.cpp) serves only the models installed there and would
    answer the default name with a 404 at the first request: this says so before any request is made.
    """
    name = os.environ.get("AGENTKIT_MODEL", "").strip()
    if not name and os.environ.get("AGENTKIT_BASE_URL", "").strip():
        raise ValueError("AGENTKIT_BASE_URL is set but AGENTKIT_MODEL is not: name a model that server has "
                         "(for Ollama, one that `ollama list` shows, e.g. AGENTKIT_MODEL=qwen3); in JupyterLab, "
                         "restart it so that its kernels see the variable")
    return name or get_codec(format).DEFAULT_MODEL


class HTTPModel(SendStep):
    """A model behind an HTTP API, in any format agentkit has a codec for.

        model = HTTPModel("claude-haiku-4-5", "anthropic", fallback_models=["claude-sonnet-4-5"])
        turn = model.complete(messages, tools, ModelOptions(stream=True))
        model.last_attempts     # [Attempt(model=..., status=529, ...), Attempt(..., status=200)]

    The key comes from `api_key`, else the codec's env vars (OPENAI_API_KEY, ANTHROPIC_API_KEY,
    GEMINI_API_KEY / GOOGLE_API_KEY, OPENROUTER_API_KEY); surrounding whitespace is stripped, and a key
    with whitespace, a control or a non-ASCII character inside is refused (AuthenticationError naming the
    variable, never the key). The base URL from `base_url`, else env AGENTKIT_BASE_URL, else the
    provider's own. A missing key is an error only at the provider's own URL: local servers (Ollama, vLLM,
    llama.cpp) and the simulator need none. Like the official SDKs, an env key is also sent to a custom
    base URL; pass api_key="" to send none.

    Time: `timeout` (seconds, default 60) bounds each attempt from connect to last byte; for a stream it
    is the longest wait for the next event. `total_timeout` (seconds, default None: no budget beyond
    the attempts' own bounds) bounds the whole call, retries and waits included. An `httpx.Timeout`
    is accepted too: httpx applies its per-phase limits and the attempt's bound is its largest value.

    Retries: `max_retries` per model, waits of `backoff`, `backoff*2`, ... at most `max_delay` seconds
    (the words `agentkit.Retry` uses), a server's hint up to `max_retry_wait`; then `fallback_models`.

    Per call: `last_attempts` holds the most recent call's Attempts (concurrent calls replace each
    other there); `with model.record_attempts() as attempts:` collects the calls of this thread or task
    only; a failed call's error lists its attempts in `.attempts`; every Attempt carries its call number.

    Stored conversations: with `continue_stored_responses=True` and an API that stores responses (the
    codec's CONTINUATION_FIELD; OpenAI Responses), a call whose messages extend a stored response's
    conversation sends only the new messages and that response's id (see the module notes). Other
    formats ignore it.

    For tests and notebooks: `transport=httpx.MockTransport(handler)` (or `client=`/`async_client=`)
    replaces the network, `sleep=`/`asleep=` replace waiting, `seed=` fixes the jitter, and
    `on_attempt=` sees every Attempt as it happens. `codec=` takes any module with the codec verbs.
    The deadlines hold for your own `client=`/`async_client=` too: their connection pools (and those a
    transport of yours wraps) are bounded at the socket like ours (`agentkit.http.deadlines.bound_client`), and
    an async transport of your own that is not a pool is cancelled at the deadline. (A sync transport of
    your own that holds no httpx pool keeps only its own timeouts.)
    """

    def __init__(self, model: str, format: str = "openai-chat", *, base_url: str | None = None,
                 api_key: str | None = None, fallback_models: Sequence[str] = (),
                 timeout: float | httpx.Timeout | None = 60.0, total_timeout: float | None = None,
                 max_retries: int = 2, backoff: float = 0.5, max_delay: float = 8.0,
                 max_retry_wait: float = 60.0, client: httpx.Client | None = None,
                 async_client: httpx.AsyncClient | None = None,
                 transport: httpx.BaseTransport | httpx.AsyncBaseTransport | None = None,
                 headers: dict | None = None, extra_body: dict | None = None, seed: int | None = None,
                 sleep: Callable[[float], None] = time.sleep,
                 asleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                 on_attempt: Callable[[Attempt], None] | None = None, codec: ModuleType | None = None,
                 continue_stored_responses: bool = False):
        if not isinstance(max_retries, int) or isinstance(max_retries, bool) or max_retries < 0:
            raise ValueError("max_retries must be a whole number >= 0")
        if isinstance(fallback_models, str):
            raise TypeError("fallback_models is a list of model names, not one string")
        if not isinstance(backoff, (int, float)) or isinstance(backoff, bool):
            raise TypeError("backoff is the first retry's wait in seconds (a number), as in agentkit.Retry")
        for name, value in (("backoff", backoff), ("max_delay", max_delay), ("max_retry_wait", max_retry_wait)):
            if not value >= 0:
                raise ValueError(f"{name} must be >= 0 seconds")
        for name, value in (("timeout", timeout), ("total_timeout", total_timeout)):
            if isinstance(value, (int, float)) and not value > 0:
                raise ValueError(f"{name} must be > 0 seconds, or None for no limit")
        # Infinity means no limit (a socket cannot wait float("inf") seconds).
        timeout = None if timeout == math.inf else timeout
        total_timeout = None if total_timeout == math.inf else total_timeout
        self.model, self.format = model, format
        self.codec = codec if codec is not None else get_codec(format)
        self.fallback_models = tuple(fallback_models)
        # What this module reads from a codec beyond the verbs: facts, with defaults for older codecs.
        self.framing = getattr(self.codec, "STREAM_FRAMING", "sse")
        if self.framing not in ("sse", "ndjson"):
            raise ValueError(f"codec {format!r}: STREAM_FRAMING must be 'sse' or 'ndjson', not {self.framing!r}")
        self._server_side_fallback = bool(getattr(self.codec, "SERVER_SIDE_FALLBACK", False))
        # Each codec names its provider's URL and key variables: one source of truth per format.
        default_url = getattr(self.codec, "DEFAULT_BASE_URL", "").rstrip("/")
        self.base_url = (base_url or os.environ.get("AGENTKIT_BASE_URL") or default_url).rstrip("/")
        if not self.base_url:
            raise ValueError(f"no base_url given and codec {format!r} has no DEFAULT_BASE_URL")
        self.key_envs = tuple(getattr(self.codec, "API_KEY_ENVS", ()))
        self._api_key = self._read_key(api_key)
        # A key is demanded only where the provider's own URL would refuse the call without one.
        key_required = bool(getattr(self.codec, "KEY_REQUIRED", True))
        if self._api_key is None and self.base_url == default_url and key_required:
            names = " or ".join(self.key_envs) or "api_key"
            raise AuthenticationError(f"no API key: set {names}, or pass api_key=... (a custom base_url, "
                                      "e.g. a local server, needs none)", provider=format, model=model)
        self.headers = self._read_headers(headers or {})
        self._secrets = (self._api_key, *url_secrets(self.base_url), *header_secrets(self.headers))
        self._secret_forms = secret_forms(self._secrets)  # every shape they can take in text, found once
        protect_library_logs()
        self.timeout = timeout if isinstance(timeout, httpx.Timeout) else httpx.Timeout(timeout)
        self.total_timeout = total_timeout
        limits = (self.timeout.connect, self.timeout.read, self.timeout.write, self.timeout.pool)
        self._attempt_timeout = max((t for t in limits if t is not None), default=None)
        self.max_retries, self.backoff, self.max_delay = max_retries, float(backoff), float(max_delay)
        self.max_retry_wait = max_retry_wait
        self.extra_body = dict(extra_body or {})
        self.on_attempt, self._sleep, self._asleep = on_attempt, sleep, asleep
        self._rng = random.Random(seed)  # jitter only; seeded so tests and notebooks are repeatable
        self._call_numbers = itertools.count(1)
        self.last_attempts: list[Attempt] = []
        # Clients: injected ones belong to the caller (never closed here); ours are made on first use.
        self._transport, self._client, self._async_client = transport, client, async_client
        self._owns_client, self._owns_async_client = client is None, async_client is None
        self._async_loop: asyncio.AbstractEventLoop | None = None
        self._bounded_client: httpx.Client | None = None  # the clients bound_client() has seen
        self._bounded_async_client: httpx.AsyncClient | None = None
        self._async_at_socket = True  # does the async client's transport enforce deadlines itself?
        self._lock = threading.Lock()
        self.continuation_field = getattr(self.codec, "CONTINUATION_FIELD", None)
        self.continue_stored = bool(continue_stored_responses) and self.continuation_field is not None
        # The last stored responses (agentkit.http.stored): continued from when a call extends one.
        self._stored = StoredConversations()

    def _read_key(self, api_key: str | None) -> str | None:
        """The key, stripped and checked; where it came from is named in any complaint, the key never."""
        if api_key is not None:
            key, source = clean_key(api_key), "api_key"
        else:
            key, source = None, ""
            for name in self.key_envs:
                key, source = clean_key(os.environ.get(name)), name
                if key:
                    break
        problem = key_problem(key) if key else None
        if problem:
            raise AuthenticationError(f"the API key in {source} {problem}. The key itself is not shown.",
                                      error_type="malformed_key", provider=self.format, model=self.model)
        return key

    @staticmethod
    def _read_headers(headers: dict) -> dict:
        out = {}
        for name, value in headers.items():
            value = str(value).strip()
            problem = key_problem(value.replace(" ", "").replace("\t", ""))
            if problem:  # spaces inside a header value are fine ("Bearer x"); the rest is not
                raise ValueError(f"headers[{name!r}] {problem}. The value is not shown.")
            out[name] = value
        return out

    def __repr__(self) -> str:
        key = "***" if self._api_key else None
        fallbacks = f", fallback_models={list(self.fallback_models)!r}" if self.fallback_models else ""
        return (f"HTTPModel(model={self.model!r}, format={self.format!r}, "
                f"base_url={redact(self.base_url, self._secrets)!r}, api_key={key!r}{fallbacks})")

    @property
    def api_key(self) -> str | None:
        """The key in use (stripped), or None. Shown nowhere by agentkit: print it at your own risk."""
        return self._api_key

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
        DEFAULT_MODEL; with AGENTKIT_BASE_URL it must be named (see `configured_model`). Other keyword
        arguments go to HTTPModel (fallback_models, timeout, seed, ...).
        """
        fmt = configured_format(default_format)
        if fmt is not None:
            return cls(configured_model(fmt), fmt, **kwargs)
        if not sim_url:
            raise ValueError("no provider configured and no simulator: start one with agentkit.sim.serve() "
                             "and pass sim_url=..., or set AGENTKIT_PROVIDER / a provider API key")
        sim_url = getattr(sim_url, "url", sim_url)  # the handle from agentkit.sim.serve() works too
        # The simulator needs no key; a dummy one means a real key from the environment is never sent to it.
        kwargs.setdefault("api_key", "sim-key")
        return cls(sim_model, default_format, base_url=cls.sim_base_url(sim_url, default_format), **kwargs)

    @staticmethod
    def sim_base_url(sim_url: str, format: str) -> str:
        """Where a format lives on the simulator: its routes mirror the real hosts, so keep their path part.

            sim_base_url("http://127.0.0.1:8123", "openrouter")  ->  "http://127.0.0.1:8123/api/v1"
        """
        return sim_url.rstrip("/") + urlsplit(get_codec(format).DEFAULT_BASE_URL).path.rstrip("/")

    # Inherited, each from a file of its own: the clients and `close()`/`aclose()`/`with` (ClientsPart,
    # agentkit.http.clients); step 2 for one attempt, `_send`/`_asend`, `_open`/`_aopen`, `_watch`/`_awatch`
    # (SendStep, agentkit.http.send); step 3 (ClassifyStep, agentkit.http.classify); step 5 (DecodeStep,
    # agentkit.http.decode).

    # -- the public verbs ------------------------------------------------------------------------------

    def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec] = (),
                 options: ModelOptions | None = None) -> ModelTurn:
        """One model turn, with retries and fallbacks; streamed on the wire when options.stream."""
        return self._drive(self._new_call(messages, tools, options or ModelOptions()), self._send)

    async def acomplete(self, messages: Sequence[Message], tools: Sequence[ToolSpec] = (),
                        options: ModelOptions | None = None) -> ModelTurn:
        """`complete` for asyncio."""
        return await self._adrive(self._new_call(messages, tools, options or ModelOptions()), self._asend)

    def stream(self, messages: Sequence[Message], tools: Sequence[ToolSpec] = (),
               options: ModelOptions | None = None) -> TurnStream:
        """The raw events of one turn, as they arrive (see TurnStream).

        Retries and fallbacks apply until the first event arrives; after that a failure raises at once,
        because the caller has already seen part of the answer.
        """
        call = self._new_call(messages, tools, replace(options or ModelOptions(), stream=True))
        result = TurnStream(call.attempts)
        result._events = self._watch(result, call)
        return result

    def astream(self, messages: Sequence[Message], tools: Sequence[ToolSpec] = (),
                options: ModelOptions | None = None) -> TurnStream:
        """`stream` for asyncio: `async for event in model.astream(...)`."""
        call = self._new_call(messages, tools, replace(options or ModelOptions(), stream=True))
        result = TurnStream(call.attempts)
        result._events = self._awatch(result, call)
        return result

    @contextmanager
    def record_attempts(self) -> Iterator[list[Attempt]]:
        """Collect the Attempts of this model's calls made in this thread or asyncio task, block-long.

            async def ask(question):
                with model.record_attempts() as attempts:
                    turn = await model.acomplete([Message.user(question)])
                return turn, attempts            # this call's attempts, whatever ran concurrently
        """
        attempts: list[Attempt] = []
        token = RECORDERS.set((*RECORDERS.get(), (self, attempts)))
        try:
            yield attempts
        finally:
            RECORDERS.reset(token)

    # -- step 4: the drivers (sync and async are the same loop; Call decides) --------------------------

    def _new_call(self, messages, tools, options) -> Call:
        call = Call(self, messages, tools, options)
        self.last_attempts = call.attempts  # the most recent call's, for notebooks
        return call

    def _drive(self, call: Call, send: Callable[[AttemptRequest], Any]) -> Any:
        """Attempt after attempt until one succeeds or the plan gives up; `send` does steps 2, 3, 5.

        `send` is `_send` for complete() or `_open` for stream() (agentkit.http.send); `call` decides
        step 4 (agentkit.http.call). `_adrive` is the same loop, awaited."""
        while True:
            request = call.next_request()                                  # 1. build
            try:
                result = send(request)                                     # 2. send 3. classify 5. decode
            except ProviderError as error:
                wait = call.failed(request, error)                         # 4. retry or fall back, or raise
                if wait > 0:
                    self._sleep(wait)
            else:
                call.succeeded(request)
                return result

    async def _adrive(self, call: Call, send: Callable[[AttemptRequest], Awaitable[Any]]) -> Any:
        while True:
            request = call.next_request()                                  # 1. build
            try:
                result = await send(request)                               # 2. send 3. classify 5. decode
            except ProviderError as error:
                wait = call.failed(request, error)                         # 4. retry or fall back, or raise
                if wait > 0:
                    await self._asleep(wait)
            else:
                call.succeeded(request)
                return result

    # -- step 1: build ---------------------------------------------------------------------------------

    def _build(self, call: Call) -> AttemptRequest:
        """The call's next attempt, to the plan's current model, on a clock of its own."""
        model, messages, options = call.plan.model, call.messages, call.options
        extras: dict[str, Any] = {}
        continued, sent = None, messages
        if call.may_continue:
            found = self._stored.continuation(model, messages)
            if found is not None:
                continued, sent = found
                extras[self.continuation_field] = continued
        if self._server_side_fallback:
            # The provider falls back server-side too (OpenRouter's `models`): send it the rest, in order.
            remaining = list(self.models[self.models.index(model):])
            if len(remaining) > 1:
                extras["models"] = remaining
        extras.update(self.extra_body)
        wire = self.codec.build_request(model, sent, call.tools, options, **extras)
        auth = self.codec.auth_headers(self._api_key) if self._api_key else {}
        stream = bool(options.stream or wire.stream)
        framing = {"Accept": "text/event-stream", "Cache-Control": "no-store"} \
            if stream and self.framing == "sse" else {}  # what httpx-sse's connect_sse would send
        headers = {**wire.headers, **framing, **auth, **self.headers}
        url = _join(self.base_url, wire.path)
        parsed = urlsplit(url)
        path = redact(parsed.path + (f"?{parsed.query}" if parsed.query else ""), self._secrets)
        clock = AttemptClock(self._attempt_timeout, call.ends)
        history = tuple((a.model, a.outcome) for a in call.attempts)
        return AttemptRequest(model, url, path, headers, wire.body, stream, clock, history, call.wait,
                              time.perf_counter(), tuple(messages) if self.continue_stored else (), continued)

    # -- stored conversations (continue_stored_responses) ----------------------------------------------

    def _remember(self, request: AttemptRequest, turn: ModelTurn) -> None:
        """Keep the conversation this turn completed when the API stored the response (bounded)."""
        if not self.continue_stored:
            return
        response_id = self.codec.stored_response_id(request.body, turn)
        if response_id is None:
            return
        self._stored.remember(response_id, request.model, request.messages + (turn.as_message(),))


# --------------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------------

def _join(base_url: str, path: str) -> str:
    """base_url + the codec's path, keeping a query of either (`...?key=x` + `m:stream?alt=sse`)."""
    base, _, base_query = base_url.partition("?")
    url = f"{base.rstrip('/')}/{path.lstrip('/')}"
    if base_query:
        url += ("&" if "?" in url else "?") + base_query
    return url

