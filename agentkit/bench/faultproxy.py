"""A fault proxy: the simulator's transport faults, in front of a real server.

    from agentkit.bench.faultproxy import fault_proxy
    with fault_proxy("http://localhost:11434/v1", "openai-chat") as proxy:
        model = HTTPModel("qwen3:0.6b", "openai-chat", base_url=proxy.base_url,
                          headers={"x-sim-fault": "429, flaky=1"})      # the first attempt of each call: a 429

Every request goes to the upstream unchanged (same path below the base URL, query, headers and body) and
its answer comes back — unless the request asks for a fault, in the simulator's own words: the
`x-sim-fault` header (and `x-sim-latency-ms`), with `agentkit.sim.faults`' vocabulary. The proxy removes
those headers before forwarding. What each fault does is the simulator's (`agentkit/sim/faults.py`):

- 429, 500, 503, 529: answered by the proxy in the format's own error shape (its server half's `build_error`,
  the status the provider really sends for it), with retry-after for a 429; the upstream is not asked;
- drop: the connection is closed without an answer; truncate: half the upstream's body, then closed;
- cut: a stream's first half of events, then closed (a plain answer is truncated instead);
- instream[=N]: a stream's first half, then the format's own in-stream error event (`build_stream_error`);
- badjson: the upstream's answer with its JSON (one event's, in a stream) cut in half, status 200;
- slow, pace: delays before the answer and between a stream's events; flaky[=N]: only the first N
  attempts of the same request fail (counted by path, body and header, as in the simulator).

The broken answers are built with the simulator's own `Reply`, so the proxy breaks a connection exactly
as the simulator does (the tests compare the client's view of both, fault by fault).

Left out on purpose: passing a stream through as it arrives (the proxy reads the upstream's whole answer,
then writes it, broken as asked: a stream's timing is the proxy's, not the upstream's), TLS on the
proxy's own side (it binds 127.0.0.1 only), and anything but the model routes' POSTs being faulted
(GETs pass through).
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..providers.common import JSONLine, SSEvent, dumps
from ..sim import faults as F
from ..sim.wire import get_server
from ..sim.wire.common import ChatRequest

#: Headers that belong to one hop (RFC 9110 §7.6.1) or that httpx recomputes: not forwarded.
HOP_HEADERS = {"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade",
               "host", "content-length", "content-encoding", "accept-encoding"}
FAULT_HEADERS = ("x-sim-fault", "x-sim-latency-ms")
_SSE_EVENT_END = re.compile(rb"\r?\n\r?\n")


@dataclass
class FaultProxy:
    """A running proxy: `.base_url` (use it instead of the upstream's), `.reset()`, `.stop()`."""

    server: Any
    upstream: str
    format: str
    state: Any

    @property
    def base_url(self) -> str:
        return self.server.url + urlsplit(self.upstream).path.rstrip("/")

    def reset(self) -> None:
        """Forget the attempt counts behind `flaky` (the next attempt of each request fails again)."""
        self.state.attempts.clear()

    def stop(self) -> None:
        loop = self.state.loop
        if loop is not None and not loop.is_closed():  # the upstream client's connections live on that loop
            import asyncio

            try:
                asyncio.run_coroutine_threadsafe(self.state.client.aclose(), loop).result(timeout=5)
            except Exception:  # noqa: BLE001 - the server is stopping anyway; nothing is lost
                pass
        self.server.stop()

    def __enter__(self) -> FaultProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _State:
    def __init__(self, upstream: str, fmt: str, timeout: float):
        import httpx

        parts = urlsplit(upstream)
        self.origin = f"{parts.scheme}://{parts.netloc}"
        self.wire = get_server(fmt)  # the format's server half: its error shapes and fault wording
        self.attempts = F.AttemptCounter(10_000)
        self.client = httpx.AsyncClient(timeout=timeout)
        self.loop: Any = None  # the server's event loop, seen on the first request


def fault_proxy(upstream: str, fmt: str, *, port: int = 0, timeout: float = 120.0) -> FaultProxy:
    """Start a fault proxy on 127.0.0.1 in front of `upstream` (a format's base URL) for wire format `fmt`."""
    if urlsplit(upstream).scheme not in ("http", "https"):
        raise ValueError(f"the fault proxy needs an http(s) upstream URL, not {upstream!r}")
    from ..sim.server import serve

    app, state = create_app(upstream, fmt, timeout=timeout)
    return FaultProxy(serve(port=port, app=app), upstream, fmt, state)


def create_app(upstream: str, fmt: str, *, timeout: float = 120.0) -> tuple[Any, _State]:
    """The proxy as an ASGI app (starlette), and its state (attempt counts, the upstream client)."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.routing import Route

    from ..sim.app import Reply, _NoReply, sleep_unless_disconnected

    state = _State(upstream, fmt, timeout)

    async def index(request: Request) -> Reply:
        if request.url.path == "/" and request.method == "GET":  # serve() waits for this to answer
            body = {"fault_proxy": state.origin, "format": fmt, "faults": {k: v[1] for k, v in F.FAULTS.items()}}
            return Reply(200, {"content-type": "application/json"}, [dumps(body).encode()])
        return await forward(request)

    async def forward(request: Request) -> Any:
        state.loop = asyncio.get_running_loop()
        raw = await request.body()
        try:
            plan = F.plan_from_headers(request.headers)
        except ValueError as exc:
            return _error(state, 400, f"x-sim-fault: {exc}")
        if plan.latency_ms and await sleep_unless_disconnected(request.receive, plan.latency_ms / 1000):
            return _NoReply()  # the client gave up waiting
        attempt = 1
        if plan.flaky:
            fingerprint = "\0".join((request.url.path, raw.decode("utf-8", "replace"),
                                     request.headers.get("x-sim-fault", "")))
            attempt = state.attempts.next(fingerprint)
        failure = plan.failure(attempt) if request.method == "POST" else None
        if failure is not None and failure.status is not None:
            return _error(state, failure.status, "", failure=failure, model=_model_of(raw))
        if failure is not None and failure.transport == "drop":
            return Reply(0, {}, [], transport="drop")
        upstream = await state.client.request(
            request.method, state.origin + request.url.path, params=request.url.query or None, content=raw,
            headers=[(k, v) for k, v in request.headers.items()
                     if k.lower() not in HOP_HEADERS and k.lower() not in FAULT_HEADERS])
        headers = {k: v for k, v in upstream.headers.items() if k.lower() not in HOP_HEADERS}
        body = upstream.content
        kind = upstream.headers.get("content-type", "")
        stream = "event-stream" in kind or "ndjson" in kind
        if failure is None or upstream.status_code >= 400:
            return _whole(upstream.status_code, headers, body, stream, plan.pace_ms)
        if failure.instream is not None and not stream:  # no stream to break: the failure is the whole answer
            return _error(state, failure.instream, "", failure=failure, model=_model_of(raw))
        if not stream:
            if failure.transport == "badjson":
                return Reply(200, headers, [body[: len(body) // 2]])
            return Reply(upstream.status_code, headers, [body], transport=failure.transport)
        events = _split_events(body, sse="event-stream" in kind)
        if failure.instream is not None:
            sent = events[: len(events) // 2]
            status = F.answered_status(state.wire.SERVER, failure.instream)
            request_seen = ChatRequest(model=_model_of(raw), messages=())
            error = state.wire.build_stream_error(status, failure.message(state.wire.SERVER, request_seen.model,
                                                                           status), request_seen,
                                                   [_parsed(e) for e in sent])
            return Reply(200, headers, sent + [error.encode().encode()], stream=True, pace_ms=plan.pace_ms)
        if failure.transport == "badjson":
            return Reply(200, headers, _corrupt_middle(events), stream=True, pace_ms=plan.pace_ms)
        return Reply(200, headers, events, stream=True, pace_ms=plan.pace_ms, transport=failure.transport)

    methods = ["GET", "POST", "PUT", "DELETE", "PATCH"]
    app = Starlette(routes=[Route("/", index, methods=methods), Route("/{path:path}", forward, methods=methods)])
    return app, state


def _whole(status: int, headers: dict, body: bytes, stream: bool, pace_ms: int) -> Any:
    from ..sim.app import Reply

    if stream:
        kind = headers.get("content-type", "")
        return Reply(status, headers, _split_events(body, sse="event-stream" in kind), stream=True, pace_ms=pace_ms)
    return Reply(status, headers, [body])


def _error(state: _State, status: int, message: str, *, failure: F.Failure | None = None, model: str = "") -> Any:
    """An error answer in the format's own shape, with the status this provider really sends for it."""
    from ..sim.app import Reply

    server = state.wire.SERVER
    answered = F.answered_status(server, status)
    headers = {"content-type": "application/json"}
    extras: dict[str, Any] = {}
    if failure is not None:
        message = failure.message(server, model, answered)
        headers.update(failure.headers(server, answered))
        if answered == 429:
            extras["retry_after"] = failure.retry_after_ms / 1000
    body = state.wire.build_error(answered, message, None, **extras)
    return Reply(answered, headers, [dumps(body).encode()])


def _model_of(raw: bytes) -> str:
    import json

    try:
        body = json.loads(raw)
    except ValueError:
        return ""
    return str(body.get("model") or "") if isinstance(body, dict) else ""


def _split_events(body: bytes, *, sse: bool) -> list[bytes]:
    """A buffered stream cut into its events, each with its own terminator (SSE: blank line; NDJSON: newline)."""
    if not sse:
        return [line + b"\n" for line in body.split(b"\n") if line.strip()]
    events, start = [], 0
    for end in _SSE_EVENT_END.finditer(body):
        events.append(body[start:end.end()])
        start = end.end()
    if body[start:].strip():
        events.append(body[start:])
    return events


def _parsed(event: bytes) -> Any:
    """An event's bytes as the format's own event type (build_stream_error reads the events sent before it)."""
    text = event.decode("utf-8", "replace").strip()
    if not text.startswith(("data:", "event:", ":")):
        return JSONLine(text)
    name, data = None, []
    for line in text.splitlines():
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    return SSEvent("\n".join(data), event=name)


def _corrupt_middle(events: list[bytes]) -> list[bytes]:
    """The middle data event's JSON cut in half (its framing kept), as the simulator's badjson does."""
    at = [i for i, e in enumerate(events) if _parsed(e).data.startswith(("{", "["))]
    if not at:
        return events
    i = at[len(at) // 2]
    parsed = _parsed(events[i])
    half = type(parsed)(parsed.data[: len(parsed.data) // 2]) if isinstance(parsed, JSONLine) else \
        SSEvent(parsed.data[: len(parsed.data) // 2], event=parsed.event)
    return [*events[:i], half.encode().encode(), *events[i + 1:]]
