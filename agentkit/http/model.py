"""HTTPModel: a model that answers over real HTTP — httpx plus one provider codec.

    from agentkit.http import HTTPModel
    model = HTTPModel("gpt-4.1-mini")                                     # key from OPENAI_API_KEY
    turn = model.complete([Message.user("Weather in Paris?")], tools, ModelOptions())

    local = HTTPModel("llama3.1", base_url="http://localhost:11434/v1")   # Ollama, vLLM, llama.cpp: no key

The codec (`agentkit.providers`) knows the wire format; this package knows the network. Every call
follows one recipe, whose words mark the driving loop below (`_drive`); each word is one part of the
package, with its own state, that can be read and tested alone:

    build      codec.build_request -> path, headers, JSON body; plus the auth header and extras
               (`_build` below; what it makes is an `AttemptRequest`, `agentkit.http.request`)
    send       POST with httpx under the attempt's clock: one response, or a stream of events (SSE
               framed by httpx-sse, or NDJSON lines, as the codec's STREAM_FRAMING says)
               (`Sender`, `agentkit.http.send`; the clients it sends with: `Clients`, `agentkit.http.clients`)
    classify   2xx -> decode; error status -> codec.parse_error; no connection -> ProviderConnectionError;
               a time limit passed -> ProviderTimeout. Each error is built once, whole and scrubbed
               (`Classifier`, `agentkit.http.classify`)
    retry      a retryable failure (408/409/429/5xx/529, connection, timeout, bad body): wait, same model
    fall back  retries used up, a model-specific 4xx, or a wait too long to afford: the next model of
               `fallback_models` (the decision: `RetryState.failed`, `agentkit.http.retry_state`, with
               the policy `RetryPlan`, `agentkit.http.retries`; the waiting: `_drive`)
    decode     codec.parse_response, or StreamAssembler().feed(event, data) ... .turn() -> ModelTurn
               (`Decoder`, `agentkit.http.decode`)

Time (`agentkit.http.deadlines`): `timeout` bounds one attempt from connect to last byte, and a stream that
brings no event for `timeout` seconds is stalled (SSE `: keep-alive` comments are not events);
`total_timeout` bounds the whole call, every attempt and every wait together. Either ends the call in a
ProviderTimeout whose error_type says which ("timeout", "stalled", "total_timeout").

How long to wait (`agentkit.http.retries`): the server's `retry-after-ms`, else `retry-after` (seconds or an
HTTP date), else the body's hint (Gemini's RetryInfo.retryDelay, read by the codec), else capped
exponential backoff with jitter. A wait longer than `max_retry_wait` or than the budget left is not waited
for: the call falls over to the next model at once (or raises). The policy is `RetryPlan`, with no I/O, and
each call's state is one `RetryState`, so the sync and async drivers share every decision.

Stored conversations (`continue_stored_responses=True`): an API that keeps its responses (OpenAI
Responses with `store`, the default; the codec's CONTINUATION_FIELD says which field continues one)
lets a request send only what is new since a stored response, plus that response's id. HTTPModel
remembers the last few stored responses it received and, when the messages of a call extend one of
those conversations exactly, sends only the new messages and `previous_response_id`. The loop does not
know: it always passes the whole conversation. If the server has forgotten the response (400), the call
is sent again, whole, at once. The bookkeeping is `agentkit.http.stored`.

Keys (`agentkit.http.redaction`, read by `agentkit.http.environment`): checked when the model is built
(surrounding whitespace stripped; whitespace, a control or a non-ASCII character inside is refused, naming
where the key came from, never the key), sent in the codec's auth header (or in the URL, if you put
`?key=` into base_url yourself), and scrubbed, in every form, out of every error, attempt record, repr and
log line — httpx's own request log included.

Left out on purpose: HTTP/2, proxies beyond httpx's defaults, request signing (Vertex AI, Bedrock),
client-side rate limiting from `x-ratelimit-*` headers, circuit breakers that remember failures across
calls, the SDKs' `x-should-retry` header, retrying a stream after its first event reached the caller, and
any knowledge of the kit's simulator (`agentkit.lab.from_env` adds it for the notebooks).
"""

from __future__ import annotations

import asyncio
import itertools
import math
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import aclosing, closing, contextmanager
from contextvars import ContextVar
from dataclasses import replace
from types import ModuleType
from typing import Any, TypeVar, cast
from urllib.parse import urlsplit

import httpx

from ..core.errors import AuthenticationError, ProviderError
from ..core.types import Message, ModelOptions, ModelTurn, StreamDelta, ToolSpec, deltas_of
from ..providers import get_codec
from ..providers.common import SSEvent, retry_after_seconds
from ..providers.contract import ClientCodec, fact
from . import environment
from .classify import Classifier
from .clients import Clients
from .deadlines import AttemptClock
from .decode import Decoder
from .environment import PROVIDER_ALIASES, configured_format, configured_model
from .redaction import checked_headers, header_secrets, protect_library_logs, redact, secret_forms, url_secrets
from .request import AttemptRequest, join_url
from .retries import Attempt, RetryPlan
from .retry_state import RetryState
from .send import Sender
from .stored import StoredConversations

__all__ = ["PROVIDER_ALIASES", "Attempt", "HTTPModel", "TurnStream", "configured_format", "configured_model",
           "retry_after_seconds"]

T = TypeVar("T")

#: The recorders opened by `HTTPModel.record_attempts()` in this thread or task: (model, list) pairs.
RECORDERS: ContextVar[tuple[tuple[Any, list[Attempt]], ...]] = ContextVar("agentkit_attempt_recorders",
                                                                          default=())


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

    Or read the same stream as what it says, in any format (`agentkit.run_stream` does):

        for piece in model.stream(messages, tools).deltas():   # async for ... in model.astream(...).deltas()
            print(piece)          # TextDelta('Tok'), ReasoningDelta(...), ToolCallDelta(0, '{"ci', 'c1', ...)

    Read one way or the other: both draw on the same events.
    """

    def __init__(self, attempts: list[Attempt] | None = None) -> None:
        self.turn: ModelTurn | None = None
        self.attempts: list[Attempt] = attempts if attempts is not None else []
        self._events: Any = None
        self._pieces: list[StreamDelta] = []  # what the events read so far brought, not yet handed on

    def deltas(self) -> Any:
        """The turn's pieces as they arrive (core.types: TextDelta, ReasoningDelta, ToolCallDelta): an
        iterator for a stream from stream(), an async iterator for one from astream(). Closing it closes
        the stream. A codec that reports no pieces hands the turn on whole, once it is complete."""
        return self._adeltas() if hasattr(self._events, "__anext__") else self._deltas()

    def _take(self) -> list[StreamDelta]:
        pieces, self._pieces = self._pieces, []
        return pieces

    def _deltas(self) -> Iterator[StreamDelta]:
        events = iter(self)
        try:
            for _ in events:
                yield from self._take()
            yield from self._take()
        finally:
            events.close()

    async def _adeltas(self) -> AsyncIterator[StreamDelta]:
        events = aiter(self)
        try:
            async for _ in events:
                for piece in self._take():
                    yield piece
            for piece in self._take():
                yield piece
        finally:
            await events.aclose()

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

class HTTPModel:
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
    replaces the network, `sleep=`/`asleep=` replace waiting, `clock=` replaces time.monotonic for
    `timeout` and `total_timeout` (a test's deadlines then pass when it says, not when the machine gets
    there; the sockets still wait real seconds, as many as the clock says are left), `seed=` fixes the jitter, and
    `on_attempt=` sees every Attempt as it happens. `codec=` takes any module with the codec verbs
    (`agentkit.providers.contract`). The deadlines hold for your own `client=`/`async_client=` too: their
    connection pools (and those a transport of yours wraps) are bounded at the socket like ours
    (`agentkit.http.deadlines.bound_client`), and an async transport of your own that is not a pool is
    cancelled at the deadline. (A sync transport of your own that holds no httpx pool keeps only its own
    timeouts.)
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
                 clock: Callable[[], float] = time.monotonic,
                 on_attempt: Callable[[Attempt], None] | None = None, codec: ModuleType | None = None,
                 continue_stored_responses: bool = False):
        _check_settings(max_retries, fallback_models, backoff, max_delay, max_retry_wait, timeout, total_timeout)
        # -- the format: the codec and the facts it states (defaults: providers.contract) --------------
        self.model, self.format = model, format
        self.codec = cast(ClientCodec, codec if codec is not None else get_codec(format))
        self.fallback_models = tuple(fallback_models)
        self.framing = fact(self.codec, "STREAM_FRAMING")
        if self.framing not in ("sse", "ndjson"):
            raise ValueError(f"codec {format!r}: STREAM_FRAMING must be 'sse' or 'ndjson', not {self.framing!r}")
        self._server_side_fallback = bool(fact(self.codec, "SERVER_SIDE_FALLBACK"))
        self.continuation_field = fact(self.codec, "CONTINUATION_FIELD")
        self.continue_stored = bool(continue_stored_responses) and self.continuation_field is not None

        # -- where, and with which key (agentkit.http.environment) ---------------------------------------
        default_url = self.codec.DEFAULT_BASE_URL.rstrip("/")
        self.base_url = environment.base_url(base_url, default_url)
        self.key_envs = tuple(self.codec.API_KEY_ENVS)
        self._api_key = environment.read_key(api_key, self.key_envs, provider=format, model=model)
        # A key is demanded only where the provider's own URL would refuse the call without one.
        if self._api_key is None and self.base_url == default_url and fact(self.codec, "KEY_REQUIRED"):
            names = " or ".join(self.key_envs) or "api_key"
            raise AuthenticationError(f"no API key: set {names}, or pass api_key=... (a custom base_url, "
                                      "e.g. a local server, needs none)", provider=format, model=model)
        self.headers = checked_headers(headers or {})
        self._secrets = (self._api_key, *url_secrets(self.base_url), *header_secrets(self.headers))
        protect_library_logs()

        # -- time and retries --------------------------------------------------------------------------
        # Infinity means no limit (a socket cannot wait float("inf") seconds).
        timeout = None if timeout == math.inf else timeout
        self.timeout = timeout if isinstance(timeout, httpx.Timeout) else httpx.Timeout(timeout)
        self.total_timeout = None if total_timeout == math.inf else total_timeout
        limits = (self.timeout.connect, self.timeout.read, self.timeout.write, self.timeout.pool)
        self._attempt_timeout = max((t for t in limits if t is not None), default=None)
        self.max_retries, self.backoff, self.max_delay = max_retries, float(backoff), float(max_delay)
        self.max_retry_wait = max_retry_wait
        self.extra_body = dict(extra_body or {})
        self.on_attempt, self._sleep, self._asleep, self._clock = on_attempt, sleep, asleep, clock
        self._rng = random.Random(seed)  # jitter only; seeded so tests and notebooks are repeatable
        self._call_numbers = itertools.count(1)
        self.last_attempts: list[Attempt] = []

        # -- the parts, each owning its state ------------------------------------------------------------
        self._clients = Clients(self.timeout, transport, client, async_client)
        self._errors = Classifier(format, self.codec, self._secrets, attempt_timeout=self._attempt_timeout,
                                  total_timeout=self.total_timeout)
        self._decoder = Decoder(self.codec, self._errors)
        self._sender = Sender(self._clients, self._errors, self._decoder, self.framing,
                              secret_forms(self._secrets))  # every shape the secrets take in text, found once
        self._stored = StoredConversations()  # the last stored responses, continued from when a call extends one

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
    def from_env(cls, default_format: str = "openai-chat", **kwargs: Any) -> HTTPModel:
        """The model the environment names (`agentkit.http.environment`):

          1. AGENTKIT_PROVIDER: a format name ("openai-chat", "anthropic", "gemini", ...; also "openai",
             "claude", "google");
          2. AGENTKIT_BASE_URL: `default_format` at that URL (Ollama, vLLM, llama.cpp, a proxy).

        A provider key alone switches nothing: a key left in your shell must never turn `make test` or a
        tutorial into a paid run. The model name is AGENTKIT_MODEL, else the codec's DEFAULT_MODEL; with
        AGENTKIT_BASE_URL it must be named (see `configured_model`). Other keyword arguments go to
        HTTPModel (fallback_models, timeout, seed, ...). Nothing named (or AGENTKIT_PROVIDER=sim): a
        ValueError saying what to set. The notebooks call `agentkit.lab.from_env(sim_url=...)`, which
        falls back to the simulator instead.
        """
        fmt = configured_format(default_format)
        if fmt is None:
            raise ValueError("no provider configured: set AGENTKIT_PROVIDER to a format name (with its API key), "
                             "or AGENTKIT_BASE_URL and AGENTKIT_MODEL for an OpenAI-compatible server")
        return cls(configured_model(fmt), fmt, **kwargs)

    # -- the public verbs ------------------------------------------------------------------------------

    def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec] = (),
                 options: ModelOptions | None = None) -> ModelTurn:
        """One model turn, with retries and fallbacks; streamed on the wire when options.stream."""
        state = self._new_call()
        request, turn = self._drive(state, self._sender.send, list(messages), list(tools), options or ModelOptions())
        self._remember(request, turn)
        return turn

    async def acomplete(self, messages: Sequence[Message], tools: Sequence[ToolSpec] = (),
                        options: ModelOptions | None = None) -> ModelTurn:
        """`complete` for asyncio."""
        state = self._new_call()
        request, turn = await self._adrive(state, self._sender.asend, list(messages), list(tools),
                                           options or ModelOptions())
        self._remember(request, turn)
        return turn

    def stream(self, messages: Sequence[Message], tools: Sequence[ToolSpec] = (),
               options: ModelOptions | None = None) -> TurnStream:
        """The raw events of one turn, as they arrive (see TurnStream).

        Retries and fallbacks apply until the first event arrives; after that a failure raises at once,
        because the caller has already seen part of the answer.
        """
        state = self._new_call()
        result = TurnStream(state.attempts)
        result._events = self._watch(result, state, list(messages), list(tools),
                                     replace(options or ModelOptions(), stream=True))
        return result

    def astream(self, messages: Sequence[Message], tools: Sequence[ToolSpec] = (),
                options: ModelOptions | None = None) -> TurnStream:
        """`stream` for asyncio: `async for event in model.astream(...)`."""
        state = self._new_call()
        result = TurnStream(state.attempts)
        result._events = self._awatch(result, state, list(messages), list(tools),
                                      replace(options or ModelOptions(), stream=True))
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

    def close(self) -> None:
        """Close the sync client made here (an injected client is the caller's to close)."""
        self._clients.close()

    async def aclose(self) -> None:
        """Close both clients made here."""
        await self._clients.aclose()

    def __enter__(self) -> HTTPModel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> HTTPModel:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- the driving loop: build, send, classify, retry, decode (sync and async alike; RetryState decides) --

    def _new_call(self) -> RetryState:
        plan = RetryPlan(self.models, self.max_retries, self.backoff, self.max_delay, self.max_retry_wait, self._rng)
        state = RetryState(plan, next(self._call_numbers), total_timeout=self.total_timeout,
                           stored=self._stored if self.continue_stored else None,
                           recorders=[found for who, found in RECORDERS.get() if who is self],
                           on_attempt=self.on_attempt, now=self._clock)
        self.last_attempts = state.attempts  # the most recent call's, for notebooks
        return state

    def _drive(self, state: RetryState, send: Callable[[AttemptRequest], T], messages: list[Message],
               tools: list[ToolSpec], options: ModelOptions) -> tuple[AttemptRequest, T]:
        """Attempt after attempt until one succeeds or the plan gives up: the request that succeeded, and
        what `send` made of it (`Sender.send`: a ModelTurn; `Sender.open`: the stream's events).
        `_adrive` is the same loop, awaited."""
        while True:
            request = self._build(state, messages, tools, options)             # build
            try:
                result = send(request)                                          # send, classify, decode
            except ProviderError as error:
                wait = state.failed(request, error)                             # retry, fall back, or raise
                if wait > 0:
                    self._sleep(wait)
            else:
                state.succeeded(request)
                return request, result

    async def _adrive(self, state: RetryState, send: Callable[[AttemptRequest], Awaitable[T]],
                      messages: list[Message], tools: list[ToolSpec],
                      options: ModelOptions) -> tuple[AttemptRequest, T]:
        while True:
            request = self._build(state, messages, tools, options)             # build
            try:
                result = await send(request)                                    # send, classify, decode
            except ProviderError as error:
                wait = state.failed(request, error)                             # retry, fall back, or raise
                if wait > 0:
                    await self._asleep(wait)
            else:
                state.succeeded(request)
                return request, result

    def _build(self, state: RetryState, messages: list[Message], tools: list[ToolSpec],
               options: ModelOptions) -> AttemptRequest:
        """The call's next attempt, to the plan's current model, on a clock of its own."""
        model = state.plan.model
        extras: dict[str, Any] = {}
        continued, sent = None, messages
        if state.stored is not None and self.continuation_field is not None:
            found = state.stored.continuation(model, messages)
            if found is not None:
                continued, sent = found
                extras[self.continuation_field] = continued
        if self._server_side_fallback:
            # The provider falls back server-side too (OpenRouter's `models`): send it the rest, in order.
            remaining = list(self.models[self.models.index(model):])
            if len(remaining) > 1:
                extras["models"] = remaining
        extras.update(self.extra_body)
        wire = self.codec.build_request(model, sent, tools, options, **extras)
        auth = self.codec.auth_headers(self._api_key) if self._api_key else {}
        stream = bool(options.stream or wire.stream)
        framing = {"Accept": "text/event-stream", "Cache-Control": "no-store"} \
            if stream and self.framing == "sse" else {}  # what httpx-sse's connect_sse would send
        headers = {**wire.headers, **framing, **auth, **self.headers}
        url = join_url(self.base_url, wire.path)
        parsed = urlsplit(url)
        path = redact(parsed.path + (f"?{parsed.query}" if parsed.query else ""), self._secrets)
        clock = AttemptClock(self._attempt_timeout, state.ends, now=self._clock)
        return AttemptRequest(model, url, path, headers, wire.body, stream, clock, state.history(), state.wait,
                              time.perf_counter(), tuple(messages) if self.continue_stored else (), continued)

    # -- a watched stream: retried until its first event, then handed to the caller event by event ------

    def _watch(self, result: TurnStream, state: RetryState, messages: list[Message], tools: list[ToolSpec],
               options: ModelOptions) -> Iterator[SSEvent]:
        request, events = self._drive(state, self._sender.open, messages, tools, options)
        stream = self._decoder.stream(request)
        whole = False  # the codec reports no pieces: the turn goes to deltas() whole at the end
        try:
            with closing(events):
                for event in events:
                    pieces = stream.feed(event)
                    if pieces is None:
                        whole = True
                    else:
                        result._pieces += pieces
                    yield event
            result.turn = stream.turn()
            if whole:
                result._pieces += deltas_of(result.turn)
            self._remember(request, result.turn)
        except ProviderError as error:  # after the first event: no retry, the caller saw part of it
            state.spoilt(error)
            raise

    async def _awatch(self, result: TurnStream, state: RetryState, messages: list[Message],
                      tools: list[ToolSpec], options: ModelOptions) -> AsyncIterator[SSEvent]:
        request, events = await self._adrive(state, self._sender.aopen, messages, tools, options)
        stream = self._decoder.stream(request)
        whole = False
        try:
            async with aclosing(events):
                async for event in events:
                    pieces = stream.feed(event)
                    if pieces is None:
                        whole = True
                    else:
                        result._pieces += pieces
                    yield event
            result.turn = stream.turn()
            if whole:
                result._pieces += deltas_of(result.turn)
            self._remember(request, result.turn)
        except ProviderError as error:
            state.spoilt(error)
            raise

    # -- stored conversations (continue_stored_responses) ----------------------------------------------

    def _remember(self, request: AttemptRequest, turn: ModelTurn) -> None:
        """Keep the conversation this turn completed when the API stored the response (bounded)."""
        if not self.continue_stored:
            return
        response_id = self.codec.stored_response_id(request.body, turn)
        if response_id is not None:
            self._stored.remember(response_id, request.model, request.messages + (turn.as_message(),))


def _check_settings(max_retries: Any, fallback_models: Any, backoff: Any, max_delay: Any, max_retry_wait: Any,
                    timeout: Any, total_timeout: Any) -> None:
    """HTTPModel's numbers, checked when it is built: each complaint names the setting."""
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
