"""HTTPModel against the real simulator over loopback: every injected fault ends in a retry that succeeds,
a fallback, or a typed error — and never in a hang.

Faults are asked for by model-name suffix ("sim-reasoner-429-flaky") or the `x-sim-fault` header, as
documented in agentkit/sim/faults.py. The simulator's decision logic is replaced by a fixed answer
(`respond=`), so these tests are about transport and error handling only. Sleeps are recorded, not slept;
every request has a 2 s httpx timeout and every test a 20 s alarm.
"""

from __future__ import annotations

import asyncio
import signal
import threading

import pytest

from agentkit.core.errors import BadResponseError, ProviderConnectionError, ProviderTimeout, RateLimitError, ServerError
from agentkit.core.types import Message, ModelOptions, ModelTurn, ToolCall, ToolSpec, Usage
from agentkit.http import HTTPModel
from agentkit.providers import FORMATS
from agentkit.sim import serve
from agentkit.sim.app import UnknownModel

MESSAGES = [Message.user("What's the weather in Paris?")]
TOOLS = [ToolSpec("get_weather", "Current weather for a city",
                  {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})]
KNOWN = ("sim-reasoner", "sim-backup", "sim-terse")


def respond(request) -> ModelTurn:
    """A fixed answer: one call to get_weather, or a 404 for a model the simulator does not know.
    "sim-terse" sends the call without any text (Gemini streams that as one event)."""
    if request.model not in KNOWN:
        raise UnknownModel(request.model)
    call = ToolCall.from_raw("call_1", "get_weather", '{"city": "Paris"}')
    text = None if request.model == "sim-terse" else "Checking."
    return ModelTurn(text=text, tool_calls=(call,), stop="tool_calls", usage=Usage(12, 6), model=request.model)


@pytest.fixture(scope="module")
def sim():
    with serve(respond=respond, models=KNOWN) as server:
        yield server


OPEN: list[HTTPModel] = []


@pytest.fixture(autouse=True)
def bounded(sim):
    """No test may hang: a 20 s alarm on top of the 2 s httpx timeouts; flaky counters start fresh;
    every model's client is closed afterwards (no sockets left for the garbage collector)."""
    sim.reset()
    try:
        if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGALRM"):
            yield
        else:
            yield from _alarm(20)
    finally:
        while OPEN:
            OPEN.pop().close()


def _alarm(seconds: float):
    """Raise TimeoutError in the test if it runs past `seconds` (SIGALRM: main thread, Unix only)."""
    def expire(signum, frame):
        raise TimeoutError(f"test took longer than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class Sleeps(list):
    def __call__(self, seconds: float) -> None:
        self.append(round(seconds, 6))

    async def asleep(self, seconds: float) -> None:
        self.append(round(seconds, 6))


def model_on(sim, fmt: str, model: str, sleeps: Sleeps | None = None, **kw) -> HTTPModel:
    sleeps = Sleeps() if sleeps is None else sleeps
    kw.setdefault("timeout", 2.0)
    model = HTTPModel(model, fmt, base_url=sim.base_url(fmt), api_key="sim-key", seed=0,
                      sleep=sleeps, asleep=sleeps.asleep, **kw)
    OPEN.append(model)
    return model


def answered(turn: ModelTurn) -> bool:
    return [(c.name, c.arguments) for c in turn.tool_calls] == [("get_weather", {"city": "Paris"})]


def expected_first(fault: str, fmt: str) -> tuple[str, int | None]:
    """(error class, status) of the failing first attempt."""
    if fault in ("429",):
        return "RateLimitError", 429
    if fault in ("500", "503", "529") and fmt == "openrouter":
        return "ServerError", 502  # a provider that is down reaches OpenRouter's client as its 502
    if fault in ("500", "503"):
        return "ServerError", int(fault)
    if fault == "529":
        return "ServerError", 529 if fmt == "anthropic" else 503
    if fault == "badjson":
        return "BadResponseError", 200
    return "ProviderConnectionError", None  # drop, truncate, cut: the connection closes early


FAULTS = ["429", "500", "503", "529", "drop", "truncate", "badjson", "cut"]


# --- a fault once, then success: the retry answers ---------------------------------------------------------

@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_a_fault_once_is_retried_to_success(sim, fmt, fault, stream):
    sleeps = Sleeps()
    model = model_on(sim, fmt, f"sim-reasoner-{fault}-flaky", sleeps)
    turn = model.complete(MESSAGES, TOOLS, ModelOptions(stream=stream))
    assert answered(turn)
    first, second = model.last_attempts
    error, status = expected_first(fault, fmt)
    assert (first.error, second.ok, second.status) == (error, True, 200)
    if status is not None:
        assert first.status == status
    if fault == "429":
        assert sleeps == [0.1]  # the simulator's retry-after-ms: 100
    else:
        assert len(sleeps) == 1 and 0.375 <= sleeps[0] <= 0.5  # backoff with jitter


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_a_fault_asked_for_by_header_is_retried_with_its_retry_after(sim, fmt):
    sleeps = Sleeps()
    model = model_on(sim, fmt, "sim-reasoner", sleeps, headers={"x-sim-fault": "429=20, flaky"})
    assert answered(model.complete(MESSAGES, TOOLS))
    assert sleeps == [0.02] and [a.outcome for a in model.last_attempts] == [429, 200]


def test_two_failures_then_success_within_the_retry_budget(sim):
    model = model_on(sim, "openai-chat", "sim-reasoner-503-flaky2")
    assert answered(model.complete(MESSAGES, TOOLS))
    assert [a.outcome for a in model.last_attempts] == [503, 503, 200]


# --- a fault that stays: the fallback answers ---------------------------------------------------------------

@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("fault", ["503", "drop", "badjson", "cut"])
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_a_lasting_fault_falls_back_to_the_next_model(sim, fmt, fault, stream):
    model = model_on(sim, fmt, f"sim-reasoner-{fault}", fallback_models=["sim-backup"], max_retries=1)
    turn = model.complete(MESSAGES, TOOLS, ModelOptions(stream=stream))
    assert answered(turn) and turn.model == "sim-backup"
    if fmt == "openrouter" and fault == "503":
        # OpenRouter got the list as `models` and fell back itself: one attempt, answered by the backup.
        assert [(a.model, a.outcome) for a in model.last_attempts] == [("sim-reasoner-503", 200)]
        return
    assert [a.model for a in model.last_attempts] == [f"sim-reasoner-{fault}"] * 2 + ["sim-backup"]
    assert model.last_attempts[-1].ok


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_an_unknown_model_falls_back_without_retrying(sim, fmt):
    sleeps = Sleeps()
    model = model_on(sim, fmt, "no-such-model", sleeps, fallback_models=["sim-backup"])
    turn = model.complete(MESSAGES, TOOLS)
    assert answered(turn) and turn.model == "sim-backup" and sleeps == []
    # OpenRouter falls back server-side (the `models` list), the others client-side after the 404.
    expected = [200] if fmt == "openrouter" else [404, 200]
    assert [a.outcome for a in model.last_attempts] == expected


def test_a_slow_model_times_out_and_falls_back(sim):
    # The slow model answers only after a minute (the simulator's longest delay), the backup at once: the
    # timeout sits between the two with room on both sides, so a busy machine does not change the outcome.
    model = model_on(sim, "openai-chat", "sim-reasoner-slow60000", timeout=3.0, max_retries=0,
                     fallback_models=["sim-backup"])
    assert answered(model.complete(MESSAGES, TOOLS))
    assert [a.outcome for a in model.last_attempts] == ["timeout", 200]  # the timeout, not the answer, decided


def test_a_slow_model_within_the_timeout_just_answers(sim):
    model = model_on(sim, "anthropic", "sim-reasoner-slow100")
    assert answered(model.complete(MESSAGES, TOOLS, ModelOptions(stream=True)))
    assert len(model.last_attempts) == 1


def test_openrouter_falls_back_server_side_through_models(sim):
    sleeps = Sleeps()
    model = model_on(sim, "openrouter", "sim-reasoner-429", sleeps, fallback_models=["sim-backup"])
    assert model.complete(MESSAGES, TOOLS).model == "sim-backup" and sleeps == []
    model = model_on(sim, "openrouter", "sim-reasoner-503", fallback_models=["sim-backup"])
    turn = model.complete(MESSAGES, TOOLS)
    assert answered(turn) and turn.model == "sim-backup"
    assert len(model.last_attempts) == 1  # OpenRouter (the simulator) did the fallback, not the client


# --- a fault that stays and nowhere to go: a typed error, with every attempt listed ------------------------

@pytest.mark.parametrize("fault, error, outcome", [
    ("429", RateLimitError, 429),
    ("500", ServerError, 500),
    ("drop", ProviderConnectionError, "RemoteProtocolError"),
    ("truncate", ProviderConnectionError, "RemoteProtocolError"),
    ("badjson", BadResponseError, "invalid_json"),
])
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_a_lasting_fault_without_fallback_raises_a_typed_error(sim, fmt, fault, error, outcome):
    sleeps = Sleeps()
    model = model_on(sim, fmt, f"sim-reasoner-{fault}", sleeps)
    with pytest.raises(error) as info:
        model.complete(MESSAGES, TOOLS)
    if fmt == "openrouter" and fault == "500":
        outcome = 502  # OpenRouter's word for a provider that failed
    assert info.value.attempts == [(f"sim-reasoner-{fault}", outcome)] * 3
    assert len(sleeps) == 2
    if fault == "429":
        assert info.value.retry_after == 0.1


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_a_stream_cut_every_time_raises_a_typed_error(sim, fmt):
    model = model_on(sim, fmt, "sim-reasoner-cut", max_retries=1)
    with pytest.raises((ProviderConnectionError, BadResponseError)) as info:
        model.complete(MESSAGES, TOOLS, ModelOptions(stream=True))
    assert len(info.value.attempts) == 2


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_an_error_inside_the_stream_fails_the_attempt_even_when_the_answer_is_one_event(sim, fmt):
    """`instream` sends the first half of the events, then the provider's error event. A short answer
    (Gemini writes one tool call as one event) must not slip through whole before the error."""
    model = model_on(sim, fmt, "sim-terse-instream", max_retries=0)
    with pytest.raises((ServerError, RateLimitError, BadResponseError)) as info:
        model.complete(MESSAGES, TOOLS, ModelOptions(stream=True))
    assert info.value.retryable
    sim.reset()
    flaky = model_on(sim, fmt, "sim-terse-instream-flaky")
    assert answered(flaky.complete(MESSAGES, TOOLS, ModelOptions(stream=True)))
    assert [a.ok for a in flaky.last_attempts] == [False, True]


def test_a_slow_model_without_fallback_raises_provider_timeout(sim):
    model = model_on(sim, "gemini", "sim-reasoner-slow1500", timeout=0.2, max_retries=1)
    with pytest.raises(ProviderTimeout) as info:
        model.complete(MESSAGES, TOOLS)
    assert info.value.attempts == [("sim-reasoner-slow1500", "timeout")] * 2


def test_nothing_listening_is_a_connect_error_not_a_hang(sim):
    model = HTTPModel("m", base_url="http://127.0.0.1:9/v1", timeout=1.0, max_retries=1, sleep=lambda s: None)
    with model, pytest.raises(ProviderConnectionError) as info:
        model.complete(MESSAGES)
    assert [outcome for _, outcome in info.value.attempts] == ["ConnectError"] * 2


# --- async: the same faults, the same outcomes --------------------------------------------------------------

@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("fault", ["429", "drop", "badjson", "cut"])
def test_async_retries_faults_like_sync(sim, fault, stream):
    def outcomes(use_async: bool):
        sim.reset()
        model = model_on(sim, "anthropic", f"sim-reasoner-{fault}-flaky", fallback_models=["sim-backup"])
        options = ModelOptions(stream=stream)
        if use_async:
            async def go():
                async with model:
                    return await model.acomplete(MESSAGES, TOOLS, options)
            turn = asyncio.run(go())
        else:
            with model:
                turn = model.complete(MESSAGES, TOOLS, options)
        assert answered(turn)
        return [(a.model, a.error, a.status) for a in model.last_attempts]

    assert outcomes(True) == outcomes(False)


def test_stream_iterator_retries_a_fault_before_the_first_event(sim):
    model = model_on(sim, "openai-chat", "sim-reasoner-429-flaky")
    stream = model.stream(MESSAGES, TOOLS)
    events = list(stream)
    assert events and events[-1].data == "[DONE]" and answered(stream.turn)
    assert [a.outcome for a in model.last_attempts] == [429, 200]


def test_stream_iterator_cut_after_events_raises_without_retry(sim):
    model = model_on(sim, "openai-chat", "sim-reasoner-cut-pace5")
    seen = []
    with pytest.raises((ProviderConnectionError, BadResponseError)):
        seen.extend(model.stream(MESSAGES, TOOLS))
    (attempt,) = model.last_attempts  # the caller saw part of it: no second try
    assert seen and not attempt.ok and attempt.error in ("ProviderConnectionError", "BadResponseError")
