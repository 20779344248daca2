"""Deadlines for HTTP calls: one attempt's bound and the whole call's budget, enforced at every socket read.

    clock = AttemptClock(timeout=1.0, call_ends=time.monotonic() + 5.0)
    with clock.reading():                    # every socket read inside waits at most what is left
        response = client.send(request)
    clock.restart()                          # a stream brought an event: its bound starts again
    clock.expired()                          # None, "timeout" or "total_timeout": which bound has passed

Why a deadline and not httpx's timeouts: those bound each read (and each connect, write and pool wait) on
its own. A server that trickles one byte every 0.3 s, in the status line, the headers or the body, or an
SSE stream of endless `: keep-alive` comments (OpenRouter sends them while a model is queued), never lets
a 1 s read timeout fire, and the call hangs for ever. Here the deadline is a point in time, and every
connect, read and write on the socket is given only the time left until it. A ContextVar carries the
deadline from `reading()` down to the socket, so threads and asyncio tasks each see their own.

`bounded_transport()` and `bounded_async_transport()` are httpx's default transports with their sockets
wrapped this way. httpx has no public hook for a network backend yet (encode/httpx#3180), so they replace
one private attribute of the transport's connection pool; `is_bounded(transport)` says whether that
worked, and a test checks it, so an httpx upgrade that moves the attribute cannot go unnoticed.

A client you make yourself gets the same treatment: `bound_client(client)` wraps every transport it
holds that is httpx's connection pool (its own, and those it mounts for proxies set in the environment).
The wrapped sockets act only inside `reading()`: the client behaves as before for every other use.
A transport of your own that wraps httpx's (a cache, a retry layer) has the pools it holds wrapped too.
It returns False when some transport is not itself a pool: for those an async call is bounded by
asyncio as well (`HTTPModel` cancels the read at the deadline).

Left out on purpose: a sync transport of your own that holds no httpx pool: nothing can interrupt its
blocking reads from outside, so it has only the timeouts it sets itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import httpcore
import httpx

__all__ = ["AttemptClock", "bound_client", "bounded_async_transport", "bounded_transport", "is_bounded"]

#: A bound counts as passed this close to its end: sockets and event loops may wake a hair early.
SLACK = 0.005

_DEADLINE: ContextVar[float | None] = ContextVar("agentkit_http_deadline", default=None)


class AttemptClock:
    """The time limits of one attempt: `timeout` seconds from `since`, and never past `call_ends`.

    `since` is the attempt's start; a stream moves it on (`restart()`) each time it asks for the next
    event, so for a stream `timeout` is the longest silence allowed. `call_ends` is the call's budget
    (seconds on `now`, time.monotonic by default), shared by all its attempts. None switches either bound
    off. A test hands in its own `now` so that no deadline depends on how fast the machine is; the sockets
    are given the same seconds left, on the real clock (`reading()`).
    """

    def __init__(self, timeout: float | None, call_ends: float | None = None,
                 now: Callable[[], float] = time.monotonic):
        self.timeout, self.call_ends, self.now = timeout, call_ends, now
        self.since = now()

    def deadline(self) -> float | None:
        ends = [t for t in (self.call_ends, None if self.timeout is None else self.since + self.timeout)
                if t is not None]
        return min(ends) if ends else None

    def restart(self) -> None:
        self.since = self.now()

    def left(self) -> float | None:
        """Seconds until the deadline (never below 0), or None when there is none."""
        deadline = self.deadline()
        return None if deadline is None else max(0.0, deadline - self.now())

    def expired(self) -> str | None:
        """Which bound has passed: "total_timeout" (the call's budget), "timeout" (this attempt's), or None."""
        now = self.now() + SLACK
        if self.call_ends is not None and now >= self.call_ends:
            return "total_timeout"
        if self.timeout is not None and now >= self.since + self.timeout:
            return "timeout"
        return None

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Socket operations inside the block (this thread or task) end by the deadline."""
        left = self.left()  # the sockets read the real clock: hand them the seconds left on ours
        token = _DEADLINE.set(None if left is None else time.monotonic() + left)
        try:
            yield
        finally:
            _DEADLINE.reset(token)


def _bounded(timeout: float | None, expired: type[Exception]) -> float | None:
    """`timeout` shortened to what is left before the current deadline; `expired` when nothing is left."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise expired("the deadline has passed")
    return left if timeout is None else min(timeout, left)


# -- sync: a network backend whose streams honour the deadline -------------------------------------------

class _Stream(httpcore.NetworkStream):
    def __init__(self, stream: httpcore.NetworkStream):
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _bounded(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _bounded(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        return _Stream(self._stream.start_tls(ssl_context, server_hostname,
                                              _bounded(timeout, httpcore.ConnectTimeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    def __init__(self, backend: httpcore.NetworkBackend):
        self._backend = backend

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Any = None) -> httpcore.NetworkStream:
        return _Stream(self._backend.connect_tcp(host, port, _bounded(timeout, httpcore.ConnectTimeout),
                                                 local_address, socket_options))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Any = None) -> httpcore.NetworkStream:
        return _Stream(self._backend.connect_unix_socket(path, _bounded(timeout, httpcore.ConnectTimeout),
                                                         socket_options))

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


# -- async: the same, awaited ----------------------------------------------------------------------------

class _AsyncStream(httpcore.AsyncNetworkStream):
    def __init__(self, stream: httpcore.AsyncNetworkStream):
        self._stream = stream

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return await self._stream.read(max_bytes, _bounded(timeout, httpcore.ReadTimeout))

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._stream.write(buffer, _bounded(timeout, httpcore.WriteTimeout))

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        return _AsyncStream(await self._stream.start_tls(ssl_context, server_hostname,
                                                         _bounded(timeout, httpcore.ConnectTimeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _AsyncBackend(httpcore.AsyncNetworkBackend):
    def __init__(self, backend: httpcore.AsyncNetworkBackend):
        self._backend = backend

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None, socket_options: Any = None
                          ) -> httpcore.AsyncNetworkStream:
        return _AsyncStream(await self._backend.connect_tcp(
            host, port, _bounded(timeout, httpcore.ConnectTimeout), local_address, socket_options))

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Any = None) -> httpcore.AsyncNetworkStream:
        return _AsyncStream(await self._backend.connect_unix_socket(
            path, _bounded(timeout, httpcore.ConnectTimeout), socket_options))

    async def sleep(self, seconds: float) -> None:
        await self._backend.sleep(seconds)


# -- the transports --------------------------------------------------------------------------------------

def bounded_transport(**kwargs: Any) -> httpx.HTTPTransport:
    """httpx.HTTPTransport(**kwargs) whose sockets end every operation by the current deadline."""
    transport = httpx.HTTPTransport(**kwargs)
    _wrap_backend(transport, _Backend)
    return transport


def bounded_async_transport(**kwargs: Any) -> httpx.AsyncHTTPTransport:
    """httpx.AsyncHTTPTransport(**kwargs) whose sockets end every operation by the current deadline."""
    transport = httpx.AsyncHTTPTransport(**kwargs)
    _wrap_backend(transport, _AsyncBackend)
    return transport


def is_bounded(transport: Any) -> bool:
    """Does this transport's pool enforce deadlines (see the module docstring)?"""
    backend = getattr(getattr(transport, "_pool", None), "_network_backend", None)
    return isinstance(backend, (_Backend, _AsyncBackend))


def bound_client(client: httpx.Client | httpx.AsyncClient) -> bool:
    """Wrap every connection pool `client` holds so its sockets honour the deadline (see the module
    docstring); True when every transport it can use is bounded. Calling it again changes nothing."""
    wrapper = _AsyncBackend if isinstance(client, httpx.AsyncClient) else _Backend
    transports = [getattr(client, "_transport", None), *getattr(client, "_mounts", {}).values()]
    bounded = True
    for transport in transports:
        if transport is None:  # a mount that says "no proxy for these hosts": the client's own transport
            continue
        for inner in _held(transport):  # a transport of yours that wraps httpx's (a cache, a retry layer)
            _wrap_backend(inner, wrapper)
        _wrap_backend(transport, wrapper)
        bounded = bounded and is_bounded(transport)  # a wrapper may wait on its own: not bounded as a whole
    return bounded


def _held(transport: Any, depth: int = 3) -> list[Any]:
    """The transports a transport holds in its attributes, a few levels down (not itself)."""
    if depth == 0:
        return []
    found = []
    for value in getattr(transport, "__dict__", {}).values():
        if isinstance(value, (httpx.BaseTransport, httpx.AsyncBaseTransport)) and value is not transport:
            found += [value, *_held(value, depth - 1)]
    return found


def _wrap_backend(transport: Any, wrapper: type) -> None:
    pool = getattr(transport, "_pool", None)
    if isinstance(pool, (httpcore.ConnectionPool, httpcore.AsyncConnectionPool)) \
            and hasattr(pool, "_network_backend") \
            and not isinstance(pool._network_backend, (_Backend, _AsyncBackend)):  # once, never twice
        pool._network_backend = wrapper(pool._network_backend)
