"""What every format's server side shares: the decoded request, its refusal, and the simulator's signatures.

    ChatRequest      a decoded request, provider-neutral: what the simulator's models decide on
    CachePlan        the prompt-cache breakpoints a request marks (the app's `PromptCache` settles them)
    RequestInvalid   a client mistake found while decoding; the server answers it with the format's 4xx
    rule_log         what one request was checked against: a Finding per rule (passed, refused,
                     degraded), recorded by `holds`, `breaks` and `degrades` as a server half decodes

plus `schema_problem` (is a tool's parameter schema valid JSON Schema? what the APIs refuse),
`approx_tokens` (the simulator's token count of a JSON value), and for reasoning state:

    simulated_thought  the simulator's stand-in for a model's reasoning text, read from the turn
    mint_signature     the simulator's opaque signatures (an HMAC with the installation's key, `signing_key`),
                       `signature_valid` to check one, `conversation_of` for the conversation a signature is
                       bound to

The client side's shared shapes (WireRequest, SSEvent, JSONLine, reading errors) are
`agentkit.providers.common`; this module imports from there, never the other way round.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import hmac
import json
import logging
import math
import os
import re
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from ...core.types import Message, ModelOptions, ModelTurn, ToolSpec, json_shape


@dataclass(frozen=True)
class CacheBreakpoint:
    """One place in a request's prompt prefix where a cache entry may be read or written.

    `digest` names the prefix up to here (the model family and the blocks, without their cache markers),
    `tokens` is how many tokens that prefix holds, and `ttl` ("5m" or "1h") is set where the request put
    a breakpoint (an entry is written there); None marks a place that is only looked up."""

    digest: str
    tokens: int
    ttl: str | None = None


@dataclass(frozen=True)
class CachePlan:
    """The prompt-cache breakpoints of one request, in prefix order (tools, system, messages).

    `positions` runs from the first block to the last breakpoint; the server reads the longest prefix it
    holds within `lookback` positions before a breakpoint and writes an entry at each breakpoint after
    it, but only for a prefix of at least `minimum` tokens (the model's minimum cacheable length)."""

    positions: tuple[CacheBreakpoint, ...]
    minimum: int
    lookback: int = 20


@dataclass(frozen=True)
class ChatRequest:
    """A decoded request, provider-neutral: what the simulator's models decide on."""

    model: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    options: ModelOptions = field(default_factory=ModelOptions)
    fallback_models: tuple[str, ...] = ()  # OpenRouter `models`
    extras: dict = field(default_factory=dict)  # fields a codec accepted but the kit does not model
    degradations: tuple[str, ...] = ()  # ledger rules the request degrades under (see RuleLog)
    prompt_cache: CachePlan | None = None  # the request's cache breakpoints, for a format that has them


def approx_tokens(value: Any) -> int:
    """The simulator's token count: about one token per 4 bytes of UTF-8 (a JSON value counts as its JSON
    text). The simulated models report usage with the same rule, so counts and usage agree."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return math.ceil(len(text.encode("utf-8")) / 4)


#: A request header the simulator hands to its model as ChatRequest.extras["case"]: a benchmark says which
#: case it plays, so an oracle answers by case (agentkit.bench.oracle). No provider reads it.
CASE_HEADER = "x-agentkit-case"


class RequestInvalid(ValueError):
    """A client mistake found while decoding a request; the server answers it with the format's 4xx.

    `rule` is the fidelity ledger's id for the rule the request breaks (`agentkit/sim/fidelity.toml`), so
    every refusal the simulator can send is traceable to its source. `code` is the format's
    machine-readable code where it has one (OpenAI: "missing_required_parameter", "invalid_type", ...);
    pass it on to `build_error(..., param=e.param, code=e.code)`.
    """

    def __init__(self, message: str, param: str | None = None, status: int = 400, code: str | None = None,
                 *, rule: str | None = None):
        super().__init__(message)
        self.message, self.param, self.status, self.code, self.rule = message, param, status, code, rule


# -- what a request was checked against: the rule log ---------------------------------------------------
# Each rule a server half checks on behalf of a real API is a ledger entry. While the simulator decodes a
# request it keeps a RuleLog: a Finding per check, "passed", "refused" (the real API answers 4xx, and so
# does the simulator, in its words) or "degraded" (the real API accepts it, but the provider documents or
# users report a worse result). A request that breaks two rules has both recorded, although the answer,
# like the real API's, names only the first (`breaks` lets decoding go on where the history is well formed).
# The conformance check (`agentkit.conformance`) reads these logs; outside the simulator's app (a unit test
# calling parse_request) nothing is recorded and the first refusal is raised at once.

#: "answered": an error the simulator answered on purpose (a fault asked for, a scenario's planned 429 or
#: tool-less model): recorded so a report can show it, counted against no client.
OUTCOMES = ("passed", "refused", "degraded", "answered")
#: "messages[3]...", "input[3]", "contents[3]" (OpenAI's and Google's paths) or "messages.3.content.0" (Anthropic's).
_INDEX = re.compile(r"^(?:messages|input|contents)(?:\.?\[(\d+)\]|\.(\d+)(?:\.|$))")


@dataclass(frozen=True)
class Finding:
    """One check of one rule on one request: the ledger id, the outcome, the words, and where."""

    rule: str
    outcome: str  # one of OUTCOMES
    words: str | None = None  # the refusal's message, or what the degradation changes
    where: str | None = None  # the request's path, as the API writes it ("messages[3].content")

    @property
    def message_index(self) -> int | None:
        """The index of the message (item, content) the finding is about, read from `where`."""
        match = _INDEX.match(self.where or "")
        return int(match.group(1) or match.group(2)) if match else None


class RuleLog:
    """The findings of one request, in the order the checks ran."""

    def __init__(self) -> None:
        self.findings: list[Finding] = []
        self._refusals: list[RequestInvalid] = []
        self._passed: set[str] = set()  # rules already recorded as passed: a check run per message counts once

    def passed(self, rule: str, where: str | None = None) -> None:
        if rule not in self._passed:
            self._passed.add(rule)
            self.findings.append(Finding(rule, "passed", None, where))

    def refused(self, error: RequestInvalid) -> None:
        if error not in self._refusals:
            self._refusals.append(error)
            self.findings.append(Finding(error.rule or "unlisted", "refused", error.message, error.param))

    def first_refusal(self) -> RequestInvalid | None:
        return self._refusals[0] if self._refusals else None

    def degradations(self) -> tuple[str, ...]:
        """The rules this request degrades under (the app hands them to the model as
        `ChatRequest.degradations`, so a model can behave as the source reports)."""
        return tuple(dict.fromkeys(f.rule for f in self.findings if f.outcome == "degraded"))


_LOG: ContextVar[RuleLog | None] = ContextVar("agentkit_sim_rule_log", default=None)


@contextmanager
def rule_log() -> Iterator[RuleLog]:
    """Record the rule checks made inside the block (the simulator's app wraps decoding in one)."""
    log = RuleLog()
    token = _LOG.set(log)
    try:
        yield log
    finally:
        _LOG.reset(token)


def holds(rule: str, where: str | None = None) -> None:
    """The request was checked against `rule` (a ledger id) and keeps it; recorded once per request (a
    check that runs per message or per tool says so once)."""
    log = _LOG.get()
    if log is not None:
        log.passed(rule, where)


def breaks(error: RequestInvalid) -> None:
    """The request breaks `error.rule`, and decoding can go on (the request is well formed, only not
    allowed): recorded, and answered once decoding ends unless an earlier refusal came first. Without a
    rule log (outside the app) it is raised at once."""
    log = _LOG.get()
    if log is None:
        raise error
    log.refused(error)


def degrades(rule: str, words: str, where: str | None = None) -> None:
    """The request is accepted, but `rule` says the real API gives a worse result for it (`words`: what
    changes, as the kit models the reported effect)."""
    log = _LOG.get()
    if log is not None:
        log.findings.append(Finding(rule, "degraded", words, where))


# -- checking a tool's parameter schema ---------------------------------------------------------------

#: Schemas nested deeper than this are refused before any recursive validator sees them.
MAX_SCHEMA_DEPTH = 64


def schema_problem(schema: Any) -> str | None:
    """Why `schema` is not a valid JSON Schema (Draft 2020-12), or None when it is.

        schema_problem({"type": "nope"})        ->  "'nope' is not valid under any of the given schemas"
        schema_problem({"properties": -1})      ->  "-1 is not of type 'object'"
    The wording is python-jsonschema's, which is also what OpenAI's 400 quotes. The quick yes comes
    from jsonschema-rs (a few microseconds); only a refusal loads python-jsonschema to explain itself.
    """
    if json_shape(schema, max_depth=MAX_SCHEMA_DEPTH)[1] > MAX_SCHEMA_DEPTH:
        return f"the schema is nested more than {MAX_SCHEMA_DEPTH} levels deep"
    try:
        import jsonschema_rs

        if jsonschema_rs.meta.is_valid(schema):
            return None
    except ImportError:  # pragma: no cover - jsonschema-rs is a dependency; python-jsonschema decides alone
        pass
    except Exception:  # noqa: BLE001 - a value it cannot even read: let python-jsonschema word it
        pass
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match

    error = best_match(Draft202012Validator(Draft202012Validator.META_SCHEMA).iter_errors(schema))
    return None if error is None else error.message


def simulated_thought(turn: ModelTurn, request: ChatRequest) -> str:
    """What the simulator's models "thought" before this turn: one English sentence read from the turn.

    A real model's reasoning is free text the client never parses; this stand-in only has to be
    deterministic (same request, same thought) and honest about what the turn does.
    """
    asked = next((m.content for m in reversed(request.messages) if m.role == "user" and m.content), "")
    asked = asked if len(asked) <= 80 else asked[:77] + "..."
    if turn.tool_calls:
        names = [c.name for c in turn.tool_calls]
        plan = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        how = " in parallel" if len(names) > 1 else ""
        return f"The user asks: \u201c{asked}\u201d. I should call {plan}{how}, then answer from the results."
    results = 0
    for m in reversed(request.messages):
        if m.role == "user":
            break
        results += m.role == "tool"
    if results:
        return f"I have {results} tool result{'s' if results > 1 else ''} for \u201c{asked}\u201d; I can answer now."
    return f"The user asks: \u201c{asked}\u201d. I can answer without a tool."


#: What every simulator signature starts with, inside its base64.
_SIGNATURE_MARK = "agentkit-sim"
#: The variable that sets the signing key (hex, at least 16 bytes), e.g. the same key on every test machine.
SIGNING_KEY_ENV = "AGENTKIT_SIM_SIGNING_KEY"
#: The key's file in the user's cache folder (`agentkit.cache.cache_root`, beside BFCL's data).
SIGNING_KEY_FILE = "sim-signing-key"
_log = logging.getLogger("agentkit.sim")


@functools.lru_cache(maxsize=1)
def signing_key() -> bytes:
    """The simulator's signing key, stable for an installation, as a provider's is for its API: so a run
    paused and saved today (its thinking blocks, thought signatures, encrypted reasoning) resumes after a
    restart, and a signature that was altered, moved or invented is still refused.

    Where it comes from, the first that works: AGENTKIT_SIM_SIGNING_KEY (hex); else the file sim-signing-key
    in the user's cache folder, created once (32 random bytes, readable and writable by its owner only);
    else, when that folder cannot be written, a key made fresh for this process, with a one-line warning
    (signatures then do not survive a restart). No client is given the key, so no client can mint a
    signature the simulator accepts; within one installation the same request gets the same signature."""
    text = os.environ.get(SIGNING_KEY_ENV)
    if text is not None and text.strip():
        try:
            key = bytes.fromhex(text.strip())
        except ValueError:
            raise ValueError(f"{SIGNING_KEY_ENV} is not hex: give the key as hex digits (e.g. "
                             "python -c 'import secrets; print(secrets.token_hex(32))')") from None
        if len(key) < 16:
            raise ValueError(f"{SIGNING_KEY_ENV} holds {len(key)} bytes: give at least 16 (32 hex digits)")
        return key
    from ...cache import cache_root

    path = cache_root() / SIGNING_KEY_FILE
    try:
        return _key_file(path)
    except OSError as exc:
        _log.warning("agentkit.sim: cannot keep a signing key in %s (%s): signatures made now will not be "
                     "accepted after a restart; set %s to keep one", path, exc.strerror or exc, SIGNING_KEY_ENV)
        return secrets.token_bytes(32)


def _key_file(path) -> bytes:
    """The key in `path`, made there first if there is none (two processes racing: one writes, both read it)."""
    try:
        key = bytes.fromhex(path.read_text().strip())
        if len(key) >= 16:
            return key
    except FileNotFoundError:
        pass
    except ValueError:  # a damaged file: made again below
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    fresh = path.with_name(f".{path.name}.{os.getpid()}")
    descriptor = os.open(fresh, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    with os.fdopen(descriptor, "w") as out:
        out.write(secrets.token_hex(32))
    try:
        os.link(fresh, path)  # atomic, and fails when another process made the key first: then its key wins
    except FileExistsError:
        pass
    finally:
        fresh.unlink()
    return bytes.fromhex(path.read_text().strip())


def conversation_of(messages: Any) -> str:
    """The conversation a piece of reasoning state belongs to, as the simulator binds it: the user
    request the turn answers (the latest user message with text before it; "" when there is none)."""
    return next((m.content for m in reversed(list(messages)) if m.role == "user" and m.content), "")


def _seal(kind: str, model: str, payload: Any, conversation: str) -> str:
    text = json.dumps([kind, model, payload, conversation], sort_keys=True, ensure_ascii=False, default=str)
    return hmac.new(signing_key(), text.encode(), hashlib.sha256).hexdigest()[:32]


def mint_signature(kind: str, model: str | None, payload: Any, conversation: str = "") -> str:
    """An opaque signature as the simulator issues them: base64 text, like the real ones.

        mint_signature("gemini-thought", "gemini-3-flash-preview", ["", [["get_weather", {}]]], "Weather?")
        -> "YWdlbnRraXQtc2ltfGdlbWluaS10aG91Z2h0fGdlbWluaS0zLWZsYXNoLXByZXZpZXd8..."
    It names the kind of state and the model that made it, and carries an HMAC (`signing_key()`) over
    those, `payload` (what it signs: a thinking text, a call, an item id) and `conversation` (see
    `conversation_of`). `signature_valid` recomputes the HMAC from what comes back, so a signature that
    was altered, cut, invented, moved onto other content or into another conversation is refused.
    """
    model = model or "*"
    tag = _seal(kind, model, payload, conversation)
    return base64.b64encode(f"{_SIGNATURE_MARK}|{kind}|{model}|{tag}".encode()).decode()


def signature_fields(signature: Any) -> tuple[str, str, str] | None:
    """(kind, model, tag) of something shaped like a `mint_signature` signature, or None for anything else.
    The shape says nothing about validity: only `signature_valid` checks the tag."""
    if not isinstance(signature, str):
        return None
    try:
        text = base64.b64decode(signature, validate=True).decode()
    except (binascii.Error, ValueError):
        return None
    parts = text.split("|")
    if len(parts) != 4 or parts[0] != _SIGNATURE_MARK or len(parts[3]) != 32:  # a cut one is no signature
        return None
    return parts[1], parts[2], parts[3]


def signature_valid(signature: Any, kind: str, payload: Any, conversation: str = "") -> bool:
    """Did this installation's simulator mint `signature` for this kind of state, over this payload, in this
    conversation?
    Any model it names will do (Gemini takes another Gemini model's signature); the HMAC covers the name,
    so it cannot be changed either."""
    fields = signature_fields(signature)
    if fields is None or fields[0] != kind:
        return False
    return hmac.compare_digest(fields[2], _seal(kind, fields[1], payload, conversation))


# -- formats that keep nothing between requests ------------------------------------------------------------
# Every API but OpenAI Responses answers each request from its body alone: these are their stored-state
# verbs of the contract (`resolve_stored`, `stored_records`, `stored_response_id`).

def nothing_stored(body: dict, recall: Any) -> dict:
    """The body as sent: this API resolves no references to earlier responses."""
    return body


def no_records(body: dict, response: dict) -> dict:
    """Nothing to remember: this API stores no responses."""
    return {}
