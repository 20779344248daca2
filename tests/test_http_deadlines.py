"""A call has a deadline: `timeout` bounds one attempt, `total_timeout` the whole call — against a real server
on 127.0.0.1 that trickles one byte every 0.3 s (tests/hostile_server.py).

httpx's own timeouts bound each read, so every one of these servers kept `timeout=1.0` waiting for ever
before the deadlines were enforced. Each test runs its call under a guard of ten times the timeout: a call
that hangs fails the test instead of hanging it. No test measures seconds (benchmarks/deadlines.py does),
and none depends on how fast the machine is: a trickle or a silence always outlasts the timeout, and the
tests that count attempts against `total_timeout` run on the model's injected clock (`SilentServer`).
"""

from __future__ import annotations

import asyncio
import threading

import httpx
import pytest
from hostile_server import HostileServer

from agentkit.core.errors import ProviderConnectionError, ProviderTimeout, RateLimitError
from agentkit.core.types import Message, ModelOptions
from agentkit.http import HTTPModel

MESSAGES = [Message.user("Say hi.")]
TIMEOUT = 1.0
GUARD = 10 * TIMEOUT


def model_for(server: HostileServer, **kw) -> HTTPModel:
    kw.setdefault("timeout", TIMEOUT)
    kw.setdefault("max_retries", 0)
    return HTTPModel("m", base_url=server.url, api_key="test-key", **kw)


def ends(fn, guard: float = GUARD) -> BaseException | object:
    """Run fn() in a thread; fail the test if it has not ended within `guard` seconds. Returns what it
    returned or raised."""
    outcome: list = []

    def target():
        try:
            outcome.append(fn())
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            outcome.append(exc)

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(guard)
    assert not worker.is_alive(), f"the call did not end within {guard} s: no deadline"
    return outcome[0]


def aends(coro_fn, guard: float = GUARD) -> BaseException | object:
    async def main():
        try:
            return await asyncio.wait_for(coro_fn(), guard)
        except asyncio.TimeoutError:
            pytest.fail(f"the call did not end within {guard} s: no deadline")
        except ProviderTimeout as exc:
            return exc

    return asyncio.run(main())


# --- timeout: one attempt, from connect to last byte ------------------------------------------------------

@pytest.mark.parametrize("mode", ["status", "headers", "body", "chunked"])
def test_a_trickled_answer_ends_in_provider_timeout(mode):
    with HostileServer(mode) as server, model_for(server) as model:
        error = ends(lambda: model.complete(MESSAGES))
    assert isinstance(error, ProviderTimeout) and error.error_type == "timeout"
    assert error.attempts == [("m", "timeout")] and "timeout=1" in str(error)


@pytest.mark.parametrize("mode", ["status", "headers", "body", "chunked"])
def test_a_trickled_answer_ends_in_provider_timeout_async(mode):
    with HostileServer(mode) as server:
        model = model_for(server)

        async def call():
            async with model:
                return await model.acomplete(MESSAGES)

        error = aends(call)
    assert isinstance(error, ProviderTimeout) and error.error_type == "timeout"


# --- a stream is stalled when no event comes for `timeout` seconds ----------------------------------------

@pytest.mark.parametrize("mode", ["headers", "keepalive", "sse-trickle"])
def test_a_stream_without_events_is_stalled(mode):
    with HostileServer(mode) as server, model_for(server) as model:
        error = ends(lambda: model.complete(MESSAGES, options=ModelOptions(stream=True)))
    assert isinstance(error, ProviderTimeout) and error.error_type == "stalled"
    assert "keep-alive" in str(error)  # says that comments are not events


@pytest.mark.parametrize("mode", ["headers", "keepalive", "sse-trickle"])
def test_a_stream_without_events_is_stalled_async(mode):
    with HostileServer(mode) as server:
        model = model_for(server)

        async def call():
            async with model:
                return await model.acomplete(MESSAGES, options=ModelOptions(stream=True))

        error = aends(call)
    assert isinstance(error, ProviderTimeout) and error.error_type == "stalled"


def test_stream_iterator_stalls_after_its_first_event():
    with HostileServer("event-then-keepalive") as server, model_for(server) as model:
        seen: list = []

        def consume():
            seen.extend(model.stream(MESSAGES))

        error = ends(consume)
    assert len(seen) == 1 and isinstance(error, ProviderTimeout) and error.error_type == "stalled"
    assert [a.outcome for a in model.last_attempts] == ["stalled"]


def test_astream_iterator_stalls_after_its_first_event():
    with HostileServer("event-then-keepalive") as server:
        model = model_for(server)
        seen: list = []

        async def consume():
            async with model:
                async for event in model.astream(MESSAGES):
                    seen.append(event)

        error = aends(consume)
    assert len(seen) == 1 and isinstance(error, ProviderTimeout) and error.error_type == "stalled"


# --- total_timeout: every attempt and every wait together ---------------------------------------------------

class SilentServer:
    """A server that never answers, on the test's own clock: each request waits out what its attempt has
    left (`timeout`, or the call's `total_timeout` if that ends first), then the read times out. Nothing
    waits real seconds, so how fast the machine is changes nothing: the deadlines pass when the clock says.
    """

    def __init__(self, timeout: float, total_timeout: float):
        self.now, self.timeout, self.ends = 0.0, timeout, total_timeout  # the call starts at 0
        self.requests: list[float] = []  # when each request came

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    async def asleep(self, seconds: float) -> None:
        self.now += seconds

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(self.now)
        self.now = min(self.now + self.timeout, self.ends)
        raise httpx.ReadTimeout("no event", request=request)

    def model(self, **kw) -> HTTPModel:
        return HTTPModel("m", base_url="http://x/v1", api_key="k", transport=httpx.MockTransport(self.handle),
                         timeout=self.timeout, total_timeout=self.ends, clock=self.clock, sleep=self.sleep,
                         asleep=self.asleep, seed=0, **kw)


def test_total_timeout_bounds_the_retries_too():
    """0.5 s of silence per attempt and 1.2 s for the call: two stalled attempts, and the third is cut by the
    budget, though max_retries would allow ten more."""
    server = SilentServer(timeout=0.5, total_timeout=1.2)
    model = server.model(max_retries=10, backoff=0.01)
    with pytest.raises(ProviderTimeout) as info:
        model.complete(MESSAGES, options=ModelOptions(stream=True))
    assert [outcome for _, outcome in info.value.attempts] == ["stalled", "stalled", "total_timeout"]
    assert len(server.requests) == 3 and server.now == 1.2
    assert "total_timeout=1.2" in str(info.value)


def test_total_timeout_bounds_the_retries_too_async():
    server = SilentServer(timeout=0.5, total_timeout=1.2)
    model = server.model(max_retries=10, backoff=0.01)
    with pytest.raises(ProviderTimeout) as info:
        asyncio.run(model.acomplete(MESSAGES, options=ModelOptions(stream=True)))
    assert [outcome for _, outcome in info.value.attempts] == ["stalled", "stalled", "total_timeout"]
    assert len(server.requests) == 3


def test_total_timeout_shorter_than_timeout_wins():
    server = SilentServer(timeout=30.0, total_timeout=0.8)
    with pytest.raises(ProviderTimeout) as info:
        server.model().complete(MESSAGES)
    assert info.value.error_type == "total_timeout" and "total_timeout=0.8" in str(info.value)
    assert info.value.attempts == [("m", "total_timeout")] and server.now == 0.8


def test_total_timeout_against_a_real_silent_server():
    """The same bound on real sockets: however slow the machine, the budget ends the call, each request the
    server saw is an attempt, and max_retries never comes into it (seconds: benchmarks/deadlines.py)."""
    with HostileServer("keepalive") as server, model_for(server, timeout=0.5, total_timeout=1.2,
                                                         max_retries=10, backoff=0.01) as model:
        error = ends(lambda: model.complete(MESSAGES, options=ModelOptions(stream=True)))
    assert isinstance(error, ProviderTimeout) and error.error_type == "total_timeout"
    outcomes = [outcome for _, outcome in error.attempts]
    assert outcomes[-1] == "total_timeout" and set(outcomes[:-1]) <= {"stalled", "timeout"}
    # the last attempt may be cut before its request reached the server; every earlier one reached it
    assert len(outcomes) - 1 <= server.requests <= len(outcomes) < 11


def test_total_timeout_shorter_than_timeout_wins_async():
    with HostileServer("body") as server:
        model = model_for(server, timeout=30.0, total_timeout=0.8)

        async def call():
            async with model:
                return await model.acomplete(MESSAGES)

        error = aends(call)
    assert isinstance(error, ProviderTimeout) and error.error_type == "total_timeout"
    assert "total_timeout=0.8" in str(error)


def test_a_wait_that_does_not_fit_the_budget_is_not_slept():
    """A 429 asking for 30 s, with 5 s left: raise now (or fall back), never sleep past the budget."""
    sleeps: list[float] = []
    handler = httpx.MockTransport(lambda request: httpx.Response(
        429, headers={"retry-after": "30"}, json={"error": {"message": "slow down", "type": "rate_limit"}}))
    model = HTTPModel("m", base_url="http://x/v1", api_key="k", transport=handler, total_timeout=5.0,
                      max_retry_wait=60, sleep=sleeps.append)
    with pytest.raises(RateLimitError) as info:
        model.complete(MESSAGES)
    assert sleeps == [] and info.value.attempts == [("m", 429)]


def test_a_wait_that_does_not_fit_the_budget_moves_to_the_fallback():
    sleeps: list[float] = []
    replies = iter([httpx.Response(429, headers={"retry-after": "30"}, json={"error": {"message": "x"}})])

    def handler(request):
        reply = next(replies, None)
        if reply is not None:
            return reply
        return httpx.Response(200, json={"id": "c", "object": "chat.completion", "created": 1, "model": "b",
                                         "choices": [{"index": 0, "finish_reason": "stop",
                                                      "message": {"role": "assistant", "content": "ok"}}]})

    model = HTTPModel("a", base_url="http://x/v1", api_key="k", transport=httpx.MockTransport(handler),
                      fallback_models=["b"], total_timeout=5.0, sleep=sleeps.append)
    assert model.complete(MESSAGES).text == "ok"
    assert sleeps == [] and [(a.model, a.outcome) for a in model.last_attempts] == [("a", 429), ("b", 200)]


# --- connection failures are not timeouts ---------------------------------------------------------------

def test_a_refused_connection_is_a_connection_error_not_a_timeout():
    with socket_that_refuses() as url:
        model = HTTPModel("m", base_url=url, api_key="k", max_retries=1, sleep=lambda s: None)
        with model, pytest.raises(ProviderConnectionError) as info:
            model.complete(MESSAGES)
    assert not isinstance(info.value, ProviderTimeout) and info.value.retryable
    assert info.value.attempts == [("m", "ConnectError")] * 2


def test_a_refused_connection_async():
    with socket_that_refuses() as url:
        model = HTTPModel("m", base_url=url, api_key="k", max_retries=0)
        with pytest.raises(ProviderConnectionError):
            asyncio.run(model.acomplete(MESSAGES))


class socket_that_refuses:
    """A 127.0.0.1 port that was just free: connecting to it is refused at once."""

    def __enter__(self) -> str:
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        return f"http://127.0.0.1:{port}/v1"

    def __exit__(self, *exc: object) -> None:
        pass


# --- the socket-level deadline is really in place ---------------------------------------------------------

def test_our_own_clients_enforce_deadlines_at_the_socket():
    """httpx has no public hook for a network backend yet (encode/httpx#3180): if an httpx upgrade moves
    the private attribute we use, this test says so before a trickling server does."""
    from agentkit.http.deadlines import bounded_async_transport, bounded_transport, is_bounded

    assert is_bounded(bounded_transport()) and is_bounded(bounded_async_transport())


# --- a client of your own is bounded too (issue 16: `bench run` hands HTTPModel its own client) -----------

@pytest.mark.parametrize("mode", ["headers", "body"])
def test_your_own_sync_client_is_bounded_by_the_deadline(mode):
    with HostileServer(mode) as server, httpx.Client(timeout=TIMEOUT) as client:
        model = model_for(server, client=client)
        error = ends(lambda: model.complete(MESSAGES))
    assert isinstance(error, ProviderTimeout) and error.error_type == "timeout"


@pytest.mark.parametrize("mode", ["headers", "body", "keepalive"])
def test_your_own_async_client_is_bounded_by_the_deadline(mode):
    stream = mode == "keepalive"
    with HostileServer(mode) as server:
        async def call():
            async with httpx.AsyncClient(timeout=TIMEOUT) as client:
                model = model_for(server, async_client=client)
                return await model.acomplete(MESSAGES, options=ModelOptions(stream=stream))

        error = aends(call)
    assert isinstance(error, ProviderTimeout) and error.error_type == ("stalled" if stream else "timeout")


class _NeverAnswers(httpx.AsyncBaseTransport):
    """A transport of your own that is not httpx's connection pool: it waits for ever."""

    async def handle_async_request(self, request):
        await asyncio.Event().wait()


def test_an_async_transport_of_your_own_is_bounded_by_the_deadline():
    async def call():
        async with httpx.AsyncClient(transport=_NeverAnswers()) as client:
            model = HTTPModel("m", base_url="http://x/v1", api_key="k", timeout=TIMEOUT, max_retries=0,
                              async_client=client)
            return await model.acomplete(MESSAGES)

    error = aends(call)
    assert isinstance(error, ProviderTimeout) and error.error_type == "timeout"


def test_bench_runner_clients_are_bounded_by_timeout():
    """`python -m agentkit.bench run --timeout 1` against a server that trickles: the case ends in a
    provider_error naming the timeout, not in a hang."""
    from agentkit.bench.runner import HTTPModels, run_benchmark
    from agentkit.bench.suites import load_cases

    cases = load_cases("agentkit:error_recovery", limit=1)
    with HostileServer("body") as server:
        make_model = HTTPModels("m", "openai-chat", base_url=server.url, api_key="k", timeout=TIMEOUT,
                                max_retries=0)
        records: list = []

        async def call():
            return await run_benchmark(cases, make_model=make_model, progress=False, on_record=records.append)

        aends(call, guard=3 * GUARD)
    assert [r["label"] for r in records] == ["provider_error"]
    assert "ProviderTimeout" in records[0]["detail"]


def test_bound_client_wraps_every_pool_a_client_holds_proxies_included():
    from agentkit.http.deadlines import bound_client, is_bounded

    client = httpx.AsyncClient(mounts={"http://proxied.test": httpx.AsyncHTTPTransport()})
    assert bound_client(client) and bound_client(client)  # once wrapped, a second call changes nothing
    assert is_bounded(client._transport) and all(is_bounded(t) for t in client._mounts.values())
    assert not bound_client(httpx.AsyncClient(transport=httpx.MockTransport(lambda r: httpx.Response(200))))


class _OneEventThenSilence(httpx.AsyncBaseTransport):
    """A transport of your own whose SSE stream brings one event, then nothing for ever."""

    async def handle_async_request(self, request):
        from hostile_server import EVENT

        class Body(httpx.AsyncByteStream):
            async def __aiter__(self):
                yield EVENT
                await asyncio.Event().wait()

        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=Body())


def test_a_stream_from_an_async_transport_of_your_own_is_stalled_by_the_deadline():
    seen: list = []

    async def consume():
        async with httpx.AsyncClient(transport=_OneEventThenSilence()) as client:
            model = HTTPModel("m", base_url="http://x/v1", api_key="k", timeout=TIMEOUT, max_retries=0,
                              async_client=client)
            async for event in model.astream(MESSAGES):
                seen.append(event)

    error = aends(consume)
    assert len(seen) == 1 and isinstance(error, ProviderTimeout) and error.error_type == "stalled"


class _Wrapping(httpx.BaseTransport):
    """A sync transport of your own that wraps httpx's (as a cache or a retry layer does)."""

    def __init__(self):
        self.inner = httpx.HTTPTransport()

    def handle_request(self, request):
        return self.inner.handle_request(request)


def test_a_sync_transport_that_wraps_httpxs_is_bounded_by_the_deadline():
    with HostileServer("body") as server, httpx.Client(transport=_Wrapping()) as client:
        model = model_for(server, client=client)
        error = ends(lambda: model.complete(MESSAGES))
    assert isinstance(error, ProviderTimeout) and error.error_type == "timeout"
