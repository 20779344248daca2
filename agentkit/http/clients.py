"""The httpx clients of one HTTPModel: made on first use, reused for keep-alive, bounded by the deadlines, closable.

    clients = Clients(httpx.Timeout(60.0))           # or Clients(timeout, transport=..., client=..., async_client=...)
    client = clients.sync()                          # ours (made here, once) or yours (client=...)
    client = clients.asynchronous()                  # the AsyncClient for the running event loop
    response = await clients.by_deadline(request.clock, client.send(...))   # cut at the attempt's deadline
    clients.close(); await clients.aclose()          # ours only: an injected client is yours to close

Clients you inject belong to you (never closed here); ours are made lazily, one per event loop for async.
Every pool, ours or yours, is bounded at the socket by `agentkit.http.deadlines.bound_client`; an async
transport that is no pool is cancelled at the deadline by `by_deadline` instead.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable
from typing import Any, cast

import httpx

from .deadlines import AttemptClock, bound_client, bounded_async_transport, bounded_transport

__all__ = ["Clients"]


class Clients:
    """Lazy, reused, closable httpx clients whose pools honour the attempt's deadline.

    `transport` (an httpx transport, sync or async) replaces the network in the clients made here;
    `client` / `async_client` are used as they are. `timeout` is what the clients made here are built with.
    """

    def __init__(self, timeout: httpx.Timeout, transport: httpx.BaseTransport | httpx.AsyncBaseTransport | None = None,
                 client: httpx.Client | None = None, async_client: httpx.AsyncClient | None = None):
        self.timeout, self.transport = timeout, transport
        self.client, self.async_client = client, async_client  # None until made (or after close())
        self.owns_client, self.owns_async_client = client is None, async_client is None
        self._async_loop: asyncio.AbstractEventLoop | None = None
        self._bounded_client: httpx.Client | None = None  # the clients bound_client() has seen
        self._bounded_async_client: httpx.AsyncClient | None = None
        self._async_at_socket = True  # does the async client's transport enforce deadlines itself?
        self._lock = threading.Lock()

    def sync(self) -> httpx.Client:
        with self._lock:
            if self.client is None:
                # One transport serves both kinds of client (httpx.MockTransport is both); an async-only one
                # fails in httpx here, as it would without agentkit.
                transport = self.transport if self.transport is not None else bounded_transport()
                self.client = httpx.Client(transport=cast(httpx.BaseTransport, transport), timeout=self.timeout)
            if self.client is not self._bounded_client:  # a client of yours: its pools honour our deadlines
                bound_client(self.client)
                self._bounded_client = self.client
            return self.client

    def asynchronous(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        with self._lock:
            # An AsyncClient's pooled connections belong to the event loop that opened them. Scripts that
            # call asyncio.run() twice get a new loop each time, so our own client is remade for it.
            if self.async_client is not None and self.owns_async_client and self._async_loop is not loop:
                self.async_client = None
            if self.async_client is None:
                transport = self.transport if self.transport is not None else bounded_async_transport()
                self.async_client = httpx.AsyncClient(transport=cast(httpx.AsyncBaseTransport, transport),
                                                      timeout=self.timeout)
                self._async_loop = loop
            if self.async_client is not self._bounded_async_client:
                # Pools (ours or yours) honour the deadline at the socket; any other transport is cancelled.
                self._async_at_socket = bound_client(self.async_client)
                self._bounded_async_client = self.async_client
            return self.async_client

    async def by_deadline(self, clock: AttemptClock, awaitable: Awaitable[Any]) -> Any:
        """`awaitable`, cancelled at the clock's deadline when the transport cannot enforce it itself."""
        left = None if self._async_at_socket else clock.left()
        if left is None:
            return await awaitable
        try:
            if hasattr(asyncio, "timeout"):  # 3.11+: cancelled in this task (a transport's own scopes stay whole)
                async with asyncio.timeout(left):
                    return await awaitable
            return await asyncio.wait_for(awaitable, left)
        except asyncio.TimeoutError:
            raise httpx.ReadTimeout("the deadline has passed") from None

    def close(self) -> None:
        """Close the sync client made here (an injected client is the caller's to close)."""
        if self.client is not None and self.owns_client:
            self.client.close()
            self.client = None

    async def aclose(self) -> None:
        """Close both clients made here."""
        self.close()
        if self.async_client is not None and self.owns_async_client:
            await self.async_client.aclose()
            self.async_client = None
