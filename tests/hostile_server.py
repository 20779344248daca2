"""A deliberately slow HTTP server on 127.0.0.1 for deadline tests and benchmarks/deadlines.py.

    with HostileServer("headers") as server:       # status line at once, then one header byte every 0.3 s
        HTTPModel("m", base_url=server.url, api_key="k", timeout=1.0).complete(messages)

Every mode keeps each single read short (one byte, or one SSE comment, every `interval` seconds), which
is exactly what per-read timeouts cannot catch:

    status     the whole response, one byte at a time from the status line on
    headers    the status line at once, then the headers one byte at a time
    body       status and headers at once (Content-Length), then the JSON body one byte at a time
    chunked    status and headers at once (Transfer-Encoding: chunked), then one 1-byte chunk at a time
    keepalive  an SSE stream that sends `: keep-alive` comments for ever and never an event
    sse-trickle an SSE stream whose first event arrives one byte at a time
    event-then-keepalive  one SSE event at once, then `: keep-alive` comments for ever
    ndjson-blanks  an NDJSON stream that sends empty lines for ever and never a JSON line

Written with raw sockets on purpose: no HTTP server library would misbehave this way. Each connection
ends when the client hangs up, the server is closed, or after `lifetime` seconds.
"""

from __future__ import annotations

import json
import socket
import socketserver
import threading
import time

MODES = ("status", "headers", "body", "chunked", "keepalive", "sse-trickle", "event-then-keepalive",
         "ndjson-blanks")

#: A complete, valid openai-chat answer: were a slow body ever read to the end, the call would succeed.
ANSWER = json.dumps({
    "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
    "choices": [{"index": 0, "finish_reason": "stop",
                 "message": {"role": "assistant", "content": "a slow but complete answer " * 20}}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}).encode()
EVENT = b'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,' \
        b'"delta":{"role":"assistant","content":"hi"},"finish_reason":null}]}\n\n'


class HostileServer:
    def __init__(self, mode: str, interval: float = 0.3, lifetime: float = 60.0):
        if mode not in MODES:
            raise ValueError(f"mode {mode!r}: choose one of {MODES}")
        self.mode, self.interval, self.lifetime = mode, interval, lifetime
        self.requests = 0
        self._stop = threading.Event()
        outer = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                outer.requests += 1
                _read_request(self.request)
                try:
                    outer._answer(self.request)
                except OSError:  # the client hung up: that is how a deadline looks from here
                    pass

        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler, bind_and_activate=False)
        self._server.daemon_threads = True
        self._server.allow_reuse_address = True
        self._server.server_bind()
        self._server.server_activate()
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> HostileServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()

    # -- the answers ---------------------------------------------------------------------------------

    def _answer(self, sock: socket.socket) -> None:
        ends = time.monotonic() + self.lifetime
        mode = self.mode
        if mode == "status":
            head = _head({"content-type": "application/json", "content-length": str(len(ANSWER))})
            return self._trickle(sock, head + ANSWER, ends)
        if mode == "headers":
            sock.sendall(b"HTTP/1.1 200 OK\r\n")
            rest = _head({"content-type": "application/json", "content-length": str(len(ANSWER))})
            return self._trickle(sock, rest[len(b"HTTP/1.1 200 OK\r\n"):] + ANSWER, ends)
        if mode == "body":
            sock.sendall(_head({"content-type": "application/json", "content-length": str(len(ANSWER))}))
            return self._trickle(sock, ANSWER, ends)
        if mode == "chunked":
            sock.sendall(_head({"content-type": "application/json", "transfer-encoding": "chunked"}))
            for byte in ANSWER:
                if not self._wait(ends):
                    return
                sock.sendall(b"1\r\n" + bytes([byte]) + b"\r\n")
            sock.sendall(b"0\r\n\r\n")
            return None
        if mode == "ndjson-blanks":
            sock.sendall(_head({"content-type": "application/x-ndjson"}, chunked=True))
            while self._wait(ends):
                sock.sendall(_chunk(b"\n"))
            return None
        sock.sendall(_head({"content-type": "text/event-stream", "cache-control": "no-cache"}, chunked=True))
        if mode == "sse-trickle":
            return self._trickle(sock, EVENT, ends, chunked=True)
        if mode == "event-then-keepalive":
            sock.sendall(_chunk(EVENT))
        while self._wait(ends):  # keepalive, and what follows the one event
            sock.sendall(_chunk(b": keep-alive\n\n"))
        return None

    def _trickle(self, sock: socket.socket, data: bytes, ends: float, chunked: bool = False) -> None:
        for byte in data:
            if not self._wait(ends):
                return
            sock.sendall(_chunk(bytes([byte])) if chunked else bytes([byte]))

    def _wait(self, ends: float) -> bool:
        """Sleep one interval; False when the server is closing or the connection has lived long enough."""
        return not self._stop.wait(self.interval) and time.monotonic() < ends


def _head(headers: dict[str, str], chunked: bool = False) -> bytes:
    if chunked:
        headers = {**headers, "transfer-encoding": "chunked"}
    lines = ["HTTP/1.1 200 OK", *(f"{k}: {v}" for k, v in headers.items()), "", ""]
    return "\r\n".join(lines).encode()


def _chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def _read_request(sock: socket.socket) -> None:
    """Read one request (head and Content-Length body), so the client is never cut off mid-send."""
    data = b""
    sock.settimeout(10)
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            return
        body += chunk
