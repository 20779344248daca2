"""Transport faults, met: ask the simulator for a fault, call through HTTPModel, record what happened.

    from agentkit.experiments import transport
    met = transport.meet("429", format="anthropic")          # a 429 once: the retry answers
    met.path        # "429 → 200": each attempt's outcome
    met.how         # "a retry"
    transport.meet("503", lasting=True, fallback=["sim-reasoner"]).how    # "the fallback: sim-reasoner"
    transport.catalogue("anthropic")                         # every fault once: [Met, ...]
    transport.raw_stream_tail("gemini")                      # the last lines of a 200 stream with an error
    transport.playground(fault="instream", stream=True)      # the attempts as a chart (the playground)

A fault is asked for by a model-name suffix (`sim-reasoner-429`; see `agentkit.sim.faults`). "Once"
adds `-flaky`: only the first attempt fails, so a retry answers; "lasting" fails every attempt of that
model, so only a fallback model (plain `sim-reasoner`) or nothing can answer. A timeout is a model that
is slower than the attempt's `timeout` (always lasting: a slow model is slow every time). A spend limit
is met by neither: it is final (`SpendLimitError`), so even "once" ends in the typed error.

Waits are real (`backoff` is small by default, 0.05 s, so experiments stay quick) and the jitter is
seeded, so the attempts and their order are the same on every run; only the seconds vary.

Left out on purpose: hostile servers that trickle bytes (see `tests/hostile_server.py` and
`benchmarks/deadlines.py`), and faults that only real networks have (TLS, DNS).
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple, Sequence

from .. import sim, viz
from ..core.errors import ProviderError
from ..core.types import Message, ModelOptions, ToolSpec
from ..http.model import HTTPModel
from ..http.retries import Attempt
from ..providers import get_codec

__all__ = ["FAULTS", "Fault", "Met", "catalogue", "meet", "playground", "raw_stream_tail"]


class Fault(NamedTuple):
    """One fault the simulator injects: its name, the model-name suffix that asks for it, whether it
    needs a streamed answer, and what happens on the wire."""

    name: str
    suffix: str
    stream: bool
    what: str


FAULTS: dict[str, Fault] = {f.name: f for f in (
    Fault("429", "429", False, "rate limited: the answer says how long to wait (retry-after)"),
    Fault("spend", "spend", False, "a spend or quota limit reached: also a 429, but final (no retry-after)"),
    Fault("500", "500", False, "the server failed"),
    Fault("503", "503", False, "the service is unavailable"),
    Fault("529", "529", False, "overloaded: Anthropic's own status (the other formats answer 503)"),
    Fault("timeout", "slow", False, "no answer within the attempt's timeout"),
    Fault("drop", "drop", False, "the connection closes without an answer"),
    Fault("truncate", "truncate", False, "the body stops short of its Content-Length"),
    Fault("badjson", "badjson", False, "200 OK, but the JSON is cut in half"),
    Fault("cut", "cut", True, "a stream whose connection closes half-way"),
    Fault("instream", "instream", True, "half a stream, then the provider's own error event inside the 200"),
)}

#: What every experiment asks: one question and one tool, so the model's answer is a tool call.
MESSAGES = (Message.user("What's the weather in Paris?"),)
TOOLS = (ToolSpec("get_weather", "Current weather for a city.",
                  {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),)

#: The attempt timeout of the "timeout" experiment (the slow model takes four times as long).
TIMEOUT = 0.2


class Met(NamedTuple):
    """How one call met its fault: every attempt, who answered (or the error), and the wall time."""

    fault: str
    format: str
    model: str  # the model name asked for first (fault suffix included)
    attempts: list[Attempt]
    answered_by: str | None  # the model that answered, or None when the call raised
    error: ProviderError | None
    seconds: float

    @property
    def path(self) -> str:
        """The attempts' outcomes in order, repeats counted, models named after the first:
        "503 ×3 → 200 (sim-reasoner)"."""
        return viz.attempt_path(self.attempts)

    @property
    def how(self) -> str:
        """What met the fault: "a retry", "the fallback: <model>", "a typed error: <class>", or "nothing"."""
        if self.error is not None:
            return f"a typed error: {type(self.error).__name__}"
        if self.answered_by != self.model:
            return f"the fallback: {self.answered_by}"
        return "a retry" if len(self.attempts) > 1 else "nothing (answered at once)"


def _model_name(fault: Fault, lasting: bool, timeout: float) -> str:
    if fault.name == "timeout":
        return f"sim-reasoner-slow{min(60_000, round(4000 * timeout))}"
    return f"sim-reasoner-{fault.suffix}" + ("" if lasting else "-flaky")


def meet(fault: str, *, format: str = "openai-chat", lasting: bool = False, fallback: Sequence[str] = (),
         stream: bool | None = None, max_retries: int = 2, backoff: float = 0.05, timeout: float | None = None,
         total_timeout: float | None = None, max_retry_wait: float = 60.0, server: Any = None) -> Met:
    """One call through HTTPModel to a simulated model with `fault`, and what became of it.

    `stream` defaults to what the fault needs (cut and instream break a stream). `timeout` is the
    attempt's bound (default: TIMEOUT for the timeout fault, 5 s otherwise). `server` defaults to the
    notebook-wide simulator; its flaky counters are reset first, so a rerun fails first again.
    """
    if fault not in FAULTS:
        raise ValueError(f"fault={fault!r}: choose one of {', '.join(FAULTS)}")
    spec = FAULTS[fault]
    timeout = timeout if timeout is not None else (TIMEOUT if fault == "timeout" else 5.0)
    server = server if server is not None else sim.shared()
    server.reset()
    name = _model_name(spec, lasting, timeout)
    model = HTTPModel(name, format, base_url=server.base_url(format), api_key="sim-key", fallback_models=fallback,
                      max_retries=max_retries, backoff=backoff, timeout=timeout, total_timeout=total_timeout,
                      max_retry_wait=max_retry_wait, seed=0)
    options = ModelOptions(stream=spec.stream if stream is None else stream)
    answered_by, error = None, None
    start = time.perf_counter()
    try:
        answered_by = model.complete(list(MESSAGES), list(TOOLS), options).model or name
    except ProviderError as exc:
        error = exc
    finally:
        seconds = time.perf_counter() - start
        model.close()
    return Met(fault, format, name, list(model.last_attempts), answered_by, error, seconds)


def catalogue(format: str = "openai-chat", faults: Sequence[str] | None = None,
              fallback: Sequence[str] = ("sim-reasoner",), **options: Any) -> list[Met]:
    """Every fault once (a timeout lasts: its fallback answers), each met by one HTTPModel call."""
    return [meet(name, format=format, fallback=fallback, **options) for name in (faults or FAULTS)]


def raw_stream_tail(format: str, fault: str = "instream", lines: int = 6, server: Any = None) -> tuple[int, str]:
    """POST a streamed request with plain httpx (no agentkit decoding) to a model with `fault`; the HTTP
    status and the last `lines` non-empty lines of the raw body, where the in-stream error is."""
    import httpx

    server = server if server is not None else sim.shared()
    server.reset()
    codec = get_codec(format)
    wire = codec.build_request(f"sim-reasoner-{FAULTS[fault].suffix}", list(MESSAGES), list(TOOLS),
                               ModelOptions(stream=True))
    headers = {**wire.headers, **codec.auth_headers("sim-key")}
    with httpx.Client(base_url=server.base_url(format), timeout=10) as client:
        try:
            response = client.post(wire.path, json=wire.body, headers=headers)
            status, text = response.status_code, response.text
        except httpx.TransportError as exc:  # a cut stream: the connection closed mid-body
            return 200, f"<connection closed: {type(exc).__name__}>"
    kept = [line for line in text.splitlines() if line.strip()]
    return status, "\n".join(kept[-lines:])


def playground(fault: str = "503", format: str = "anthropic", lasting: bool = False, fallback: bool = True,
               stream: bool = False, max_retries: int = 2, total_timeout: float = 0.0) -> Any:
    """The playground's experiment: meet one fault and draw its attempts (total_timeout 0: no budget)."""
    met = meet(fault, format=format, lasting=lasting, fallback=("sim-reasoner",) if fallback else (),
               stream=stream or FAULTS[fault].stream, max_retries=max_retries,
               total_timeout=total_timeout or None)
    label = f"{fault} {'lasting' if lasting else 'once'} ({format})"
    return viz.attempt_timeline({label: met.attempts}, title=f"met by {met.how}: {met.path}")
