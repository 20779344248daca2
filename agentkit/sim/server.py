"""Run the simulator on 127.0.0.1 in a background thread: `serve()` and the notebook-wide `shared()`.

    from agentkit import sim

    with sim.serve() as server:                      # an OS-chosen free port
        print(server.url)                            # http://127.0.0.1:53211
        client = OpenAI(base_url=server.sdk_base_url("openai-chat"), api_key="any")

    server = sim.serve(); ...; server.stop()         # the same without `with`
    server = sim.shared()                            # one per process, started on first use

Why a thread: a notebook kernel already runs an asyncio loop, and a server on that loop would deadlock
the moment a cell makes a *synchronous* HTTP call to it. uvicorn therefore gets its own thread and its
own loop; callers just see a URL.

Base URLs differ by client, and each codec knows its own. `base_url(fmt)` is what agentkit's codecs add
their paths to: the path of the provider's documented base URL (`codec.DEFAULT_BASE_URL`) on this server,
e.g. {url}/v1 for openai-chat, {url}/v1beta for gemini. `sdk_base_url(fmt)` is what the format's official
SDK wants (`sim.wire.<format>.SERVER.sdk_base_path`), e.g. {url} for Anthropic(base_url=…), which adds /v1 itself.
`python -m agentkit.sim` prints both for every registered format.

Left out on purpose: TLS, binding anything but 127.0.0.1, multiple workers, auto-reload.
"""

from __future__ import annotations

import atexit
import socket
import threading
import time
from typing import Any
from urllib.parse import urlsplit

from ..providers import get_codec
from .wire import get_server

_protocol_class: type | None = None


def base_path(fmt: str) -> str:
    """Where a format lives on the simulator: the path part of its documented base URL ("/v1", "")."""
    return urlsplit(get_codec(fmt).DEFAULT_BASE_URL).path.rstrip("/")


def base_url_on(server_url: str, fmt: str) -> str:
    """The base URL HTTPModel wants for `fmt` on a simulator at `server_url` (its routes mirror the real
    hosts, so the path part of the provider's base URL is kept):

        base_url_on("http://127.0.0.1:8123", "openrouter")  ->  "http://127.0.0.1:8123/api/v1"
    """
    return server_url.rstrip("/") + base_path(fmt)


def sdk_base_path(fmt: str) -> str:
    """Where the format's official SDK wants its base URL on the simulator."""
    return get_server(fmt).SERVER.sdk_base_path


def http_protocol() -> type:
    """uvicorn's h11 protocol, plus a way for the app to drop a connection (the `drop` fault).

    ASGI has no "close the socket without answering" message, so each connection puts its transport's
    close() into the request scope under `app.CLOSE_EXTENSION`.
    """
    global _protocol_class
    if _protocol_class is None:
        from uvicorn.protocols.http.h11_impl import H11Protocol

        from .app import CLOSE_EXTENSION

        class SimH11Protocol(H11Protocol):
            def connection_made(self, transport: Any) -> None:
                super().connection_made(transport)
                app, close = self.app, transport.close

                async def app_with_close(scope: dict, receive: Any, send: Any) -> None:
                    scope["extensions"] = {**(scope.get("extensions") or {}), CLOSE_EXTENSION: close}
                    await app(scope, receive, send)

                self.app = app_with_close

        _protocol_class = SimH11Protocol
    return _protocol_class


def _close_connections(server: Any) -> None:
    for connection in list(server.server_state.connections):
        transport = getattr(connection, "transport", None)
        if transport is not None:
            transport.close()


def _ask_to_exit(server: Any) -> None:
    server.should_exit = True
    # force_exit skips uvicorn's wait for open keep-alive connections, which would block for seconds.
    server.force_exit = True


def _close_then_exit(server: Any) -> None:
    _close_connections(server)
    _ask_to_exit(server)


class SimServer:
    """A running simulator: `.url`, `.base_url(fmt)`, `.sdk_base_url(fmt)`, `.reset()`, `.stop()`.

    Also a context manager; stopping is idempotent and takes about 0.2 s.
    """

    def __init__(self, server: Any, sock: socket.socket, thread: threading.Thread, app: Any):
        self._server, self._socket, self._thread, self.app = server, sock, thread, app
        self.host, self.port = sock.getsockname()[:2]
        self.url = f"http://{self.host}:{self.port}"

    def base_url(self, fmt: str) -> str:
        """The provider's documented base URL, pointed here (what agentkit's HTTPModel wants)."""
        return base_url_on(self.url, fmt)

    def sdk_base_url(self, fmt: str) -> str:
        """The base URL the official SDK of `fmt` wants (Anthropic and google-genai add their version)."""
        return self.url + sdk_base_path(fmt)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def rule_logs(self, after: int = 0) -> list:
        """What each chat request was checked against, for the requests numbered above `after`, oldest first
        (by number: a request is logged once answered, so two at once may be logged in the other order).

            before = server.rule_logs()[-1].number if server.rule_logs() else 0
            ... run one loop against the server ...
            for index, log in enumerate(server.rule_logs(after=before), 1):
                log.format, log.model, log.scenario, log.status        # "anthropic", "...-conform-parallel", ...
                for f in log.findings:
                    f.rule, f.outcome, f.message_index, f.words         # a ledger id, "passed"/"refused"/...
                log.records(index)                                      # the same, one dict per finding

        Each is an `app.RequestLog` (its docstring lists the fields). Source and kind of each rule are the
        ledger's (`agentkit.sim.fidelity.ledger()[rule]`). A rule of the format that no request touched was not
        exercised. For a scenario's planned failures to replay, call `reset()` before each run."""
        kept = list(self.app.state.sim.rule_logs)  # one C call: no request can be logged half-way through it
        return sorted((log for log in kept if log.number > after), key=lambda log: log.number)

    def reset(self) -> None:
        """Forget the attempt counts behind `flaky` faults and planned ones (a re-run cell, or the next run of a
        conformance scenario with the same requests, then fails again first)."""
        self.app.state.sim.attempts.clear()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving and join the thread. In-flight requests (e.g. a `slow` fault) are cut off."""
        server = self._server
        # Close every open connection first, then ask uvicorn to exit, both on the server's own loop
        # (transports are not thread-safe). In that order a client in the middle of a slow request sees
        # its connection go, and its handler ends cleanly, before uvicorn's forced exit cancels what is
        # left: the other order raced, and a cancelled handler made uvicorn answer a stray 500.
        listeners = getattr(server, "servers", None) or ()  # set once uvicorn has started
        try:
            if not listeners:
                raise RuntimeError("not started")
            listeners[0].get_loop().call_soon_threadsafe(_close_then_exit, server)
        except RuntimeError:  # not started, or the loop has already closed: nothing left to close
            _ask_to_exit(server)
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)
            sim = _simulator_state(self.app)
            if sim is not None:
                sim.close()

    def __enter__(self) -> SimServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<SimServer {self.url} {state}>"


def _simulator_state(app: Any) -> Any:
    """The SimApp behind `app`, also through ASGI middleware that keeps the app it wraps as `.app` (the
    convention Starlette's middleware follows); None for an app that is not the simulator's."""
    for _ in range(10):
        state = getattr(getattr(app, "state", None), "sim", None)
        if state is not None or not hasattr(app, "app"):
            return state
        app = app.app
    return None


def listening_socket(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    """A bound, listening TCP socket for uvicorn.

    proto=IPPROTO_TCP matters: asyncio turns Nagle's algorithm off (TCP_NODELAY) only on sockets that
    say they are TCP, and with Nagle on, every keep-alive response waits ~40 ms for a delayed ACK.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a fixed port can be reused right after stop
    try:
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def serve(host: str = "127.0.0.1", port: int = 0, *, log_level: str = "warning",
          startup_timeout: float = 10.0, app: Any = None, **app_options: Any) -> SimServer:
    """Start the simulator in a background thread and return once it answers.

    `port=0` lets the OS choose a free port. `app_options` go to `create_app` (respond=,
    max_body_bytes=, faults=, models=, require_key=). Only loopback hosts are allowed: the simulator needs
    no key and accepts any. `app=` serves another ASGI app the same way (agentkit.bench.faultproxy); it must
    answer GET / with 200.
    """
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise ValueError(f"the simulator binds loopback only (127.0.0.1), not {host!r}")
    import uvicorn

    from .app import create_app

    app = app if app is not None else create_app(**app_options)
    sock = listening_socket(host, port)
    config = uvicorn.Config(app, http=http_protocol(), loop="asyncio", lifespan="off", log_config=None,
                            log_level=log_level, access_log=False, server_header=False, proxy_headers=False,
                            timeout_keep_alive=30)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True,
                              name=f"agentkit-sim:{sock.getsockname()[1]}")
    thread.start()
    handle = SimServer(server, sock, thread, app)
    deadline = time.monotonic() + startup_timeout
    while not _answers(handle):
        if not thread.is_alive() or time.monotonic() > deadline:
            handle.stop()
            sock.close()
            raise RuntimeError(f"agentkit.sim did not start on {handle.url}")
        time.sleep(0.005)
    return handle


def _answers(handle: SimServer) -> bool:
    """True once GET / answers 200 (a raw socket, so no HTTP client is imported for this)."""
    if not handle._server.started:
        return False
    try:
        with socket.create_connection((handle.host, handle.port), timeout=1) as conn:
            conn.sendall(b"GET / HTTP/1.1\r\nHost: sim\r\nConnection: close\r\n\r\n")
            return conn.recv(16).startswith(b"HTTP/1.1 200")
    except OSError:
        return False


_shared: SimServer | None = None
_shared_lock = threading.Lock()


def shared(**app_options: Any) -> SimServer:
    """One simulator per process, started on first use and stopped at exit (for notebooks).

    Every notebook cell that calls `shared()` gets the same server, so re-running a setup cell does
    not start another one. Options apply only to the first call.
    """
    global _shared
    with _shared_lock:
        if _shared is None or not _shared.running:
            _shared = serve(**app_options)
            atexit.register(_shared.stop)
        return _shared


def shared_if_running() -> SimServer | None:
    """The server `shared()` started, if it still runs; None otherwise. Never starts one."""
    server = _shared
    return server if server is not None and server.running else None
