"""The simulator's HTTP side: one ASGI app that answers in every provider's wire format.

Routes mirror the real APIs, so a client changes only its base URL:

    POST /v1/chat/completions                         openai-chat
    POST /v1/responses                                openai-responses
    POST /v1/messages                                 anthropic   (needs an anthropic-version header)
    POST /v1beta/models/{model}:generateContent       gemini      (also under /v1/, google-genai's default)
    POST /v1beta/models/{model}:streamGenerateContent gemini      ?alt=sse -> SSE; without -> one JSON array
    POST /api/v1/chat/completions                     openrouter  (honours the `models` fallback list)
    GET  /v1/models  /api/v1/models  /v1beta/models   the model list, in the asking client's format
    GET  /                                            a short index of the above

Every POST walks the same recipe (`SimApp.handle`), one step per provider rule:

    1. credentials   any key works, but none at all gets the provider's 401 (Gemini: 403)
    2. headers       Anthropic wants `anthropic-version`; a body must be JSON (else 415)
    3. body          read up to `max_body_bytes` (413 beyond), parse JSON (400 when broken)
    4. decode        codec.parse_request -> ChatRequest; RequestInvalid -> its 4xx
    5. quirks        documented per-model refusals (`QUIRKS` below) -> 400
    6. faults        asked for by model suffix or `x-sim-fault` header (see `faults.py`)
    7. decide        respond(request) -> ModelTurn; UnknownModel -> 404
    8. encode        codec.build_response / build_stream, with the provider's headers

Every error, including a genuine bug (500), is written in the provider's own error shape by its
codec's `build_error`, so SDKs raise their usual exception classes. Responses are deterministic: the
same request gives byte-identical bodies and the same `x-request-id` / `request-id`.

Keys are never logged, echoed or stored; only their presence is checked.

Left out on purpose: real rate limiting (ask for 429 instead), authentication by key value, request
logging, the providers' non-chat endpoints (files, batches, embeddings) and HTTP/2.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.routing import Route

from ..providers import get_codec
from ..providers.common import ChatRequest, RequestInvalid, SSEvent, dumps
from ..types import ModelTurn
from . import faults as F

try:  # the decision logic lives in models.py; stubs injected for tests raise this same class
    from .models import UnknownModel
except ImportError:  # pragma: no cover - only while models.py does not exist yet
    class UnknownModel(LookupError):
        """respond() does not know this model name."""

log = logging.getLogger("agentkit.sim")

#: The ASGI scope extension (set by `server.py`'s protocol) that closes the client's connection.
CLOSE_EXTENSION = "agentkit.sim.close_connection"
DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024

Respond = Callable[[ChatRequest], ModelTurn]


# ---------------------------------------------------------------------------------------------------
# The providers' rules, as data
# ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Quirk:
    """A documented refusal of one model family: `when` names a condition in `QUIRK_CONDITIONS`."""

    fmt: str
    model_prefixes: tuple[str, ...]
    when: str
    status: int
    message: str
    param: str | None = None


QUIRKS: tuple[Quirk, ...] = (
    # OpenAI's migration guide: GPT-6 models call tools only through the Responses API (seed 000, C13).
    Quirk("openai-chat", ("gpt-6",), "tools", 400,
          "GPT-6 Astra, GPT-6.1 Sol, and GPT-6.1 Terra support Chat Completions, but tool calling requires "
          "Responses. Send this request to /v1/responses (model {model!r}), or remove `tools`.", "tools"),
    # Anthropic's tool docs: these models refuse forced tool use (seed 000, C14). The seed writes the
    # names with dots; the API ids (as in the anthropic SDK's model list) use hyphens: both are here.
    Quirk("anthropic", ("claude-opus-5.5", "claude-sonnet-5.5", "claude-fable-5.1", "claude-mythos-5.1",
                        "claude-opus-5-5", "claude-sonnet-5-5", "claude-fable-5-1", "claude-mythos-5-1"),
          "forced_tool_choice", 400,
          "tool_choice.type {choice!r} is not supported with {model}. Use tool_choice {{\"type\": \"auto\"}} "
          "with strict tool use, or structured outputs, instead.", "tool_choice"),
)

QUIRK_CONDITIONS: dict[str, Callable[[ChatRequest], bool]] = {
    "tools": lambda r: bool(r.tools),
    "forced_tool_choice": lambda r: r.options.tool_choice == "required" or isinstance(r.options.tool_choice, dict),
}

#: What a request without any credentials gets: (status, message). Gemini answers 403, not 401.
NO_CREDENTIALS: dict[str, tuple[int, str]] = {
    "openai-chat": (401, ("You didn't provide an API key. You need to provide your API key in an Authorization "
                          "header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY). On the simulator "
                          "any key works.")),
    "anthropic": (401, ("x-api-key header is required (on the simulator any key works; "
                        "Authorization: Bearer is accepted too)")),
    "gemini": (403, ("Method doesn't allow unregistered callers (callers without established identity). "
                     "Please use API Key or other form of API consumer identity to call this API. "
                     "(On the simulator any x-goog-api-key or ?key= works.)")),
    "openrouter": (401, "No auth credentials found (on the simulator any Bearer key works)"),
}
NO_CREDENTIALS["openai-responses"] = NO_CREDENTIALS["openai-chat"]

#: "The model does not exist" in each provider's words.
UNKNOWN_MODEL: dict[str, str] = {
    "openai-chat": "The model `{model}` does not exist or you do not have access to it.",
    "openai-responses": "The model `{model}` does not exist or you do not have access to it.",
    "openrouter": "{model} is not a valid model ID",
    "anthropic": "model: {model}",
    "gemini": "models/{model} is not found for API version v1beta, or is not supported for generateContent. "
              "Call ListModels to see the list of available models and their supported methods.",
}

#: The response header that carries the request id, per format (Gemini sends none).
REQUEST_ID_HEADER: dict[str, str] = {
    "openai-chat": "x-request-id", "openai-responses": "x-request-id", "openrouter": "x-request-id",
    "anthropic": "request-id",
}

JSON_TYPE = "application/json"
SSE_TYPE = "text/event-stream; charset=utf-8"


def _has_credentials(request: Request) -> bool:
    """Any of the ways the SDKs send a key; the value itself is never looked at beyond being non-empty."""
    headers = request.headers
    scheme, _, token = headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return True
    if headers.get("x-api-key", "").strip() or headers.get("x-goog-api-key", "").strip():
        return True
    return bool(request.query_params.get("key", "").strip())


def _is_json_type(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media in ("application/json", "") or media.endswith("+json")


# ---------------------------------------------------------------------------------------------------
# A finished answer, written straight to ASGI (so a fault can break it at any byte)
# ---------------------------------------------------------------------------------------------------

class Reply:
    """Status, headers and body chunks, written to the client, optionally broken on purpose.

    One chunk is a plain JSON answer (sent with Content-Length); several are a stream (chunked
    transfer, one event per chunk, `pace_ms` apart). `transport` breaks it: "drop" closes at once,
    "truncate" closes after half the bytes, "cut" after half the chunks.
    """

    __slots__ = ("chunks", "headers", "pace_ms", "status", "stream", "transport")

    def __init__(self, status: int, headers: dict[str, str], chunks: list[bytes], *, stream: bool = False,
                 pace_ms: int = 0, transport: str | None = None):
        self.status, self.headers, self.chunks, self.stream = status, headers, chunks, stream
        self.pace_ms, self.transport = pace_ms, transport

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if self.transport == "drop":
            await _close_connection(scope, receive)
            return
        headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in self.headers.items()]
        if not self.stream:
            body = self.body
            headers.append((b"content-length", str(len(body)).encode()))
            await send({"type": "http.response.start", "status": self.status, "headers": headers})
            if self.transport in ("truncate", "cut"):
                await send({"type": "http.response.body", "body": body[: len(body) // 2], "more_body": True})
                await _close_connection(scope, receive)
                return
            await send({"type": "http.response.body", "body": body})
            return
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        chunks = self.chunks
        if self.transport == "truncate":
            whole = self.body
            chunks = [whole[: len(whole) // 2]]
        elif self.transport == "cut":  # half of the events; a one-event stream breaks inside its event
            chunks = chunks[: len(chunks) // 2] if len(chunks) > 1 else [self.body[: len(self.body) // 2]]
        for i, chunk in enumerate(chunks):
            if self.pace_ms and i and await sleep_unless_disconnected(receive, self.pace_ms / 1000):
                return  # the client went away (or the server is stopping): nobody to write to
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        if self.transport in ("truncate", "cut"):
            await _close_connection(scope, receive)
            return
        await send({"type": "http.response.body", "body": b"", "more_body": False})


class _NoReply:
    """For a client that went away mid-request: there is nobody to answer."""

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        return None


async def _close_connection(scope: dict, receive: Callable) -> None:
    """Close the client's TCP connection now, without finishing the HTTP response.

    ASGI has no message for this, so `server.py` puts the transport's close() in the scope. Under
    another server the best we can do is raise, which makes the server abort the response.
    """
    close = (scope.get("extensions") or {}).get(CLOSE_EXTENSION)
    if close is None:
        raise ConnectionAbortedError("agentkit.sim: simulated broken connection")
    close()
    # Wait until the server has seen the connection go, so it writes nothing more on it.
    try:
        await asyncio.wait_for(_disconnected(receive), timeout=2)
    except asyncio.TimeoutError:  # pragma: no cover - the peer never noticed; the server cleans up
        pass


async def _disconnected(receive: Callable) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def sleep_unless_disconnected(receive: Callable, seconds: float) -> bool:
    """Sleep, but wake early when the client disconnects; True when it did.

    A `slow` request whose client gave up (a timeout) or whose server is stopping ends at once,
    instead of sleeping on and being cancelled mid-way.
    """
    watcher = asyncio.ensure_future(_disconnected(receive))
    try:
        done, _ = await asyncio.wait({watcher}, timeout=seconds)
    finally:
        watcher.cancel()
    return bool(done)


# ---------------------------------------------------------------------------------------------------
# The app
# ---------------------------------------------------------------------------------------------------

class SimApp:
    """The state behind the routes: the decision function, fault switches and attempt counts."""

    def __init__(self, respond: Respond, *, max_body_bytes: int, faults: bool | str,
                 models: tuple[str, ...] = ()):
        self.respond = respond
        self.max_body_bytes = max_body_bytes
        self.faults_enabled = faults is not False
        self.default_plan = F.parse_spec(faults) if isinstance(faults, str) else F.FaultPlan()
        self.attempts = F.AttemptCounter(10_000)
        self.models = models
        self._codecs: dict[str, Any] = {}

    def codec(self, fmt: str) -> Any:
        codec = self._codecs.get(fmt)
        if codec is None:
            codec = self._codecs[fmt] = get_codec(fmt)
        return codec

    # -- building answers ---------------------------------------------------------------------------

    def error(self, fmt: str, status: int, message: str, *, rid: str, error_type: str | None = None,
              headers: dict | None = None, **details: Any) -> Reply:
        """An error answer in `fmt`'s own shape (the codec knows the shape; we choose the words).

        `details` (param=, code=, retry_after=) go to the codec's build_error when given; left out,
        the codec picks its format's defaults (e.g. OpenAI's code "rate_limit_exceeded" for a 429).
        """
        extras = {k: v for k, v in details.items() if v is not None}
        try:
            codec = self.codec(fmt)
            try:
                body = codec.build_error(status, message, error_type, request_id=rid, **extras)
            except TypeError:  # a codec that takes only the three documented arguments
                body = codec.build_error(status, message, error_type)
        except Exception:  # the codec itself is broken: still answer, in the most common shape
            log.exception("agentkit.sim: build_error failed for %s", fmt)
            body = {"error": {"message": message, "type": error_type or "server_error", "code": status}}
        return Reply(status, {"content-type": JSON_TYPE, **self.id_headers(fmt, rid), **(headers or {})},
                     [dumps(body).encode()])

    @staticmethod
    def id_headers(fmt: str, rid: str) -> dict[str, str]:
        name = REQUEST_ID_HEADER.get(fmt)
        return {name: rid} if name else {}

    def success(self, fmt: str, turn: ModelTurn, request: ChatRequest, *, rid: str, stream: bool,
                sse: bool = True, failure: F.Failure | None = None, pace_ms: int = 0) -> Reply:
        codec = self.codec(fmt)
        transport = failure.transport if failure else None
        headers = self.id_headers(fmt, rid)
        if not stream:
            payload = codec.build_response(turn, request)
            if fmt == "openrouter" and isinstance(payload, dict) and payload.get("id"):
                headers["x-generation-id"] = str(payload["id"])
            body = dumps(payload).encode()
            if transport == "badjson":
                body, transport = body[: len(body) // 2], None
            return Reply(200, {"content-type": JSON_TYPE, **headers}, [body], transport=transport)
        events = list(codec.build_stream(turn, request))
        if transport == "badjson":  # one event in the middle carries half a JSON document
            events, transport = _corrupt_middle(events), None
        if sse:
            chunks = [event.encode().encode() for event in events]
            headers = {"content-type": SSE_TYPE, "cache-control": "no-cache", **headers}
        else:  # Gemini without ?alt=sse: one JSON array, written one element at a time
            items = [e.data for e in events if e.comment is None and e.data is not None]
            chunks = [("[" if i == 0 else "\r\n,") + item for i, item in enumerate(items)]
            chunks = [c.encode() for c in chunks] + [b"]" if items else b"[]"]
            headers = {"content-type": JSON_TYPE, **headers}
        return Reply(200, headers, chunks, stream=True, pace_ms=pace_ms, transport=transport)

    # -- the recipe ---------------------------------------------------------------------------------

    async def handle(self, request: Request, fmt: str, *, model: str | None = None,
                     stream: bool | None = None) -> Reply | _NoReply:
        """One POST, start to finish (the numbered steps of the module docstring)."""
        path = request.url.path
        rid = _request_id(path, b"")

        # 1. credentials: presence only
        if not _has_credentials(request):
            status, message = NO_CREDENTIALS[fmt]
            return self.error(fmt, status, message, rid=rid)

        # 2. headers
        if fmt == "anthropic" and not request.headers.get("anthropic-version"):
            return self.error(fmt, 400, "anthropic-version: header is required", rid=rid)
        content_type = request.headers.get("content-type", "")
        if not _is_json_type(content_type):
            return self.error(fmt, 415, f"Unsupported content type {content_type!r}: send a JSON body with "
                                        "Content-Type: application/json", rid=rid)

        # 3. body: size first (from the header when given, counted while reading otherwise), then JSON
        try:
            raw = await _read_body(request, self.max_body_bytes)
        except ClientDisconnect:
            return _NoReply()
        if raw is None:
            return self.error(fmt, 413, f"Request body too large: the limit is {self.max_body_bytes} bytes.",
                              rid=rid)
        rid = _request_id(path, raw)
        try:
            body = json.loads(raw)
            if _LONE_SURROGATE.search(raw):  # legal JSON text, but not Unicode: nothing can echo it back
                json.dumps(body, ensure_ascii=False).encode()
        except (ValueError, RecursionError) as exc:
            return self.error(fmt, 400, "We could not parse the JSON body of your request. "
                                        f"({_json_problem(exc)})", rid=rid)
        if not isinstance(body, dict):
            return self.error(fmt, 400, f"The request body must be a JSON object, not {type(body).__name__}.",
                              rid=rid)

        try:
            plan = F.plan_from_headers(request.headers) if self.faults_enabled else F.FaultPlan()
        except ValueError as exc:
            return self.error(fmt, 400, f"x-sim-fault: {exc}", rid=rid)
        plan = self.default_plan.merged(plan)

        try:
            return await self._answer(request, fmt, body, raw, plan, rid, model=model, stream=stream)
        except Exception as exc:  # a genuine bug: still a 500 in the provider's shape
            log.exception("agentkit.sim: internal error on %s", path)
            return self.error(fmt, 500, f"The simulator failed: {type(exc).__name__}", rid=rid)

    async def _answer(self, request: Request, fmt: str, body: dict, raw: bytes, plan: F.FaultPlan, rid: str,
                      *, model: str | None, stream: bool | None) -> Reply | _NoReply:
        codec = self.codec(fmt)

        # 4. decode
        try:
            chat = codec.parse_request(body, model=model) if model is not None else codec.parse_request(body)
        except RequestInvalid as exc:
            return self.error(fmt, exc.status or 400, exc.message, rid=rid, param=exc.param,
                              code=getattr(exc, "code", None))
        except RecursionError:
            return self.error(fmt, 400, "The request is nested too deeply.", rid=rid)

        # 5. quirks, on the model name without its fault suffix
        clean = F.split_model(chat.model)[0] if self.faults_enabled else chat.model
        quirk = _quirk_for(fmt, replace(chat, model=clean))
        if quirk is not None:
            return self.error(fmt, quirk.status, quirk.message, rid=rid, param=quirk.param)

        # 6 + 7. faults, then the model decides; OpenRouter walks its fallback list
        want_stream = stream if stream is not None else bool(chat.options.stream)
        candidates = [chat.model]
        if fmt == "openrouter":
            candidates += [m for m in chat.fallback_models if m not in candidates]
        fault_header = request.headers.get("x-sim-fault", "")
        last_error: Reply | None = None
        for i, candidate in enumerate(candidates):
            name, own_plan = F.split_model(candidate) if self.faults_enabled else (candidate, F.FaultPlan())
            cplan = plan.merged(own_plan) if i == 0 else own_plan
            if cplan.latency_ms and await sleep_unless_disconnected(request.receive, cplan.latency_ms / 1000):
                return _NoReply()
            attempt = 1
            if cplan.flaky:
                attempt = self.attempts.next(_fingerprint(request.url.path, raw, fault_header, candidate))
            failure = cplan.failure(attempt)
            if failure is not None and failure.status is not None:
                status = failure.status_for(fmt)
                last_error = self.error(fmt, status, failure.message(fmt, candidate), rid=rid,
                                        headers=failure.headers(fmt),
                                        retry_after=failure.retry_after_ms / 1000 if status == 429 else None)
                continue
            try:
                turn = self.respond(replace(chat, model=name, fallback_models=()))
            except UnknownModel:
                last_error = self.error(fmt, 404, UNKNOWN_MODEL[fmt].format(model=candidate), rid=rid)
                continue
            # The answer names the model as the client asked for it (fault suffix included).
            if turn.model in (None, name):
                turn = replace(turn, model=candidate)
            answered = replace(chat, model=candidate)
            # 8. encode
            return self.success(fmt, turn, answered, rid=rid, stream=want_stream,
                                sse=fmt != "gemini" or request.query_params.get("alt") == "sse",
                                failure=failure, pace_ms=cplan.pace_ms)
        assert last_error is not None
        return last_error

    # -- model lists --------------------------------------------------------------------------------

    def model_list(self, fmt: str) -> dict:
        """GET …/models in the asking client's format."""
        created = 1767225600  # 2026-01-01: fixed, so the listing is deterministic
        names = list(self.models)
        if fmt == "anthropic":
            data = [{"type": "model", "id": n, "display_name": n, "created_at": "2026-01-01T00:00:00Z",
                     "lifecycle": "active", "deprecated_at": None, "retires_at": None,
                     "max_input_tokens": 200000, "max_tokens": 64000} for n in names]
            return {"data": data, "has_more": False, "first_id": names[0] if names else None,
                    "last_id": names[-1] if names else None}
        if fmt == "gemini":
            methods = ["generateContent", "streamGenerateContent", "countTokens"]
            return {"models": [{"name": f"models/{n}", "displayName": n, "version": "sim",
                                "inputTokenLimit": 1048576, "outputTokenLimit": 65536,
                                "supportedGenerationMethods": methods} for n in names]}
        if fmt == "openrouter":
            return {"data": [{"id": n, "name": n, "created": created, "context_length": 131072,
                              "supported_parameters": ["tools", "tool_choice", "parallel_tool_calls"]}
                             for n in names]}
        return {"object": "list",
                "data": [{"id": n, "object": "model", "created": created, "owned_by": "agentkit-sim"}
                         for n in names]}


def _quirk_for(fmt: str, chat: ChatRequest) -> Quirk | None:
    for quirk in QUIRKS:
        if quirk.fmt == fmt and chat.model.startswith(quirk.model_prefixes) and QUIRK_CONDITIONS[quirk.when](chat):
            choice = chat.options.tool_choice
            wire_choice = "tool" if isinstance(choice, dict) else "any" if choice == "required" else str(choice)
            return replace(quirk, message=quirk.message.format(model=chat.model, choice=wire_choice))
    return None


def _corrupt_middle(events: list[SSEvent]) -> list[SSEvent]:
    data_at = [i for i, e in enumerate(events) if e.comment is None and e.data and e.data != "[DONE]"]
    if not data_at:
        return events
    i = data_at[len(data_at) // 2]
    events = list(events)
    events[i] = replace(events[i], data=events[i].data[: len(events[i].data) // 2])
    return events


async def _read_body(request: Request, limit: int) -> bytes | None:
    """The body, or None when it is over `limit` bytes.

    A declared Content-Length over the limit is refused without buffering; either way the rest of the
    body is read and thrown away, so the client finishes sending and can read the 413.
    """
    declared = request.headers.get("content-length", "")
    too_large = declared.isdigit() and int(declared) > limit
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            too_large = True
        if not too_large:
            chunks.append(chunk)
    return None if too_large else b"".join(chunks)


def _request_id(path: str, raw: bytes) -> str:
    return "req_" + hashlib.sha256(path.encode() + b"\0" + raw).hexdigest()[:24]


def _fingerprint(path: str, raw: bytes, fault_header: str, candidate: str) -> str:
    parts = b"\0".join((path.encode(), raw, fault_header.encode(), candidate.encode()))
    return hashlib.sha256(parts).hexdigest()


#: A \uD800-\uDFFF escape: only valid as half of a surrogate pair, which the check above verifies.
_LONE_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")


def _json_problem(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "the JSON is nested too deeply"
    if isinstance(exc, UnicodeEncodeError):
        return "a string holds a lone surrogate (\\ud800-\\udfff), which is not Unicode text"
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg}: line {exc.lineno} column {exc.colno} (char {exc.pos})"
    return "the body is not UTF-8 JSON"


def _format_for(request: Request) -> str:
    """Which format an unrouted request (or a model listing) speaks, judged from its path and headers.

    GET /v1/models is shared by OpenAI, Anthropic and google-genai (whose default version is v1), so
    the client's own headers decide there.
    """
    path, headers = request.url.path, request.headers
    if path.startswith("/api/"):
        return "openrouter"
    if (path.startswith("/v1beta") or ":" in path.rsplit("/", 1)[-1] or headers.get("x-goog-api-key")
            or request.query_params.get("key")):
        return "gemini"
    if path.startswith("/v1/messages") or headers.get("anthropic-version"):
        return "anthropic"
    return "openai-chat"


# ---------------------------------------------------------------------------------------------------
# Wiring
# ---------------------------------------------------------------------------------------------------

def create_app(respond: Respond | None = None, *, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
               faults: bool | str = True, models: tuple[str, ...] | None = None) -> Starlette:
    """The simulator as a Starlette app.

        app = create_app()                          # the real models (agentkit.sim.models.respond)
        app = create_app(my_respond)                # any ChatRequest -> ModelTurn function
        app = create_app(faults="slow=200")         # every request 200 ms slow, on top of asked-for faults
        app = create_app(faults=False)              # ignore x-sim-fault headers and model suffixes

    `models` is what GET /v1/models lists (default: agentkit.sim.models.KNOWN_MODELS).
    """
    if respond is None or models is None:
        from . import models as sim_models  # imported here: the decision logic is not needed to import sim

        respond = respond or sim_models.respond
        if models is None:
            models = tuple(getattr(sim_models, "KNOWN_MODELS", ()))
    sim = SimApp(respond, max_body_bytes=max_body_bytes, faults=faults, models=tuple(models))

    def post(fmt: str, *, stream: bool | None = None) -> Callable:
        async def endpoint(request: Request) -> Reply | _NoReply:
            return await sim.handle(request, fmt, model=request.path_params.get("model"), stream=stream)
        return endpoint

    async def list_models(request: Request) -> Reply:
        path = request.url.path
        fmt = _format_for(request)
        rid = _request_id(path, b"")
        if fmt != "openrouter" and not _has_credentials(request):  # OpenRouter's list is public
            status, message = NO_CREDENTIALS[fmt]
            return sim.error(fmt, status, message, rid=rid)
        body = dumps(sim.model_list(fmt)).encode()
        return Reply(200, {"content-type": JSON_TYPE, **sim.id_headers(fmt, rid)}, [body])

    async def index(request: Request) -> Reply:
        routes = [f"{', '.join(sorted(r.methods - {'HEAD'}))} {r.path}" for r in app.routes]
        body = {"simulator": "agentkit.sim", "routes": routes, "faults": {k: v[1] for k, v in F.FAULTS.items()},
                "models": list(sim.models)}
        return Reply(200, {"content-type": JSON_TYPE}, [dumps(body).encode()])

    async def not_routed(request: Request, exc: HTTPException) -> Reply:
        fmt = _format_for(request)
        what = "Invalid URL" if exc.status_code == 404 else "Method not allowed"
        return sim.error(fmt, exc.status_code, f"{what} ({request.method} {request.url.path})",
                         rid=_request_id(request.url.path, b""), headers=dict(exc.headers or {}))

    async def crashed(request: Request, exc: Exception) -> Reply:
        fmt = _format_for(request)
        return sim.error(fmt, 500, f"The simulator failed: {type(exc).__name__}",
                         rid=_request_id(request.url.path, b""))

    routes = [
        Route("/", index, methods=["GET"]),
        Route("/v1/chat/completions", post("openai-chat"), methods=["POST"]),
        Route("/v1/responses", post("openai-responses"), methods=["POST"]),
        Route("/v1/messages", post("anthropic"), methods=["POST"]),
        Route("/api/v1/chat/completions", post("openrouter"), methods=["POST"]),
        Route("/v1/models", list_models, methods=["GET"]),
        Route("/api/v1/models", list_models, methods=["GET"]),
        Route("/v1beta/models", list_models, methods=["GET"]),
    ]
    for version in ("v1beta", "v1"):  # google-genai 3.x defaults to v1; the REST docs use v1beta
        routes += [
            Route(f"/{version}/models/{{model}}:generateContent", post("gemini", stream=False), methods=["POST"]),
            Route(f"/{version}/models/{{model}}:streamGenerateContent", post("gemini", stream=True),
                  methods=["POST"]),
        ]
    app = Starlette(routes=routes, exception_handlers={404: not_routed, 405: not_routed, Exception: crashed})
    app.state.sim = sim
    return app
