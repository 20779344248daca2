"""Send, in HTTPModel's recipe: one attempt over httpx, sync or async, read to its end or event by event.

    sender = Sender(clients, errors, decoder, framing="sse", secret_forms=secret_forms([key]))
    turn = sender.send(request)            # complete(): one response, or a stream read to its end
    events = sender.open(request)          # stream(): the attempt succeeds once its first event is here

Each read runs under `io()`: bounded by the attempt's clock (`agentkit.http.deadlines`; a stream's clock
restarts for every event, so `timeout` is the longest wait for the next one) and with httpx's log lines
scrubbed of the key. Stream framing is the codec's STREAM_FRAMING: SSE read by httpx-sse (comments and
keep-alives skipped), or NDJSON lines. The async half has the same shape, awaited; its reads go through
`Clients.by_deadline`. What goes wrong is classified by the Classifier (`agentkit.http.classify`), bodies
are decoded by the Decoder (`agentkit.http.decode`); retrying is the caller's (`HTTPModel`'s driving loop).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Generator, Iterator
from contextlib import aclosing, closing, contextmanager
from typing import Literal

import httpx
import httpx_sse

from ..core.types import ModelTurn
from ..providers.common import SSEvent
from .classify import Classifier
from .clients import Clients
from .decode import Decoder
from .redaction import scrubbing_logs
from .request import AttemptRequest

__all__ = ["Sender"]


class Sender:
    """Send one attempt and read its answer, sync and async.

    `clients` are the httpx clients to send with, `errors` and `decoder` turn what comes back into a
    ModelTurn or a ProviderError, `framing` is the codec's STREAM_FRAMING, `secret_forms` what is scrubbed
    from httpx's log lines while an attempt runs.
    """

    def __init__(self, clients: Clients, errors: Classifier, decoder: Decoder, framing: Literal["sse", "ndjson"],
                 secret_forms: tuple[str, ...] = ()):
        self.clients, self.errors, self.decoder = clients, errors, decoder
        self.framing, self.secret_forms = framing, secret_forms

    # -- one attempt, sync -----------------------------------------------------------------------------

    def send(self, request: AttemptRequest) -> ModelTurn:
        """complete(): one attempt, read to its end."""
        if request.stream:
            stream = self.decoder.stream(request)
            with closing(self.events(request)) as events:
                for event in events:
                    stream.feed(event)
            return stream.turn()
        client = self.clients.sync()
        with self.errors.transport_errors(request), self.io(request):
            response = client.send(self.http_request(client, request))
        if not response.is_success:
            raise self.errors.status_error(response, request)
        return self.decoder.turn(response.content, request, response.status_code)

    def events(self, request: AttemptRequest) -> Generator[SSEvent, None, None]:
        """The events of one streamed attempt; each must arrive within the attempt's clock."""
        client, clock = self.clients.sync(), request.clock
        with self.errors.transport_errors(request):
            with self.io(request):
                response = client.send(self.http_request(client, request), stream=True)
            with closing(response):
                if not response.is_success:
                    with self.io(request):
                        response.read()
                    raise self.errors.status_error(response, request)
                with closing(self._frames(response)) as frames:
                    while True:
                        with self.io(request):
                            event = next(frames, None)
                        if event is None:
                            return
                        yield event
                        clock.restart()  # the caller asks for the next event: a new wait begins

    def _frames(self, response: httpx.Response) -> Generator[SSEvent, None, None]:
        if self.framing == "ndjson":
            for line in response.iter_lines():
                if line.strip():
                    yield SSEvent(data=line)
        else:
            for sse in httpx_sse.EventSource(response).iter_sse():  # comments and keep-alives skipped
                yield _event(sse)

    def open(self, request: AttemptRequest) -> Generator[SSEvent, None, None]:
        """For stream(): the attempt's events, once its first event is in hand (the attempt succeeded)."""
        events = self.events(request)
        try:
            first = next(events)
        except StopIteration:
            raise self.errors.empty_stream(request) from None
        return _prepend(first, events)

    # -- one attempt, async: the same shape, awaited ---------------------------------------------------

    async def asend(self, request: AttemptRequest) -> ModelTurn:
        if request.stream:
            stream = self.decoder.stream(request)
            async with aclosing(self.aevents(request)) as events:
                async for event in events:
                    stream.feed(event)
            return stream.turn()
        client = self.clients.asynchronous()
        with self.errors.transport_errors(request), self.io(request):
            response = await self.clients.by_deadline(request.clock, client.send(self.http_request(client, request)))
        if not response.is_success:
            raise self.errors.status_error(response, request)
        return self.decoder.turn(response.content, request, response.status_code)

    async def aevents(self, request: AttemptRequest) -> AsyncGenerator[SSEvent, None]:
        client, clock = self.clients.asynchronous(), request.clock
        with self.errors.transport_errors(request):
            with self.io(request):
                response = await self.clients.by_deadline(
                    clock, client.send(self.http_request(client, request), stream=True))
            async with aclosing(response):
                if not response.is_success:
                    with self.io(request):
                        await self.clients.by_deadline(clock, response.aread())
                    raise self.errors.status_error(response, request)
                async with aclosing(self._aframes(response)) as frames:
                    while True:
                        with self.io(request):
                            event = await self.clients.by_deadline(clock, anext(frames, None))
                        if event is None:
                            return
                        yield event
                        clock.restart()

    async def _aframes(self, response: httpx.Response) -> AsyncGenerator[SSEvent, None]:
        if self.framing == "ndjson":
            async for line in response.aiter_lines():
                if line.strip():
                    yield SSEvent(data=line)
        else:
            async for sse in httpx_sse.EventSource(response).aiter_sse():
                yield _event(sse)

    async def aopen(self, request: AttemptRequest) -> AsyncGenerator[SSEvent, None]:
        events = self.aevents(request)
        try:
            first = await anext(events)
        except StopAsyncIteration:
            raise self.errors.empty_stream(request) from None
        return _aprepend(first, events)

    # -- what both halves share: the httpx request and the bounded, scrubbed read ------------------------

    def http_request(self, client: httpx.Client | httpx.AsyncClient, request: AttemptRequest) -> httpx.Request:
        built = client.build_request("POST", request.url, json=request.body, headers=request.headers,
                                     timeout=self.clients.timeout)
        request.sent.append(len(built.content))  # what the wire carries, for Attempt.request_bytes
        return built

    @contextmanager
    def io(self, request: AttemptRequest) -> Iterator[None]:
        """Network I/O of one attempt: bounded by its clock, and httpx's log lines scrubbed of the key.

        Entered around each read, never across a `yield`, so no other code runs under it."""
        with request.clock.reading(), scrubbing_logs(self.secret_forms):
            yield


def _event(sse: httpx_sse.ServerSentEvent) -> SSEvent:
    # httpx-sse names unnamed events "message"; the codecs expect None for "no event: line".
    return SSEvent(data=sse.data, event=None if sse.event == "message" else sse.event)


def _prepend(first: SSEvent, rest: Generator[SSEvent, None, None]) -> Generator[SSEvent, None, None]:
    with closing(rest):  # closing this generator closes the HTTP stream too
        yield first
        yield from rest


async def _aprepend(first: SSEvent, rest: AsyncGenerator[SSEvent, None]) -> AsyncGenerator[SSEvent, None]:
    async with aclosing(rest):
        yield first
        async for event in rest:
            yield event

