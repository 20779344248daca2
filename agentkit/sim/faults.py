"""Faults on demand: make the simulator fail the way real providers fail, deterministically.

A request asks for a fault in one of two ways (both can be combined):

    model name suffix   "sim-reasoner-429", "sim-reasoner-503-flaky2", "gpt-4.1-slow800"
    request header      x-sim-fault: 429=2000, flaky=2      x-sim-latency-ms: 250

Tokens (the whole vocabulary is the `FAULTS` table below):

    slow[=N]      answer after N ms (default 300); the header x-sim-latency-ms: N does the same
    pace[=N]      streams only: wait N ms (default 20) between events
    429[=N]       429 rate limited, with retry-after (s) and retry-after-ms: N (default 100)
    spend         429 for a spend or quota limit, in the provider's words (OpenAI's insufficient_quota with
                  code project_spend_limit_exceeded, Anthropic's enforced_spend_limit_reached), without
                  retry-after: final, no retry restores access. Formats whose provider documents no such
                  429 (Gemini, Ollama, OpenRouter) answer their ordinary 429
    500, 503      the server failed / is unavailable (OpenRouter answers both with its 502: the provider is down)
    529           Anthropic's "overloaded"; the other formats answer their nearest, 503 (OpenRouter 502)
    drop          close the connection without answering (clients see "server disconnected")
    truncate      promise the whole body (Content-Length) and close after half of it
    cut           streams: close the connection after half of the events (no terminator);
                  non-streamed answers are truncated instead
    instream[=N]  streams: half of the events, then the provider's own in-stream error event for a
                  failure of status N (default 529: Anthropic's overloaded_error, 503 elsewhere), and
                  the stream ends; the HTTP status is already 200. Non-streamed answers get status N.
    badjson       200 OK, complete HTTP message, but the JSON inside is cut in half
    flaky[=N]     the failure above (default 503) hits only the first N attempts (default 1) of the
                  same request; attempt N+1 succeeds, so retry tests are deterministic

In a model name the number follows the token directly ("slow800", "flaky2"); in the header write
either "flaky=2" or "flaky2". A model suffix is stripped before the model decides, so
"sim-reasoner-429-flaky" behaves as "sim-reasoner" once it stops failing. For OpenRouter's
`models` fallback list, each candidate's suffix applies to that candidate, and the header applies
to the first one (so `x-sim-fault: 503` plus a fallback list shows the fallback answering).

Every delay is capped at MAX_DELAY_MS (a minute): a longer one is a 400, never a request that sleeps
for ever. How each provider words a failure, and which status it answers instead of one it never
sends (529 outside Anthropic), is the format's server half's business (`sim/wire/`: `SERVER.fault_messages`,
`nearest_status`); this module is pure data and arithmetic. Left out on purpose: random faults (every fault is asked
for, so every run is reproducible) and slow-reading/slowloris behaviour.
"""

from __future__ import annotations

import math
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any

#: token -> (default argument, what it does). The docstring above and `--help` are built from this.
FAULTS: dict[str, tuple[int | None, str]] = {
    "slow": (300, "answer after N ms"),
    "pace": (20, "streams: wait N ms between events"),
    "429": (100, "rate limited; retry-after-ms: N"),
    "spend": (None, "429 for a spend or quota limit, in the provider's words: final, never retried"),
    "500": (None, "internal server error"),
    "503": (None, "service unavailable"),
    "529": (None, "overloaded (Anthropic); others answer 503, OpenRouter 502"),
    "drop": (None, "close the connection without a response"),
    "truncate": (None, "Content-Length promises more than is sent; connection closed"),
    "cut": (None, "streams: connection closed after half of the events"),
    "instream": (529, "streams: half of the events, then the provider's in-stream error for status N"),
    "badjson": (None, "200 OK with a JSON body cut in half"),
    "flaky": (1, "only the first N attempts of the same request fail (default failure 503)"),
}

STATUS_FAULTS = ("429", "500", "503", "529")
#: The longest delay a fault or x-sim-latency-ms may ask for (ms); more is a 400.
MAX_DELAY_MS = 60_000
#: Statuses `instream=N` may name: the failures a real stream reports after it started.
INSTREAM_STATUSES = (429, 500, 503, 529)

_TOKEN = re.compile(r"(?P<name>[a-z]+|\d{3})(?:=?(?P<arg>\d+))?")
_SUFFIX = re.compile(r"-(?P<token>(?:slow|pace|flaky|instream)\d*|429|500|503|529|spend|drop|truncate|cut|badjson)$")


@dataclass(frozen=True)
class FaultPlan:
    """What a request asked for. The empty plan (all defaults) means "behave normally"."""

    latency_ms: int = 0
    pace_ms: int = 0
    status: int | None = None
    retry_after_ms: int = 100
    transport: str | None = None
    instream: int | None = None  # the status of an error sent inside a 200 stream
    flaky: int = 0  # 0: fail on every attempt; N: fail only the first N attempts
    spend: bool = False  # the 429 is a spend or quota limit (final), not a rate limit

    @property
    def fails(self) -> bool:
        return self.status is not None or self.transport is not None or self.instream is not None

    def merged(self, other: FaultPlan) -> FaultPlan:
        """This plan with every fault `other` sets laid on top."""
        changes: dict[str, Any] = {name: getattr(other, name) for name in ("latency_ms", "pace_ms", "flaky")
                                   if getattr(other, name)}
        if other.status is not None:
            changes.update(status=other.status, retry_after_ms=other.retry_after_ms, spend=other.spend)
        for name in ("transport", "instream"):
            if getattr(other, name) is not None:
                changes[name] = getattr(other, name)
        return replace(self, **changes)

    def failure(self, attempt: int) -> Failure | None:
        """The failure for this attempt (1-based), or None when this attempt should succeed."""
        if self.flaky and attempt > self.flaky:
            return None
        if self.fails:
            return Failure(self.status, self.transport, self.retry_after_ms, self.instream, self.spend)
        return Failure(503, None, self.retry_after_ms) if self.flaky else None  # "flaky" alone: a 503


@dataclass(frozen=True)
class Failure:
    """One decided failure: an HTTP error status, a broken transport, or an error inside the stream."""

    status: int | None
    transport: str | None
    retry_after_ms: int = 100
    instream: int | None = None
    spend: bool = False

    def spend_answer(self, server: Any, status: int) -> Any:
        """The provider's spend-limit answer (`server.spend_limit`) when this is one, else None."""
        return server.spend_limit if self.spend and status == 429 else None

    def message(self, server: Any, model: str, status: int) -> str:
        """The provider's words for this failure, answered with `status` (see `answered_status`), marked
        as simulated."""
        spend = self.spend_answer(server, status)
        words = spend.message if spend else (server.fault_messages.get(status) or server.fault_messages.get(500)
                                             or "Internal error")
        return words.format(model=model, retry_ms=self.retry_after_ms) + " (simulated fault)"

    def details(self, server: Any, status: int) -> dict[str, Any]:
        """The error's fields besides its message: a spend limit's type and code (or Anthropic's details)."""
        spend = self.spend_answer(server, status)
        return {"error_type": spend.error_type, **spend.fields} if spend else {}

    def headers(self, server: Any, status: int) -> dict[str, str]:
        """The headers of an answer with `status`: a 429's retry-after and the provider's rate-limit headers
        (also for an `instream=429` answered whole, when there was no stream to break). A spend limit sends
        no retry-after: there is nothing to wait for."""
        if status != 429 or self.spend_answer(server, status):
            return {}
        ms = self.retry_after_ms
        # retry-after is whole seconds by RFC 9110; SDKs read the precise retry-after-ms first.
        head = {"retry-after": str(max(1, math.ceil(ms / 1000))), "retry-after-ms": str(ms)}
        extra = {k: v.format(retry_ms=ms) for k, v in server.rate_limit_headers.items()}
        return {**head, **extra}


def answered_status(server: Any, status: int) -> int:
    """The status this provider answers for a failure of `status` (`server` is a format's ServerFacts, sim/wire):
    529 becomes 503 where the API never sends 529."""
    return server.nearest_status.get(status, status)


def _number(text: str, what: str) -> int:
    """A whole number from a fault token; more than nine digits is refused before int() sees it."""
    if len(text) > 9:
        raise ValueError(f"{what}: {text[:12]}… is too large")
    return int(text)


def _apply(plan: FaultPlan, name: str, arg: str | None) -> FaultPlan:
    if name not in FAULTS:
        known = ", ".join(FAULTS)
        raise ValueError(f"unknown fault {name!r}; known faults: {known}")
    value = FAULTS[name][0] if arg is None else _number(arg, name)
    if name in ("slow", "pace") and value > MAX_DELAY_MS:
        raise ValueError(f"{name}={value} is over the cap of {MAX_DELAY_MS} ms")
    if name == "slow":
        return replace(plan, latency_ms=value)
    if name == "pace":
        return replace(plan, pace_ms=value)
    if name == "flaky":
        return replace(plan, flaky=max(1, value))
    if name == "instream":
        if value not in INSTREAM_STATUSES:
            raise ValueError(f"instream={value}: choose one of {', '.join(map(str, INSTREAM_STATUSES))}")
        return replace(plan, instream=value)
    if name == "spend":
        return replace(plan, status=429, spend=True)
    if name in STATUS_FAULTS:
        return replace(plan, status=int(name), retry_after_ms=value if name == "429" else plan.retry_after_ms,
                       spend=False)
    return replace(plan, transport=name)


def parse_spec(spec: str) -> FaultPlan:
    """Parse an x-sim-fault header value: "429=2000, flaky=2" -> FaultPlan. Raises ValueError."""
    plan = FaultPlan()
    for raw in spec.replace(";", ",").split(","):
        token = raw.strip().lower()
        if not token:
            continue
        m = _TOKEN.fullmatch(token)
        if not m:
            raise ValueError(f"cannot read fault token {raw.strip()[:40]!r}; write e.g. '429', 'slow=250', 'flaky2'")
        plan = _apply(plan, m["name"], m["arg"])
    return plan


def plan_from_headers(headers) -> FaultPlan:
    """The plan a request's headers ask for (x-sim-fault and x-sim-latency-ms). Raises ValueError."""
    plan = parse_spec(headers.get("x-sim-fault") or "")
    latency = (headers.get("x-sim-latency-ms") or "").strip()
    if latency:
        if not latency.isdigit():
            raise ValueError(f"x-sim-latency-ms must be a whole number of milliseconds, not {latency[:40]!r}")
        if len(latency) > 9 or int(latency) > MAX_DELAY_MS:
            raise ValueError(f"x-sim-latency-ms: {latency[:12]} is over the cap of {MAX_DELAY_MS} ms")
        plan = replace(plan, latency_ms=int(latency))
    return plan


def split_model(model: str) -> tuple[str, FaultPlan]:
    """Strip fault suffixes from a model name: "sim-reasoner-429-flaky2" -> ("sim-reasoner", plan).

    Raises ValueError for a suffix that asks for too much (slow99999999999).
    """
    tokens = []
    while (m := _SUFFIX.search(model)) and m.start() > 0:
        tokens.append(m["token"])
        model = model[: m.start()]
    plan = FaultPlan()
    for token in reversed(tokens):
        m = _TOKEN.fullmatch(token)
        plan = _apply(plan, m["name"], m["arg"])
    return model, plan


class AttemptCounter:
    """How many times each request fingerprint was seen, bounded (least recently seen dropped first).

    Only requests that ask for `flaky` are counted, so ordinary traffic costs no memory.
    """

    def __init__(self, maxsize: int = 10_000):
        self.maxsize = maxsize
        self._counts: OrderedDict[str, int] = OrderedDict()
        self._lock = threading.Lock()  # the server thread counts; a notebook thread may clear()

    def next(self, key: str) -> int:
        """Record one more attempt of `key` and return its number (1 for the first)."""
        with self._lock:
            count = self._counts.pop(key, 0) + 1
            self._counts[key] = count
            if len(self._counts) > self.maxsize:
                self._counts.popitem(last=False)
            return count

    def clear(self) -> None:
        with self._lock:
            self._counts.clear()

    def __len__(self) -> int:
        return len(self._counts)
