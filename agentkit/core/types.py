"""The vocabulary of a tool-calling run: flat, frozen, JSON-serialisable dataclasses.

Every other module speaks in these five words, whatever the provider:

    Message     one entry of the conversation (system, user, assistant, or a tool's result)
    ToolCall    the model asking for one tool with arguments (raw as received, and parsed)
    ToolResult  the application's answer to one ToolCall (the envelope the model reads)
    ModelTurn   one model response: text, tool calls, stop signal, usage, raw JSON
    Usage       token counts

Plus `ToolSpec` (what a model is told about a tool), `ModelOptions` (per-request switches),
`ReasoningState` (what a reasoning model hands back with its turn and wants returned untouched:
Anthropic's signed thinking blocks, Gemini's thought signatures, OpenAI's reasoning items, ...), and the
pieces of a turn as it streams in: `TextDelta`, `ReasoningDelta`, `ToolCallDelta`.

`to_dict()` / `from_dict()` turn each into plain JSON and back; tuples are used instead of lists so
that a frozen value really cannot change under you. The classes use __slots__: the loop builds several
of them per step, and slotted instances are smaller and quicker to make.

Left out on purpose: images, audio and other non-text content, and provider-specific fields (those
stay in `ModelTurn.raw`) — except reasoning state, which must travel with the conversation, so it rides
on the assistant Message opaquely: only the codec that wrote it reads it.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Union

Role = Literal["system", "user", "assistant", "tool"]

#: "auto" (model decides), "none" (no tools), "required" (some tool), {"name": "x"} (that tool), or
#: {"allowed": ["x", "y"], "mode": "auto" | "required"} (only those tools; OpenAI's allowed_tools: every
#: tool is still sent, so a prompt cache survives a change of subset).
ToolChoice = Union[Literal["auto", "none", "required"], dict]

#: Provider-neutral stop signals of one model turn (the provider's own value is kept beside it).
TurnStop = Literal["tool_calls", "stop", "length", "content_filter", "other"]


def _plain(obj: Any) -> Any:
    """asdict() keeps tuples; JSON wants lists."""
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    return obj


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens one model call (or a run, summed) used, as the provider reported them.

    `reasoning_tokens` are part of `output_tokens`. `cached_tokens` (read from the provider's prompt
    cache, billed at a lower price) and `cache_write_tokens` (written to it, billed at a higher one) are
    part of `input_tokens`; `cache_write_1h_tokens` are the part of the writes that stay an hour
    (Anthropic's `ttl: "1h"`, billed higher again). Each is 0 when the format does not report it.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0  # of output_tokens: thinking the model did before answering
    cached_tokens: int = 0  # of input_tokens: read from the provider's prompt cache
    cache_write_tokens: int = 0  # of input_tokens: written to the provider's prompt cache
    cache_write_1h_tokens: int = 0  # of cache_write_tokens: written for an hour rather than the default

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __repr__(self) -> str:
        """The four counts every format has; the cache writes only when there are some (as `to_dict`)."""
        shown = [n for n in _USAGE_FIELDS if n in _USAGE_FIELDS[:4] or getattr(self, n)]
        return "Usage(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in shown) + ")"

    def __add__(self, other: Usage) -> Usage:
        return Usage(*(getattr(self, name) + getattr(other, name) for name in _USAGE_FIELDS))

    def to_dict(self) -> dict:
        """Zero reasoning and cache counts are left out: a usage without them serialises as it always did."""
        d = {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}
        for name in _USAGE_FIELDS[2:]:
            if getattr(self, name):
                d[name] = getattr(self, name)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> Usage:
        return cls(*(int(d.get(name, 0)) for name in _USAGE_FIELDS))


_USAGE_FIELDS = ("input_tokens", "output_tokens", "reasoning_tokens", "cached_tokens", "cache_write_tokens",
                 "cache_write_1h_tokens")


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What the model is told about one tool: the part of a `Tool` that goes on the wire."""

    name: str
    description: str = ""
    parameters: dict = field(default_factory=lambda: {"type": "object", "properties": {}})
    strict: bool = False

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> ToolSpec:
        parameters = d["parameters"] if "parameters" in d else {"type": "object", "properties": {}}
        return cls(name=d["name"], description=d.get("description", ""), parameters=parameters,
                   strict=bool(d.get("strict", False)))


def json_shape(value: Any, *, max_depth: int | None = None, max_size: int | None = None) -> tuple[int, int]:
    """(about how many characters `value` takes as JSON, how deeply it nests), without recursion.

    Stops early, with the figures so far, once the depth passes `max_depth` or the size `max_size`: an
    object nested 10,000 deep or ten megabytes wide is measured only as far as a limit needs. The size
    counts strings exactly and other scalars as 8: close enough for limits and request sizes.
    """
    stack: list[tuple[Any, int]] = [(value, 1)]
    size = depth = 0
    while stack:
        node, level = stack.pop()
        if isinstance(node, (dict, list, tuple)):
            depth = max(depth, level)
            if max_depth is not None and depth > max_depth:
                break
            size += 2 + len(node)
            if isinstance(node, dict):
                for key, child in node.items():
                    size += len(key) + 3 if isinstance(key, str) else 8
                    stack.append((child, level + 1))
            else:
                stack.extend((child, level + 1) for child in node)
        elif isinstance(node, str):
            size += len(node) + 2
        else:
            size += 8  # a number, bool or null
        if max_size is not None and size > max_size:
            break
    return size, depth


def parse_arguments(raw: str | dict | None) -> dict | None:
    """Best-effort parse used by codecs; the strict, explaining parse is gate 1 in `validate`."""
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str):
        return None
    try:
        value = json.loads(raw) if raw.strip() else {}
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


@dataclass(frozen=True, slots=True)
class ToolCall:
    """The model asks the application to run `name` with these arguments; `id` links the answer.

    `raw_arguments` is exactly what arrived: a JSON *string* from OpenAI-style APIs, an *object* from
    Anthropic, Gemini and MCP. `arguments` is the parsed object, or None when it was not one.

    Written by hand (a scripted model's call), either says it: `ToolCall("c1", "get_weather",
    arguments={"city": "Tokyo"})` is the call whose raw arguments are that object's JSON text, the same
    call `agentkit.call("get_weather", {"city": "Tokyo"}, id="c1")` makes. (The gates read the raw
    arguments, so a call given only `arguments` gets them written out rather than checked as `{}`.)
    """

    id: str
    name: str
    raw_arguments: str | dict = "{}"
    arguments: dict | None = None

    def __post_init__(self) -> None:
        arguments = self.arguments
        if arguments is None or self.raw_arguments != "{}":  # what the codecs build: raw as it arrived
            return
        if not isinstance(arguments, dict):
            raise TypeError(f"ToolCall arguments={arguments!r}: the parsed arguments are a dict (or give "
                            "raw_arguments, the text or object as it arrived)")
        if arguments:  # only arguments given: the raw text is theirs, so the gates check what was meant
            object.__setattr__(self, "raw_arguments", json.dumps(arguments, ensure_ascii=False))

    @classmethod
    def from_raw(cls, id: str, name: str, raw: str | dict | None) -> ToolCall:
        raw = "" if raw is None else raw
        return cls(id=id, name=name, raw_arguments=raw, arguments=parse_arguments(raw))

    def arguments_json(self) -> str:
        """The arguments as the JSON string OpenAI-style APIs carry (raw text kept when it was text)."""
        if isinstance(self.raw_arguments, str):
            return self.raw_arguments
        return json.dumps(self.raw_arguments, ensure_ascii=False)

    def arguments_object(self) -> dict:
        """The arguments as the object Anthropic/Gemini/MCP carry ({} when they never parsed)."""
        return self.arguments if self.arguments is not None else {}

    def to_dict(self) -> dict:
        return _plain(asdict(self))

    @classmethod
    def from_dict(cls, d: dict) -> ToolCall:
        return cls(id=d["id"], name=d["name"], raw_arguments=d.get("raw_arguments", "{}"), arguments=d.get("arguments"))


# Built once: json.dumps(value, ensure_ascii=False, default=str) would build a new encoder on every call.
_ENVELOPE_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)
_json_string = json.encoder.encode_basestring  # a str as JSON text, non-ASCII kept (as ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The application's answer to one call, in the stable envelope the model reads.

    ok:    {"toolCallId", "name", "ok": true,  "result": ...}
    error: {"toolCallId", "name", "ok": false, "error": {"kind", "message", "path", "keyword"}}

    `text` overrides the envelope when a tool or policy supplies its own exact words.
    """

    call_id: str
    name: str
    ok: bool
    result: Any = None
    error: dict | None = None
    text: str | None = None

    @classmethod
    def success(cls, call: ToolCall, result: Any) -> ToolResult:
        return cls(call.id, call.name, True, result)  # positional: built once per call, on the hot path

    @classmethod
    def failure(cls, call: ToolCall, kind: str, message: str, path: str | None = None,
                keyword: str | None = None, text: str | None = None) -> ToolResult:
        error = {"kind": kind, "message": message, "path": path, "keyword": keyword}
        return cls(call_id=call.id, name=call.name, ok=False, error=error, text=text)

    @property
    def error_kind(self) -> str | None:
        return self.error["kind"] if self.error else None

    def envelope(self) -> dict:
        if self.ok:
            return {"toolCallId": self.call_id, "name": self.name, "ok": True, "result": self.result}
        return {"toolCallId": self.call_id, "name": self.name, "ok": False, "error": self.error}

    def content(self) -> str:
        """The exact text sent back to the model: json.dumps(self.envelope(), ensure_ascii=False), or `text`."""
        if self.text is not None:
            return self.text
        if not (isinstance(self.call_id, str) and isinstance(self.name, str)):
            return _ENVELOPE_ENCODER.encode(self.envelope())
        # The envelope's JSON written out: it is built for every call, and its fixed head needs no encoder
        # (tests/test_types.py checks that this is always exactly json.dumps of the envelope).
        head = f'{{"toolCallId": {_json_string(self.call_id)}, "name": {_json_string(self.name)}, '
        if self.ok:
            return f'{head}"ok": true, "result": {_ENVELOPE_ENCODER.encode(self.result)}}}'
        return f'{head}"ok": false, "error": {_ENVELOPE_ENCODER.encode(self.error)}}}'

    def to_dict(self) -> dict:
        return _plain(asdict(self))

    @classmethod
    def from_dict(cls, d: dict) -> ToolResult:
        return cls(call_id=d["call_id"], name=d["name"], ok=d["ok"], result=d.get("result"), error=d.get("error"),
                   text=d.get("text"))


#: A dated snapshot suffix ("-20250929", "-2025-08-07"): the same model as the alias without it.
_SNAPSHOT = re.compile(r"-(?:\d{8}|\d{4}-\d{2}-\d{2})$")


def same_model(a: str | None, b: str | None) -> bool:
    """Do two model names name the same model? A `models/` prefix and a dated snapshot suffix are ignored.

        same_model("claude-sonnet-4-5", "claude-sonnet-4-5-20250929")   ->  True
        same_model("gpt-5", "gpt-5-mini")                               ->  False
    """
    if not a or not b:
        return False
    a, b = (_SNAPSHOT.sub("", n.removeprefix("models/")) for n in (a, b))
    return a == b


#: The type of a ReasoningState item that is no reasoning but the message's own fields (see ReasoningState).
MESSAGE_FIELDS = "message"


@dataclass(frozen=True, slots=True)
class ReasoningState:
    """Provider reasoning state that came with an assistant turn and must go back with it, untouched.

    Reasoning models hand the client opaque state between tool calls and refuse (or quietly degrade) the
    next request when it is missing: Anthropic's `thinking` blocks with their `signature`, Gemini's
    `thoughtSignature` on a `functionCall` part, OpenAI's `reasoning` items, OpenRouter's
    `reasoning_details`, DeepSeek-style `reasoning_content`, Ollama's `thinking`.

        format   the wire format whose codec wrote it ("anthropic", "gemini", ...)
        model    the model that produced it
        items    that codec's own JSON pieces, in order; nobody else reads them

    A signature is only valid for the API and model that made it, so a codec sends the state back only
    when `usable_for(its format, the request's model)`; anywhere else it is dropped, never forwarded.

    One kind of item is not reasoning: an item of type "message" holds the message's own fields that must
    go back with it (OpenAI Responses' `phase`, without which GPT-5.4 and later stop early). It is bound to
    nothing before it, so a history that leaves reasoning out keeps it (`without_reasoning`).
    """

    format: str
    model: str | None
    items: tuple[dict, ...] = ()

    def usable_for(self, format: str, model: str) -> bool:
        """May a request in `format` to `model` carry this state? Only the API and model that made it."""
        return self.format == format and same_model(self.model, model)

    def without_reasoning(self) -> ReasoningState | None:
        """This state with its reasoning left out: only its "message" items (the message's own fields, such
        as Responses' `phase`), or None when there are none."""
        kept = tuple(item for item in self.items if item.get("type") == MESSAGE_FIELDS)
        if len(kept) == len(self.items):
            return self
        return ReasoningState(self.format, self.model, kept) if kept else None

    def __repr__(self) -> str:  # the items can be kilobytes of encrypted text: name their kinds only
        kinds = ", ".join(str(i.get("type") or next(iter(i), "?")) for i in self.items)
        return f"ReasoningState({self.format!r}, {self.model!r}, [{kinds}])"

    def to_dict(self) -> dict:
        return _plain(asdict(self))

    @classmethod
    def from_dict(cls, d: dict) -> ReasoningState:
        return cls(format=d["format"], model=d.get("model"), items=tuple(d.get("items") or ()))


def _reasoning(d: dict | None) -> ReasoningState | None:
    return ReasoningState.from_dict(d) if d else None


def _without_empty_reasoning(d: dict) -> dict:
    """No `"reasoning": null` key: a turn without reasoning state serialises as it always did."""
    if d.get("reasoning") is None:
        d.pop("reasoning", None)
    return d


@dataclass(frozen=True, slots=True)
class Message:
    """One entry of the conversation.

    role="tool" messages answer one call: `tool_call_id` and `name` say which, `is_error` marks a failure
    (Anthropic's is_error, MCP's isError; other formats put it in the text). An assistant message may
    carry the provider's `reasoning` state (see ReasoningState), which its codec sends back.
    """

    role: Role
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    reasoning: ReasoningState | None = None

    @classmethod
    def system(cls, text: str) -> Message:
        return cls(role="system", content=text)

    @classmethod
    def user(cls, text: str) -> Message:
        return cls(role="user", content=text)

    @classmethod
    def assistant(cls, text: str | None = None, tool_calls: tuple[ToolCall, ...] | list = (),
                  reasoning: ReasoningState | None = None) -> Message:
        if reasoning is None:  # positional: one per model turn, on the hot path
            return cls("assistant", text, tuple(tool_calls))
        return cls("assistant", text, tuple(tool_calls), reasoning=reasoning)

    @classmethod
    def tool(cls, result: ToolResult) -> Message:
        # positional (role, content, tool_calls, tool_call_id, name, is_error): one per call, on the hot path
        return cls("tool", result.content(), (), result.call_id, result.name, not result.ok)

    def to_dict(self) -> dict:
        return _without_empty_reasoning(_plain(asdict(self)))

    @classmethod
    def from_dict(cls, d: dict) -> Message:
        calls = tuple(ToolCall.from_dict(c) for c in d.get("tool_calls") or ())
        return cls(role=d["role"], content=d.get("content"), tool_calls=calls, tool_call_id=d.get("tool_call_id"),
                   name=d.get("name"), is_error=bool(d.get("is_error", False)),
                   reasoning=_reasoning(d.get("reasoning")))


@dataclass(frozen=True, slots=True)
class ModelTurn:
    """One model response, whatever the provider.

    `stop` is provider-neutral; `native_stop` is the provider's own word ("tool_use", "STOP", ...).
    `raw` keeps the provider JSON for the curious and the trace (excluded from equality). `reasoning` is
    the provider's reasoning state, which `as_message()` keeps so the next request can send it back.
    """

    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    stop: TurnStop = "stop"
    native_stop: str | None = None
    usage: Usage = field(default_factory=Usage)
    model: str | None = None
    id: str | None = None
    raw: dict | None = field(default=None, compare=False, repr=False)
    reasoning: ReasoningState | None = None

    def as_message(self) -> Message:
        return Message.assistant(self.text, self.tool_calls, self.reasoning)

    def to_dict(self) -> dict:
        d = _without_empty_reasoning(_plain(asdict(self)))
        d["usage"] = self.usage.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict) -> ModelTurn:
        return cls(text=d.get("text"), tool_calls=tuple(ToolCall.from_dict(c) for c in d.get("tool_calls") or ()),
                   stop=d.get("stop", "stop"), native_stop=d.get("native_stop"),
                   usage=Usage.from_dict(d.get("usage") or {}), model=d.get("model"), id=d.get("id"), raw=d.get("raw"),
                   reasoning=_reasoning(d.get("reasoning")))


@dataclass(frozen=True, slots=True)
class ModelOptions:
    """Per-request switches the loop hands to a model together with the messages and tools."""

    tool_choice: ToolChoice = "auto"
    parallel_tool_calls: bool | None = None  # None: the provider's default (parallel on)
    stream: bool = False
    max_tokens: int | None = None
    temperature: float | None = None

    def to_dict(self) -> dict:
        return _plain(asdict(self))

    @classmethod
    def from_dict(cls, d: dict) -> ModelOptions:
        return cls(tool_choice=d.get("tool_choice", "auto"), parallel_tool_calls=d.get("parallel_tool_calls"),
                   stream=bool(d.get("stream", False)), max_tokens=d.get("max_tokens"),
                   temperature=d.get("temperature"))


# -- a turn as it streams in --------------------------------------------------------------------------------
# Each delta has a `kind`, like a trace Event, so one `match event.kind` reads a run's stream
# (agentkit.run_stream): the model's pieces and the loop's own events side by side.


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of the answer's text as it arrives: a turn's text deltas join into `ModelTurn.text`."""

    text: str
    kind = "text_delta"


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """A piece of the model's visible reasoning (Anthropic's thinking, a Gemini thought summary, a
    Responses reasoning summary, DeepSeek's or Ollama's thinking), where the provider streams it. Shown, not
    sent back: what goes back is the turn's `ReasoningState`, signed or encrypted as the provider gave it."""

    text: str
    kind = "reasoning_delta"


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A piece of one tool call as it arrives.

        index      the call's place in the turn (`turn.tool_calls[index]`), the same for all its pieces
        arguments  a fragment of its arguments' JSON text: the pieces of one call join into the text
                   (an API that sends a call whole, as Gemini and Ollama do, sends it as one piece)
        id, name   with the call's first piece, where the API sends them there (else None)

    Partial JSON is not yet a call: the loop takes a call through its gates only once the turn is whole.
    """

    index: int
    arguments: str = ""
    id: str | None = None
    name: str | None = None
    kind = "tool_call_delta"


#: What a streamed turn is made of, in the order it arrives.
StreamDelta = Union[TextDelta, ReasoningDelta, ToolCallDelta]


def deltas_of(turn: ModelTurn) -> list[StreamDelta]:
    """A whole turn as the deltas a stream of it would bring, one piece each: what a model that cannot
    stream (ScriptedModel, a FunctionModel, your own) hands a streaming run."""
    pieces: list[StreamDelta] = [TextDelta(turn.text)] if turn.text else []
    pieces += [ToolCallDelta(i, call.arguments_json(), call.id, call.name) for i, call in enumerate(turn.tool_calls)]
    return pieces
