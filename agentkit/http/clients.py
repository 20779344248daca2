"""The httpx clients of HTTPModel: made on first use, reused for keep-alive, bounded by the deadlines, closable.

    client = self._sync_client()                     # ours (made here) or yours (client=...)
    response = await self._by_deadline(request, client.send(...))   # async: cut at the attempt's deadline

Clients you inject belong to you (never closed here); ours are made lazily, one per event loop for async.
Every pool, ours or yours, is bounded at the socket by `agentkit.http.deadlines.bound_client`; an async
transport that is no pool is cancelled at the deadline by `_by_deadline` instead.

`ClientsPart` is a part of HTTPModel (one of its base classes), kept in a file of its own so the recipe in
`agentkit.http` reads one step at a time. It reads these attributes of the model: `timeout` and the
client slots set in `HTTPModel.__init__` (`_transport`, `_client`, `_async_client`, ...).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

import httpx

from .deadlines import bound_client, bounded_async_transport, bounded_transport

if TYPE_CHECKING:
    from typing_extensions import Self

    from .call import AttemptRequest


class ClientsPart:
    """Lazy, reused, closable httpx clients whose pools honour the attempt's deadline (a base of HTTPModel)."""

    timeout: httpx.Timeout
    _transport: httpx.BaseTransport | httpx.AsyncBaseTransport | None
    _client: httpx.Client | None
    _async_client: httpx.AsyncClient | None
    _owns_client: bool
    _owns_async_client: bool
    _async_loop: asyncio.AbstractEventLoop | None
    _bounded_client: httpx.Client | None
    _bounded_async_client: httpx.AsyncClient | None
    _async_at_socket: bool
    _lock: threading.Lock

    def _sync_client(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                transport = self._transport if self._transport is not None else bounded_transport()
                self._client = httpx.Client(transport=transport, timeout=self.timeout)
            if self._client is not self._bounded_client:  # a client of yours: its pools honour our deadlines
                bound_client(self._client)
                self._bounded_client = self._client
            return self._client

    def _aclient(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        with self._lock:
            # An AsyncClient's pooled connections belong to the event loop that opened them. Scripts that
            # call asyncio.run() twice get a new loop each time, so our own client is remade for it.
            if self._async_client is not None and self._owns_async_client and self._async_loop is not loop:
                self._async_client = None
            if self._async_client is None:
                transport = self._transport if self._transport is not None else bounded_async_transport()
                self._async_client = httpx.AsyncClient(transport=transport, timeout=self.timeout)
                self._async_loop = loop
            if self._async_client is not self._bounded_async_client:
                # Pools (ours or yours) honour the deadline at the socket; any other transport is cancelled.
                self._async_at_socket = bound_client(self._async_client)
                self._bounded_async_client = self._async_client
            return self._async_client

    async def _by_deadline(self, request: AttemptRequest, awaitable: Awaitable[Any]) -> Any:
        """`awaitable`, cancelled at the attempt's deadline when the transport cannot enforce it itself."""
        left = None if self._async_at_socket else request.clock.left()
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
