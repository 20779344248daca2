"""The simulator's HTTP side: one ASGI app that answers in every provider's wire format.

Routes mirror the real APIs, so a client changes only its base URL. They are not listed here: each
format's server half (`sim/wire/`) declares its own (`SERVER.routes`) and `create_app` serves every
registered format's, so a new format needs no line in this file. `GET /` (and `python -m agentkit.sim`)
shows the current list; for example:

    POST /v1/chat/completions                    openai-chat
    POST /v1beta/models/{model}:generateContent  gemini (the model is in the path; also under /v1/)
    POST /api/chat                               ollama (streams NDJSON unless "stream": false)
    GET  /v1/models                              shared by three formats: the client's own headers decide

Every POST walks the same recipe (`SimApp.handle`), one step per provider rule, reading each rule from
the format's server half (`wire.SERVER` and the verbs of `sim/wire/contract.py`):

    1. credentials   no key is needed; with require_key=True any key works, but none at all gets the
                     provider's 401 or 403 (none where the real API needs no key)
    2. headers       the provider's required headers (e.g. anthropic-version); a JSON body (else 415)
    3. body          read up to `max_body_bytes` (413 beyond); strict UTF-8 JSON (400 when broken)
    4. decode        wire.resolve_stored fills in what the server stored (`store.py`: Responses'
                     previous_response_id), then wire.parse_request -> ChatRequest; RequestInvalid -> its 4xx
    5. refusals      wire.model_refusal: a documented per-model refusal -> its 4xx (a retired model: 404)
    6. faults        asked for by model suffix or `x-sim-fault` header (see `faults.py`)
    7. decide        respond(request) -> ModelTurn, in a worker thread (a slow decision holds up no other
                     request), or the format's `SERVER.serve_turn` around it (server tools: Anthropic's tool
                     search runs between two passes of the model); UnknownModel -> 404; wire.reasoning_for
                     adds the reasoning state this API's model attaches (thinking blocks, signatures,
                     reasoning items), signed with the installation's key
                     (`sim.wire.common.signing_key`), checked in step 4; the prompt cache settles the
                     request's breakpoints into the usage (`prompt_cache.py`)
    8. encode        wire.build_response / build_stream (+ build_stream_error), framed as the client codec
                     says (`STREAM_FRAMING`); wire.stored_records says what to keep for later requests
                     (Responses' stored responses, Anthropic's message threads)

A "count_tokens" route (Anthropic's `POST /v1/messages/count_tokens`) walks steps 1-4 with the format's
`SERVER.count_request` and answers `{"input_tokens": N}`, counted as the simulated models count the
input of their usage.

Every error, including a genuine bug (500), is written in the provider's own error shape by its
server half's `build_error`, so SDKs raise their usual exception classes. Responses are deterministic: the
same request gives byte-identical bodies and the same request-id header (within one installation: the
signatures in reasoning state change with the signing key, `AGENTKIT_SIM_SIGNING_KEY` or the key kept in the
user's cache, and so does a replayed request's id).

Keys are never logged, echoed or stored; only their presence is checked.

Left out on purpose: real rate limiting (ask for 429 instead), authentication by key value, request
logging, the providers' non-chat endpoints (files, batches, embeddings, retrieving a stored response)
and HTTP/2.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import logging
import re
import itertools
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from types import ModuleType
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.routing import Route

from ..core.types import ModelTurn
from ..providers import FORMATS, get_codec
from ..providers.common import StreamEvent, dumps
from . import faults as F
from .behaviours import UnknownModel
from .prompt_cache import PromptCache
from .store import DEFAULT_MAX_ENTRIES, ResponseStore
from .tool_search import run_search
from .wire import get_server
from .wire.common import CASE_HEADER, ChatRequest, Finding, RequestInvalid, RuleLog, no_records, rule_log, signing_key
from .wire.contract import ServerFacts

log = logging.getLogger("agentkit.sim")

#: The ASGI scope extension (set by `server.py`'s protocol) that closes the client's connection.
CLOSE_EXTENSION = "agentkit.sim.close_connection"
DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024

Respond = Callable[[ChatRequest], ModelTurn]

JSON_TYPE = "application/json"
CONTENT_TYPES = {"sse": "text/event-stream; charset=utf-8", "ndjson": "application/x-ndjson"}


def _has_key(request: Request, server: ServerFacts) -> bool:
    """A key where this format carries one; the value itself is never looked at beyond being non-empty."""
    headers = request.headers
    for name in server.key_headers:
        value = headers.get(name, "")
        if name == "authorization":
            scheme, _, value = value.partition(" ")
            if scheme.lower() != "bearer":
                continue
        if value.strip():
            return True
    return bool(server.key_query_param and request.query_params.get(server.key_query_param, "").strip())


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
        # The stream stops as soon as its client has gone: before each event the loop gets a turn (so it
        # can see a connection that broke, and serve other requests), then the watcher says whether the
        # client is still there. Writing on regardless made asyncio log "socket.send() raised exception."
        # once per event for every client that had left.
        gone = asyncio.ensure_future(_disconnected(receive))
        try:
            for i, chunk in enumerate(chunks):
                if i and self.pace_ms:
                    await asyncio.wait({gone}, timeout=self.pace_ms / 1000)
                elif i:
                    await asyncio.sleep(0)
                if gone.done():
                    return  # the client went away (or the server is stopping): nobody to write to
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        finally:
            gone.cancel()
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

#: How many requests' rule logs the app keeps (the oldest go first).
RULE_LOGS_KEPT = 10_000
#: The fidelity ledger's ids of the HTTP layer's own refusals, the same in every format (the words: ours).
UNSUPPORTED_MEDIA_TYPE, BODY_TOO_LARGE, NESTED_TOO_DEEPLY = (
    "sim.unsupported_media_type", "sim.body_too_large", "sim.nested_too_deeply")


@functools.lru_cache(maxsize=None)
def not_json_rule(fmt: str) -> str:
    """The ledger's id for a body that is not JSON, in `fmt`'s words (each API words it its own way)."""
    from .fidelity import ledger

    return next(e.id for e in ledger().values() if e.id.endswith(".not_json") and fmt in e.applies_to)


def fault_rule(fmt: str, status: int, *, spend: bool = False) -> str:
    """The ledger's id for the provider error `fmt` answered with `status` (a 429, a 529, a spend limit...):
    "openai-chat.fault_429", "anthropic.spend_limit", "openrouter.provider_down" (its 502)."""
    from .fidelity import ledger

    entries = [e for e in ledger().values() if fmt in e.applies_to and e.status == status]
    wanted = ".spend_limit" if spend else f".fault_{status}"
    for entry in entries:
        if entry.id.endswith(wanted) or (not spend and status == 502 and entry.id.endswith(".provider_down")):
            return entry.id
    return f"{fmt}.fault_{status}"


@dataclass(frozen=True)
class RequestLog:
    """What one chat request was checked against, as a conformance report reads it.

        number      1, 2, ... in the order the server read the requests (`SimServer.rule_logs(after=)`)
        format      the wire format ("anthropic", ...)
        model       the model name as sent ("claude-opus-5-5-conform-parallel"; None when unreadable)
        scenario    the conformance scenario that name plays ("parallel"), or None
        findings    a Finding per rule check, in the order the checks ran: its ledger `rule`, `outcome`
                    ("passed", "refused", "degraded", or "answered" for an error the simulator played on
                    purpose), `words` (a refusal's message, a degradation's effect), `where` (the request's
                    path, "messages.3.content.0") and `message_index` (3)
        stream      whether it asked for a stream
        status      the status it was answered with (499: the client went away first)

    The HTTP layer's own refusals (a body that is not JSON, too large, of another media type) and the provider
    errors it was answered with (a 429, a 529, a spend limit: their ledger rules) are findings too. `records`
    flattens it, one dict per finding.
    """

    number: int
    format: str
    model: str | None
    findings: tuple[Finding, ...]
    stream: bool = False
    status: int = 200

    @property
    def scenario(self) -> str | None:
        from .conform import scenario_of

        return scenario_of(self.model)

    def records(self, request_index: int | None = None) -> list[dict]:
        """One dict per finding: format, model, scenario, request (`request_index`, else the number), status,
        stream, rule, outcome, message_index, where, words.

            log.records(2)  ->  [{"format": "anthropic", "request": 2, "rule": "anthropic.tool_results_first",
                                  "outcome": "refused", "message_index": 3, "words": "messages.3: ...", ...}]
        """
        head = {"format": self.format, "model": self.model, "scenario": self.scenario,
                "request": self.number if request_index is None else request_index, "status": self.status,
                "stream": self.stream}
        return [{**head, "rule": f.rule, "outcome": f.outcome, "message_index": f.message_index, "where": f.where,
                 "words": f.words} for f in self.findings]


class SimApp:
    """The state behind the routes: the decision function, fault switches and attempt counts."""

    def __init__(self, respond: Respond, *, max_body_bytes: int, faults: bool | str,
                 models: tuple[str, ...] = (), max_stored: int = DEFAULT_MAX_ENTRIES, require_key: bool = False,
                 count_input_tokens: Callable[[ChatRequest], int] | None = None,
                 known: Callable[[str], bool] | None = None,
                 planned_fault: Callable[[ChatRequest], str | None] | None = None,
                 unasked: Callable[[str, str], dict] | None = None,
                 planned_refusals: Callable[[str, str | None], tuple[str, ...]] | None = None):
        self.respond = respond
        # A model that fails on its own schedule (a fault spec for this request, or None), and the request
        # fields a model behaves as if asked for (a reasoning model reasons unasked): the simulated models'
        # own rules (`behaviours.planned_fault`, `behaviours.unasked_fields`), used by the conformance
        # scenarios. None: no model does either.
        self.planned_fault = planned_fault or (lambda chat: None)
        self.unasked = unasked or (lambda fmt, model: {})
        # The rules a model refuses on purpose whatever the client sends (a scenario's tool-less model): their
        # refusals are logged "answered", like the faults the simulator plays (`behaviours.planned_refusals`).
        self.planned_refusals = planned_refusals or (lambda fmt, model: ())
        # How a request's input tokens are counted (the token-counting routes), and which model names exist
        # (None: any): the simulated models' own rules, so a count equals the usage they report.
        self.count_input_tokens = count_input_tokens or (lambda chat: 0)
        self.known = known
        self.prompt_cache = PromptCache()  # what the prompt cache holds (cache_control), in this process
        self.require_key = require_key
        self.stored = ResponseStore(max_stored)  # what a stateful API (Responses) keeps between requests
        self.max_body_bytes = max_body_bytes
        self.faults_enabled = faults is not False
        self.default_plan = F.parse_spec(faults) if isinstance(faults, str) else F.FaultPlan()
        self.attempts = F.AttemptCounter(10_000)
        self.models = models
        self.servers: dict[str, ModuleType] = {fmt: get_server(fmt) for fmt in FORMATS}  # sim/wire/<format>
        self.clients: dict[str, ModuleType] = {fmt: get_codec(fmt) for fmt in FORMATS}  # providers/<format>
        # The model's work runs on these threads, owned by this app so that stopping the server also ends
        # them (a shared pool's idle workers outlived the server that started them); 40 at once, as many
        # as starlette's shared pool allowed.
        self.workers = ThreadPoolExecutor(max_workers=40, thread_name_prefix="agentkit-sim-model")
        # What each request was checked against, newest last (bounded): the conformance check reads it.
        self.rule_logs: deque[RequestLog] = deque(maxlen=RULE_LOGS_KEPT)
        self._request_numbers = itertools.count(1)

    async def decide(self, chat: ChatRequest, serve_turn: Callable | None = None) -> ModelTurn:
        """The model's answer, computed off the event loop: one long prompt cannot stall other requests.
        `serve_turn` is the format's own way of getting it, when the server does more than ask the model
        once (its server tools: `ServerFacts.serve_turn`)."""
        work = self.respond if serve_turn is None else functools.partial(serve_turn, self.respond, run_search)
        return await asyncio.get_running_loop().run_in_executor(self.workers, work, chat)

    def close(self) -> None:
        """End the model threads (a decision under way finishes first; none is waiting long: they are bounded)."""
        self.workers.shutdown(wait=True, cancel_futures=True)

    # -- building answers ---------------------------------------------------------------------------

    def error(self, fmt: str, status: int, message: str, *, rid: str, error_type: str | None = None,
              headers: dict | None = None, **details: Any) -> Reply:
        """An error answer in `fmt`'s own shape (its server half knows the shape; we choose the words).

        `details` (param=, code=, retry_after=) go to the format's build_error; left out, it
        picks its format's defaults (e.g. OpenAI's code "rate_limit_exceeded" for a 429).
        """
        extras = {k: v for k, v in details.items() if v is not None}
        body = self.servers[fmt].build_error(status, message, error_type, request_id=rid, **extras)
        return Reply(status, {"content-type": JSON_TYPE, **self.id_headers(fmt, rid), **(headers or {})},
                     [dumps(body).encode()])

    def id_headers(self, fmt: str, rid: str) -> dict[str, str]:
        name = self.servers[fmt].SERVER.request_id_header
        return {name: rid} if name else {}

    def success(self, fmt: str, turn: ModelTurn, request: ChatRequest, *, rid: str, stream: bool,
                sse: bool = True, failure: F.Failure | None = None, pace_ms: int = 0) -> Reply:
        wire = self.servers[fmt]
        server: ServerFacts = wire.SERVER
        transport = failure.transport if failure else None
        headers = {**self.id_headers(fmt, rid), **left_out_header(turn, request.model)}
        if not stream:
            payload = wire.build_response(turn, request)
            if server.response_id_header and isinstance(payload, dict) and payload.get("id"):
                headers[server.response_id_header] = str(payload["id"])
            body = dumps(payload).encode()
            if transport == "badjson":
                body, transport = body[: len(body) // 2], None
            return Reply(200, {"content-type": JSON_TYPE, **headers}, [body], transport=transport)
        events = list(wire.build_stream(turn, request))
        if failure is not None and failure.instream is not None:
            # Half of the answer, then the provider's own error event: the status line already said 200.
            # A one-event answer (Gemini writes a lone tool call as one event) sends nothing before the
            # error: sending its one event would deliver the whole answer, and the fault would not fail.
            sent = events[: len(events) // 2]
            status = F.answered_status(server, failure.instream)
            events = sent + [wire.build_stream_error(status, failure.message(server, request.model, status),
                                                     request, sent)]
        if transport == "badjson":  # one event in the middle carries half a JSON document
            events, transport = _corrupt_middle(events), None
        if not sse:  # e.g. Gemini without ?alt=sse: one JSON array, written one element at a time
            items = [e.data for e in events if e.comment is None and e.data is not None]
            chunks = [("[" if i == 0 else "\r\n,") + item for i, item in enumerate(items)]
            chunks = [c.encode() for c in chunks] + [b"]" if items else b"[]"]
            headers = {"content-type": JSON_TYPE, **headers}
        else:
            chunks = [event.encode().encode() for event in events]
            framing = self.clients[fmt].STREAM_FRAMING
            headers = {"content-type": CONTENT_TYPES[framing], "cache-control": "no-cache", **headers}
        return Reply(200, headers, chunks, stream=True, pace_ms=pace_ms, transport=transport)

    # -- the recipe ---------------------------------------------------------------------------------

    async def handle(self, request: Request, fmt: str, *, model: str | None = None,
                     stream: bool | None = None) -> Reply | _NoReply:
        """One POST, start to finish (the numbered steps of the module docstring)."""
        read = await self._read(request, fmt, model)
        if not isinstance(read, tuple):
            return read
        body, raw, rid = read
        try:
            plan = F.plan_from_headers(request.headers) if self.faults_enabled else F.FaultPlan()
        except ValueError as exc:
            return self.error(fmt, 400, f"x-sim-fault: {exc}", rid=rid)
        plan = self.default_plan.merged(plan)

        try:
            return await self._answer(request, fmt, body, raw, plan, rid, model=model, stream=stream)
        except Exception as exc:  # a genuine bug: still a 500 in the provider's shape
            log.exception("agentkit.sim: internal error on %s", request.url.path)
            return self.error(fmt, 500, f"The simulator failed: {type(exc).__name__}", rid=rid)

    async def _read(self, request: Request, fmt: str, model: str | None) -> tuple[dict, bytes, str] | Reply | _NoReply:
        """Steps 1-3: credentials, headers and the body; (body, raw bytes, request id), or the refusal."""
        path = request.url.path
        rid = _request_id(path, b"")
        server: ServerFacts = self.servers[fmt].SERVER

        # 1. credentials: presence only, when asked for and where the format wants a key at all
        if self.require_key and server.no_key is not None and not _has_key(request, server):
            status, message = server.no_key
            return self.error(fmt, status, message, rid=rid)

        # 2. headers
        for name, message in server.required_headers.items():
            if not request.headers.get(name):
                return self.error(fmt, 400, message, rid=rid)
        content_type = request.headers.get("content-type", "")
        if not _is_json_type(content_type):
            message = (f"Unsupported content type {content_type[:80]!r}: send a JSON body with "
                       "Content-Type: application/json")
            return self._refused_by_http(fmt, UNSUPPORTED_MEDIA_TYPE, 415, message, rid)

        # 3. body: size first (from the header when given, counted while reading otherwise), then JSON
        try:
            raw = await _read_body(request, self.max_body_bytes)
        except ClientDisconnect:
            return _NoReply()
        if raw is None:
            return self._refused_by_http(fmt, BODY_TOO_LARGE, 413,
                                         f"Request body too large: the limit is {self.max_body_bytes} bytes.", rid)
        rid = _request_id(path, raw)
        try:
            body = _strict_json(raw)
        except (ValueError, RecursionError) as exc:
            return self._refused_by_http(fmt, not_json_rule(fmt), 400, server.not_json.format(
                detail=_json_problem(exc)), rid)
        if not isinstance(body, dict):
            # Still the format's words: each API has its own for a body that is not an object.
            body_error = _decode(self.servers[fmt], body, model)
            message = body_error.message if body_error else "The request body must be a JSON object."
            rule = body_error.rule if body_error is not None and body_error.rule else not_json_rule(fmt)
            return self._refused_by_http(fmt, rule, 400, message, rid)
        return body, raw, rid

    def _refused_by_http(self, fmt: str, rule: str, status: int, message: str, rid: str) -> Reply:
        """A refusal of the HTTP layer (steps 2-3), logged like a request's own: its ledger rule and words."""
        self.rule_logs.append(RequestLog(next(self._request_numbers), fmt, None,
                                         (Finding(rule, "refused", message),), status=status))
        return self.error(fmt, status, message, rid=rid)

    async def count_tokens(self, request: Request, fmt: str, model: str | None = None) -> Reply | _NoReply:
        """A token-counting POST (a "count_tokens" route): steps 1-4, then `{"input_tokens": N}` counted as
        the simulator's models count a request's input for its usage, so a count equals the usage."""
        read = await self._read(request, fmt, model)
        if not isinstance(read, tuple):
            return read
        body, _, rid = read
        decode = self.servers[fmt].SERVER.count_request
        with rule_log() as log:
            try:
                chat = decode(body, model)
            except RequestInvalid as exc:
                log.refused(exc)
                chat = None
            if chat is not None:
                refusal = self.servers[fmt].model_refusal(chat)
                if refusal is not None and refusal.status == 404:  # a model the API does not know
                    log.refused(refusal)
        self.rule_logs.append(RequestLog(next(self._request_numbers), fmt, chat.model if chat else None,
                                         tuple(log.findings)))
        refusal = log.first_refusal()
        if refusal is not None:
            return self.error(fmt, refusal.status or 400, refusal.message, rid=rid, param=refusal.param,
                              code=refusal.code)
        assert chat is not None
        if self.known is not None and not self.known(chat.model):
            return self.error(fmt, self.servers[fmt].SERVER.unknown_model_status,
                              self.servers[fmt].SERVER.unknown_model.format(model=chat.model), rid=rid)
        body = {"input_tokens": self.count_input_tokens(chat)}
        return Reply(200, {"content-type": JSON_TYPE, **self.id_headers(fmt, rid)}, [dumps(body).encode()])

    async def _answer(self, request: Request, fmt: str, body: dict, raw: bytes, plan: F.FaultPlan, rid: str,
                      *, model: str | None, stream: bool | None) -> Reply | _NoReply:
        wire, client = self.servers[fmt], self.clients[fmt]
        server: ServerFacts = wire.SERVER

        # 4. decode, after filling in what the server stored for this request (and what its model acts as
        # if asked for); 5. documented refusals, on the model name without its fault suffix. Every rule
        # checked on the way is logged (RuleLog), with the answer's status once it is known.
        body = {**self.unasked(fmt, str(body.get("model", model) or "")), **body}
        number = next(self._request_numbers)
        body, chat, refusal, log = self._decode_and_check(fmt, body, model, rid)
        on_purpose = set(self.planned_refusals(fmt, chat.model if chat else body.get("model")))
        findings = [replace(f, outcome="answered") if f.outcome == "refused" and f.rule in on_purpose else f
                    for f in log.findings]
        # The HTTP layer's rules held, or the request would not have got this far (steps 2-3).
        checked = {f.rule for f in findings}
        findings[:0] = [Finding(rule, "passed") for rule in (UNSUPPORTED_MEDIA_TYPE, BODY_TOO_LARGE, not_json_rule(fmt))
                        if rule not in checked]
        asked_stream = bool(stream if stream is not None else body.get("stream"))

        def logged(reply: Any, status: int) -> Any:
            self.rule_logs.append(RequestLog(number, fmt, chat.model if chat else body.get("model"),
                                             tuple(findings), asked_stream, status))
            return reply

        if isinstance(refusal, Reply):
            return logged(refusal, refusal.status)
        if refusal is not None:
            return logged(self.error(fmt, refusal.status or 400, refusal.message, rid=rid, param=refusal.param,
                                     code=refusal.code), refusal.status or 400)
        assert chat is not None
        if log.degradations():
            chat = replace(chat, degradations=log.degradations())
        planned = self.planned_fault(chat) if self.faults_enabled else None
        if planned:  # the model's own schedule of failures, on top of what the request asked for
            plan = plan.merged(F.parse_spec(planned))
        if request.headers.get(CASE_HEADER):  # a benchmark's case, for an oracle model (no provider has it)
            chat = replace(chat, extras={**chat.extras, "case": request.headers[CASE_HEADER][:200]})

        # 6 + 7. faults, then the model decides; a format that takes a fallback list walks it here
        want_stream = stream if stream is not None else bool(chat.options.stream)
        candidates = [chat.model]
        if client.SERVER_SIDE_FALLBACK:
            candidates += [m for m in chat.fallback_models if m not in candidates]
        fault_header = request.headers.get("x-sim-fault", "")
        last_error: Reply | None = None
        last_status = 500
        for i, candidate in enumerate(candidates):
            try:
                name, own_plan = F.split_model(candidate) if self.faults_enabled else (candidate, F.FaultPlan())
            except ValueError as exc:
                last_error = self.error(fmt, 400, f"model {candidate[:60]!r}: {exc}", rid=rid, param="model")
                last_status = 400
                continue
            cplan = plan.merged(own_plan) if i == 0 else own_plan
            if cplan.latency_ms and await sleep_unless_disconnected(request.receive, cplan.latency_ms / 1000):
                return logged(_NoReply(), 499)  # the client gave up waiting (499: closed by the client)
            attempt = 1
            if cplan.flaky or (planned and i == 0):  # a planned spend limit counts too: sent again, it is refused
                attempt = self.attempts.next(_fingerprint(request.url.path, raw, fault_header, candidate))
            failure = cplan.failure(attempt)
            failed_status = failure.status if failure else None
            if failure is not None and failure.instream is not None and not want_stream:
                failed_status = failure.instream  # no stream to break: the failure is the whole answer
            if failed_status is not None:
                status = F.answered_status(server, failed_status)
                details = failure.details(server, status)
                waits = status == 429 and not details  # a spend limit has nothing to wait for
                message = failure.message(server, candidate, status)
                spend = failure.spend_answer(server, status) is not None
                # A fault is the simulator's doing ("answered"), except a final spend limit sent again:
                # retrying does not restore access, so the retry breaks the spend limit's rule.
                outcome = "refused" if spend and planned and attempt > 1 else "answered"
                findings.append(Finding(fault_rule(fmt, status, spend=spend), outcome, message))
                last_error = self.error(fmt, status, message, rid=rid,
                                        headers=failure.headers(server, status),
                                        retry_after=failure.retry_after_ms / 1000 if waits else None, **details)
                last_status = status
                continue
            try:
                # In a worker thread: the model's work (the reasoner's, or a learner's own `respond`) then
                # never holds up the event loop, so one long prompt cannot stall every other request.
                turn = await self.decide(replace(chat, model=name, fallback_models=()), server.serve_turn)
            except UnknownModel:
                last_error = self.error(fmt, server.unknown_model_status, server.unknown_model.format(model=candidate),
                                        rid=rid)
                last_status = server.unknown_model_status
                continue
            # The answer names the model as the client asked for it (fault suffix included).
            if turn.model in (None, name):
                turn = replace(turn, model=candidate)
            answered = replace(chat, model=candidate)
            if turn.reasoning is None:  # what this API's model hands back to be returned (None: nothing)
                turn = replace(turn, reasoning=wire.reasoning_for(turn, answered))
            if chat.prompt_cache is not None and failure is None:  # what the prompt cache read and wrote
                turn = replace(turn, usage=self.prompt_cache.settle(chat.prompt_cache, turn.usage))
            if wire.stored_records is not no_records and failure is None:  # an API that keeps what it answered
                self.stored.keep(wire.stored_records(body, wire.build_response(turn, answered)))
            # 8. encode (the query is read only by a format that frames its stream by it)
            sse = server.sse_query is None or request.query_params.get(server.sse_query[0]) == server.sse_query[1]
            return logged(self.success(fmt, turn, answered, rid=rid, stream=want_stream, sse=sse, failure=failure,
                                       pace_ms=cplan.pace_ms), 200)
        assert last_error is not None
        return logged(last_error, last_status)

    def _decode_and_check(self, fmt: str, body: dict, model: str | None, rid: str
                          ) -> tuple[dict, ChatRequest | None, RequestInvalid | Reply | None, RuleLog]:
        """Steps 4 and 5 under a rule log: the body with what the server stored filled in, the decoded
        request (None when it cannot be decoded), the refusal to answer (the first rule broken, as the
        real API names only the first), and the log (the caller keeps it, with the answer's status)."""
        wire, chat = self.servers[fmt], None
        with rule_log() as log:
            try:
                body = wire.resolve_stored(body, self.stored.recall)
                chat = wire.parse_request(body, model=model)
            except RequestInvalid as exc:
                log.refused(exc)
            except RecursionError:
                log.refused(RequestInvalid("The request is nested too deeply.", rule=NESTED_TOO_DEEPLY))
            if chat is not None and log.first_refusal() is None:
                try:
                    clean = F.split_model(chat.model)[0] if self.faults_enabled else chat.model
                except ValueError as exc:
                    return body, chat, self.error(fmt, 400, f"model {chat.model[:60]!r}: {exc}", rid=rid,
                                                  param="model"), log
                refusal = wire.model_refusal(replace(chat, model=clean))
                if refusal is not None:
                    log.refused(refusal)
        return body, chat, log.first_refusal(), log

    # -- model lists and formats --------------------------------------------------------------------

    def model_list(self, fmt: str) -> dict:
        """GET on a model list, in `fmt`'s shape."""
        return self.servers[fmt].build_model_list(list(self.models))

    def format_for(self, request: Request, candidates: list[str] | None = None) -> str:
        """Which format a request speaks, when its path alone does not say.

        Among `candidates` (default: every format, ranked by how much of the request's path their routes
        share), the first whose own client headers (or key query parameter) the request carries, else the
        first. GET /v1/models is shared by OpenAI, Anthropic and google-genai, so the headers decide there.
        """
        if candidates is None:
            path = request.url.path
            shared = {fmt: max(_common_prefix(path, r.path) for r in wire.SERVER.routes)
                      for fmt, wire in self.servers.items()}
            best = max(shared.values())
            candidates = [fmt for fmt in self.servers if shared[fmt] == best]
        for fmt in candidates:
            server = self.servers[fmt].SERVER
            if any(request.headers.get(h) for h in server.client_headers) or (
                    server.key_query_param and request.query_params.get(server.key_query_param)):
                return fmt
        return candidates[0]


def _decode(wire: ModuleType, body: Any, model: str | None) -> RequestInvalid | None:
    try:
        wire.parse_request(body, model=model)
    except RequestInvalid as exc:
        return exc
    except Exception:  # noqa: BLE001 - only its words are wanted here
        return None
    return None


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def _corrupt_middle(events: list[StreamEvent]) -> list[StreamEvent]:
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
    too_large = declared.isdigit() and (len(declared) > 15 or int(declared) > limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            too_large = True
        if not too_large:
            chunks.append(chunk)
    return None if too_large else b"".join(chunks)


def _strict_json(raw: bytes) -> Any:
    """JSON the way the real APIs take it: UTF-8 text (RFC 8259), no byte order mark, no lone surrogates.

    Python's json.loads(bytes) would also guess UTF-16 and UTF-32 and skip a BOM; the providers do not
    (Anthropic: "byte order mark (BOM) is not supported"), so neither does the simulator.
    """
    text = raw.decode("utf-8")  # UnicodeDecodeError is a ValueError: UTF-16 with a BOM fails here
    body = json.loads(text)  # a leading \ufeff fails here, as "Unexpected UTF-8 BOM"
    if _LONE_SURROGATE.search(raw):  # legal JSON text, but not Unicode: nothing can echo it back
        json.dumps(body, ensure_ascii=False).encode()
    return body


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
    if isinstance(exc, UnicodeDecodeError):
        return f"the body is not UTF-8 text (byte {exc.start})"
    if isinstance(exc, json.JSONDecodeError):
        if "BOM" in exc.msg:
            return "byte order mark (BOM) is not supported: line 1 column 1 (char 0)"
        return f"{exc.msg}: line {exc.lineno} column {exc.colno} (char {exc.pos})"
    return "the body is not UTF-8 JSON"


# ---------------------------------------------------------------------------------------------------
# Wiring
# ---------------------------------------------------------------------------------------------------

#: The response header that says why a simulated call lacks a required argument (the reasoner's limit).
LEFT_OUT_HEADER = "x-sim-left-out"


def left_out_header(turn: ModelTurn, model: str) -> dict[str, str]:
    """{"x-sim-left-out": "get_weather.city: the request names no city ...; or dictate it: city=..."} when
    the simulated model left a required argument out, else {}; the same sentences go to the log
    ("agentkit.sim", INFO: `python -m agentkit.sim` prints them). Several are joined by " | "; a header
    is Latin-1, so anything else in a name is written as a backslash escape."""
    left_out = (turn.raw or {}).get("left_out") if isinstance(turn.raw, dict) else None
    if not left_out:
        return {}
    said = " | ".join(left_out)
    log.info("%s left a required argument out: %s", model, said)
    return {LEFT_OUT_HEADER: said.encode("ascii", "backslashreplace").decode("ascii")}


def create_app(respond: Respond | None = None, *, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
               faults: bool | str = True, models: tuple[str, ...] | None = None,
               max_stored: int = DEFAULT_MAX_ENTRIES, require_key: bool = False) -> Starlette:
    """The simulator as a Starlette app, serving every registered format's routes.

        app = create_app()                          # the real models (agentkit.sim.behaviours.respond)
        app = create_app(my_respond)                # any ChatRequest -> ModelTurn function
        app = create_app(faults="slow=200")         # every request 200 ms slow, on top of asked-for faults
        app = create_app(faults=False)              # ignore x-sim-fault headers and model suffixes

    `models` is what the model-list routes list (default: agentkit.sim.behaviours.KNOWN_MODELS).
    `max_stored` bounds the table of stored responses (`store.py`): the oldest go first beyond it.
    No key is needed; `require_key=True` refuses a request without one as the real API does (each
    provider's own 401 or 403), for lessons about a forgotten key.
    """
    from . import behaviours as sim_models  # the decision logic, imported when an app is made

    own_models = respond is None
    respond = respond or sim_models.respond
    if models is None:
        models = tuple(sim_models.KNOWN_MODELS)
    sim = SimApp(respond, max_body_bytes=max_body_bytes, faults=faults, models=tuple(models),
                 max_stored=max_stored, require_key=require_key, count_input_tokens=sim_models.input_tokens,
                 known=sim_models.is_known if own_models else None,
                 planned_fault=sim_models.planned_fault if own_models else None,
                 unasked=sim_models.unasked_fields if own_models else None,
                 planned_refusals=sim_models.planned_refusals if own_models else None)
    signing_key()  # a key set wrong (AGENTKIT_SIM_SIGNING_KEY) stops the server now, not its first answer

    # Every (method, path) any format's server half declares, with the formats that declare it, in registry order.
    table: dict[tuple[str, str], list[tuple[str, Any]]] = {}
    for fmt, wire in sim.servers.items():
        for route in wire.SERVER.routes:
            table.setdefault((route.method, route.path), []).append((fmt, route))

    def endpoint(claims: list[tuple[str, Any]]) -> Callable:
        fmts = [fmt for fmt, _ in claims]
        stream_of = {fmt: route.stream for fmt, route in claims}

        async def chat(request: Request) -> Reply | _NoReply:
            fmt = fmts[0] if len(fmts) == 1 else sim.format_for(request, fmts)
            try:
                return await sim.handle(request, fmt, model=request.path_params.get("model"),
                                        stream=stream_of[fmt])
            except asyncio.CancelledError:
                # The server is stopping and cancels what still runs (a `slow` request, say). Close the
                # connection first: otherwise uvicorn answers the cancelled request with a stray 500.
                close = (request.scope.get("extensions") or {}).get(CLOSE_EXTENSION)
                if close is not None:
                    close()
                raise

        async def list_models(request: Request) -> Reply:
            fmt = fmts[0] if len(fmts) == 1 else sim.format_for(request, fmts)
            server = sim.servers[fmt].SERVER
            rid = _request_id(request.url.path, b"")
            if server.no_key is not None and not server.public_model_list and not _has_key(request, server):
                status, message = server.no_key
                return sim.error(fmt, status, message, rid=rid)
            body = dumps(sim.model_list(fmt)).encode()
            return Reply(200, {"content-type": JSON_TYPE, **sim.id_headers(fmt, rid)}, [body])

        async def count(request: Request) -> Reply | _NoReply:
            fmt = fmts[0] if len(fmts) == 1 else sim.format_for(request, fmts)
            return await sim.count_tokens(request, fmt, model=request.path_params.get("model"))

        return {"models": list_models, "count_tokens": count}.get(claims[0][1].action, chat)

    async def index(request: Request) -> Reply:
        routes = [f"{', '.join(sorted(r.methods - {'HEAD'}))} {r.path}" for r in app.routes]
        body = {"simulator": "agentkit.sim", "routes": routes, "formats": list(sim.servers),
                "faults": {k: v[1] for k, v in F.FAULTS.items()}, "models": list(sim.models)}
        return Reply(200, {"content-type": JSON_TYPE}, [dumps(body).encode()])

    async def not_routed(request: Request, exc: HTTPException) -> Reply:
        fmt = sim.format_for(request)
        what = "Invalid URL" if exc.status_code == 404 else "Method not allowed"
        return sim.error(fmt, exc.status_code, f"{what} ({request.method} {request.url.path[:200]})",
                         rid=_request_id(request.url.path, b""), headers=dict(exc.headers or {}))

    async def crashed(request: Request, exc: Exception) -> Reply:
        return sim.error(sim.format_for(request), 500, f"The simulator failed: {type(exc).__name__}",
                         rid=_request_id(request.url.path, b""))

    routes = [Route("/", index, methods=["GET"])]
    routes += [Route(path, endpoint(claims), methods=[method]) for (method, path), claims in table.items()]
    app = Starlette(routes=routes, exception_handlers={404: not_routed, 405: not_routed, Exception: crashed})
    app.state.sim = sim
    return app
