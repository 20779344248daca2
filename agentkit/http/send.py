"""Step 2 of HTTPModel's recipe, send: one attempt over httpx, sync or async, read to its end or event by event.

    turn = self._send(request)                 # complete(): one response, or a stream read to its end
    request, events = self._open(request)      # stream(): the attempt succeeds once its first event is here
    for event in self._watch(result, call): ...  # the rest of a watched stream, assembled into result.turn

Each read runs under `_io`: bounded by the attempt's clock (`agentkit.http.deadlines`; a stream's clock restarts
for every event, so `timeout` is the longest wait for the next one) and with httpx's log lines scrubbed of
the key. Stream framing is the codec's STREAM_FRAMING: SSE read by httpx-sse (comments and keep-alives
skipped), or NDJSON lines. The async half has the same shape, awaited; its reads go through
`_by_deadline` (`agentkit.http.clients`). Failures are classified by step 3 (`agentkit.http.classify`),
bodies decoded by step 5 (`agentkit.http.decode`).

`SendStep` is a part of HTTPModel (one of its base classes), kept in a file of its own so the recipe in
`agentkit.http` reads one step at a time. Besides its bases' methods it reads `framing`, `timeout` and
`_secret_forms` of the model, and calls back into it for step 4 (`_drive`, `_adrive`: a watched stream
retries until its first event) and for `_remember` (stored conversations).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import aclosing, closing, contextmanager
from typing import TYPE_CHECKING

import httpx
import httpx_sse

from ..core.errors import ProviderError
from ..providers.common import SSEvent
from .clients import ClientsPart
from .decode import Assembly, DecodeStep
from .redaction import scrubbing_logs

if TYPE_CHECKING:
    from ..core.types import ModelTurn
    from .call import AttemptRequest, Call
    from .model import TurnStream


class SendStep(ClientsPart, DecodeStep):
    """Step 2: send one attempt and read its answer, sync and async (a base of HTTPModel)."""

    framing: str
    timeout: httpx.Timeout
    _secret_forms: tuple

    # -- one attempt, sync -----------------------------------------------------------------------------

    def _send(self, request: AttemptRequest) -> ModelTurn:
        """complete(): one attempt, read to its end."""
        if request.stream:
            assembly = Assembly(self, request)
            with closing(self._events(request)) as events:
                for event in events:
                    assembly.feed(event)
            turn = assembly.turn()
        else:
            client = self._sync_client()
            with self._classify(request), self._io(request):
                response = client.send(self._http_request(client, request))
            turn = self._decode(response, request)
        self._remember(request, turn)
        return turn

    def _events(self, request: AttemptRequest) -> Iterator[SSEvent]:
        """The events of one streamed attempt; each must arrive within the attempt's clock."""
        client, clock = self._sync_client(), request.clock
        with self._classify(request):
            with self._io(request):
                response = client.send(self._http_request(client, request), stream=True)
            with closing(response):
                if not response.is_success:
                    with self._io(request):
                        response.read()
                    raise self._status_error(response, request)
                with closing(self._frames(response)) as frames:
                    while True:
                        with self._io(request):
                            event = next(frames, None)
                        if event is None:
                            return
                        yield event
                        clock.restart()  # the caller asks for the next event: a new wait begins

    def _frames(self, response: httpx.Response) -> Iterator[SSEvent]:
        if self.framing == "ndjson":
            for line in response.iter_lines():
                if line.strip():
                    yield SSEvent(data=line)
        else:
            for sse in httpx_sse.EventSource(response).iter_sse():  # comments and keep-alives skipped
                yield _event(sse)

    def _open(self, request: AttemptRequest) -> tuple[AttemptRequest, Iterator[SSEvent]]:
        """For stream(): an attempt succeeds once its first event is in hand."""
        events = self._events(request)
        try:
            first = next(events)
        except StopIteration:
            raise self._empty_stream(request) from None
        return request, _prepend(first, events)

    def _watch(self, result: TurnStream, call: Call) -> Iterator[SSEvent]:
        request, events = self._drive(call, self._open)
        assembly = Assembly(self, request)
        try:
            with closing(events):
                for event in events:
                    assembly.feed(event)
                    yield event
            result.turn = assembly.turn()
            self._remember(request, result.turn)
        except ProviderError as error:  # after the first event: no retry, the caller saw part of it
            call.spoilt(error)
            raise

    # -- steps 2, 3, 5 for one attempt (async: the same shape, awaited) --------------------------------

    # -- one attempt, async: the same shape, awaited ------------------------------------------------------

    async def _asend(self, request: AttemptRequest) -> ModelTurn:
        if request.stream:
            assembly = Assembly(self, request)
            async with aclosing(self._aevents(request)) as events:
                async for event in events:
                    assembly.feed(event)
            turn = assembly.turn()
        else:
            client = self._aclient()
            with self._classify(request), self._io(request):
                response = await self._by_deadline(request, client.send(self._http_request(client, request)))
            turn = self._decode(response, request)
        self._remember(request, turn)
        return turn

    async def _aevents(self, request: AttemptRequest) -> AsyncIterator[SSEvent]:
        client, clock = self._aclient(), request.clock
        with self._classify(request):
            with self._io(request):
                response = await self._by_deadline(
                    request, client.send(self._http_request(client, request), stream=True))
            async with aclosing(response):
                if not response.is_success:
                    with self._io(request):
                        await self._by_deadline(request, response.aread())
                    raise self._status_error(response, request)
                async with aclosing(self._aframes(response)) as frames:
                    while True:
                        with self._io(request):
                            event = await self._by_deadline(request, anext(frames, None))
                        if event is None:
                            return
                        yield event
                        clock.restart()

    async def _aframes(self, response: httpx.Response) -> AsyncIterator[SSEvent]:
        if self.framing == "ndjson":
            async for line in response.aiter_lines():
                if line.strip():
                    yield SSEvent(data=line)
        else:
            async for sse in httpx_sse.EventSource(response).aiter_sse():
                yield _event(sse)

    async def _aopen(self, request: AttemptRequest) -> tuple[AttemptRequest, AsyncIterator[SSEvent]]:
        events = self._aevents(request)
        try:
            first = await anext(events)
        except StopAsyncIteration:
            raise self._empty_stream(request) from None
        return request, _aprepend(first, events)

    async def _awatch(self, result: TurnStream, call: Call) -> AsyncIterator[SSEvent]:
        request, events = await self._adrive(call, self._aopen)
        assembly = Assembly(self, request)
        try:
            async with aclosing(events):
                async for event in events:
                    assembly.feed(event)
                    yield event
            result.turn = assembly.turn()
            self._remember(request, result.turn)
        except ProviderError as error:
            call.spoilt(error)
            raise

    # -- what both halves share: the httpx request and the bounded, scrubbed read ------------------------

    def _http_request(self, client: httpx.Client | httpx.AsyncClient, request: AttemptRequest) -> httpx.Request:
        built = client.build_request("POST", request.url, json=request.body, headers=request.headers,
                                     timeout=self.timeout)
        request.sent.append(len(built.content))  # what the wire carries, for Attempt.request_bytes
        return built

    @contextmanager
    def _io(self, request: AttemptRequest) -> Iterator[None]:
        """Network I/O of one attempt: bounded by its clock, and httpx's log lines scrubbed of the key.

        Entered around each read, never across a `yield`, so no other code runs under it."""
        with request.clock.reading(), scrubbing_logs(self._secret_forms):
            yield


def _event(sse: httpx_sse.ServerSentEvent) -> SSEvent:
    # httpx-sse names unnamed events "message"; the codecs expect None for "no event: line".
    return SSEvent(data=sse.data, event=None if sse.event == "message" else sse.event)


def _prepend(first: SSEvent, rest: Iterator[SSEvent]) -> Iterator[SSEvent]:
    with closing(rest):  # closing this generator closes the HTTP stream too
        yield first
        yield from rest


async def _aprepend(first: SSEvent, rest: AsyncIterator[SSEvent]) -> AsyncIterator[SSEvent]:
    async with aclosing(rest):
        yield first
        async for event in rest:
            yield event
