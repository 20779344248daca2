"""Ollama's native chat API (`POST /api/chat`): the client side, as pure functions.

The format people use to run open models locally, and a genuinely different wire from OpenAI's:

* Arguments are a JSON **object**: a call is `{"function": {"index", "name", "arguments": {...}}}`
  (recent servers add an `id`, `call_…`; the documented history examples leave it out).
* A result **names the tool** rather than answering an id: `{"role": "tool", "tool_name":
  "get_weather", "content": "…"}`. This codec also echoes `tool_call_id` when the call came with a real
  id (the server's Message type has the field); calls without one get made-up ids, marked with
  SYNTHETIC_ID_PREFIX and never sent back, exactly as the Gemini codec does.
* Streaming is **newline-delimited JSON** (`application/x-ndjson`), not SSE: one ChatResponse object per
  line, `"done": false` until the last, which carries `done_reason` and the counters. Tool calls arrive
  whole, one or more per line, never as argument fragments. And streaming is the **default**: a request
  without `"stream": false` streams, so `build_request` always states it.
* Usage is `prompt_eval_count` / `eval_count`; timings are nanoseconds (`total_duration`, ...).
* No `tool_choice` and no parallel switch: "none" is sent as no tools, a named tool as that one tool
  alone (the model may still answer in text), "required" cannot be expressed.
* Generation settings go in `options` (`temperature`, `num_predict` for the token cap).
* Errors are `{"error": "message"}` with the HTTP status (400, 404, 429, 500, 502, 503); an error after
  a stream started is one more line, `{"error": "..."}`, with the status already 200. The most reported
  one: tools for a model without tool support, `400 registry.ollama.ai/library/llama2:13b does not support
  tools` (`parse_error` makes it a ToolsNotSupportedError naming the model).
* A local Ollama needs no key; ollama.com (`https://ollama.com/api`) wants `Authorization: Bearer`.
  Models are listed at `GET /api/tags`.
* A thinking model (`"think": true`) answers with `message.thinking` beside `content` (streamed as
  `thinking` pieces first). It is the turn's ReasoningState here and goes back on the assistant message,
  as the docs' tool-calling loop does by appending the whole message; Ollama does not refuse a
  conversation without it (whether a model's template uses it is the model's business).

    from agentkit.providers import ollama
    wire = ollama.build_request("qwen3", messages, tools, ModelOptions())
    # POST http://localhost:11434 + wire.path, json=wire.body (no key needed locally)
    turn = ollama.parse_response(response_json)

Left out on purpose: images, `format` (structured output, kept in `extras`), `keep_alive`, logprobs,
the "load"/"unload" answers to an empty message list (the simulator answers those like any request),
and `/api/generate`.

The server half of the format (what the simulator answers) is `agentkit.sim.wire.ollama`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from ..core.errors import BadResponseError, ProviderError, ServerError, ToolsNotSupportedError, error_for_status
from ..core.types import (
    Message,
    ModelOptions,
    ModelTurn,
    ReasoningDelta,
    ReasoningState,
    StreamDelta,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolChoice,
    ToolSpec,
    TurnStop,
    Usage,
)
from .common import (
    WireRequest,
    body_text,
    event_object,
    json_or_none,
    no_stored_id,
    own_reasoning,
    retry_after_seconds,
    stable_id,
)

NAME = "ollama"
DEFAULT_BASE_URL = "http://localhost:11434"
PATH = "/api/chat"
API_KEY_ENVS = ("OLLAMA_API_KEY",)
KEY_REQUIRED = False  # a local server takes none; ollama.com's cloud API wants OLLAMA_API_KEY
DEFAULT_MODEL = "qwen3"
STREAM_FRAMING = "ndjson"
SERVER_SIDE_FALLBACK = False
CONTINUATION_FIELD = None  # /api/chat keeps no conversation

#: Ids this codec invents for calls that came without one; never sent back to the server.
SYNTHETIC_ID_PREFIX = "ollama_synth_"

#: done_reason -> neutral stop ("load"/"unload" answer an empty message list: no generation at all).
DONE_TO_STOP: dict[str, TurnStop] = {"stop": "stop", "length": "length", "load": "other", "unload": "other"}


# --- tool definitions ------------------------------------------------------------------------------

def tool_to_wire(spec: ToolSpec) -> dict:
    """A ToolSpec as Ollama wants it: OpenAI Chat's nesting, `{"type": "function", "function": {...}}`."""
    function: dict[str, Any] = {"name": spec.name}
    if spec.description:
        function["description"] = spec.description
    function["parameters"] = spec.parameters
    return {"type": "function", "function": function}


# --- client side: the request ----------------------------------------------------------------------

def auth_headers(api_key: str) -> dict:
    """ollama.com's bearer header (a local Ollama ignores it)."""
    return {"Authorization": f"Bearer {api_key}"}


def tool_choice_to_wire(choice: ToolChoice, parallel: bool | None = None) -> None:
    """None: the API has no tool_choice field (see `build_request` for what is sent instead)."""
    return None


def is_synthetic_id(call_id: str | None) -> bool:
    """True for an id this codec made up (the server never saw it, so it must not be sent)."""
    return bool(call_id) and call_id.startswith(SYNTHETIC_ID_PREFIX)


def build_request(model: str, messages: Sequence[Message], tools: Sequence[ToolSpec] = (),
                  options: ModelOptions | None = None, **extras: Any) -> WireRequest:
    """The POST body for one model call. `stream` is always stated (the API streams by default).

    tool_choice "none" sends no tools; {"name": X} sends tool X alone; "required" and the parallel
    switch have no equivalent. `extras` are further body fields (`keep_alive`, `format`, `think`, ...).
    """
    options = options or ModelOptions()
    body: dict[str, Any] = {"model": model, "messages": _messages_to_wire(messages, model)}
    offered = list(tools)
    if options.tool_choice == "none":
        offered = []
    elif isinstance(options.tool_choice, dict):
        offered = [t for t in offered if t.name == options.tool_choice.get("name")] or offered
    if offered:
        body["tools"] = [tool_to_wire(t) for t in offered]
    generation: dict[str, Any] = {}
    if options.temperature is not None:
        generation["temperature"] = options.temperature
    if options.max_tokens is not None:
        generation["num_predict"] = options.max_tokens
    if generation:
        body["options"] = generation
    body["stream"] = bool(options.stream)
    body.update(extras)
    return WireRequest(PATH, body, {}, stream=bool(options.stream))


def _messages_to_wire(messages: Sequence[Message], model: str) -> list[dict]:
    names = {c.id: c.name for m in messages for c in m.tool_calls}  # for results that lack a name
    wire: list[dict] = []
    for m in messages:
        if m.role == "tool":
            result: dict[str, Any] = {"role": "tool", "content": m.content or "",
                                      "tool_name": m.name or names.get(m.tool_call_id or "", "")}
            if m.tool_call_id and not is_synthetic_id(m.tool_call_id):
                result["tool_call_id"] = m.tool_call_id
            wire.append(result)
        elif m.role == "assistant" and m.tool_calls:
            calls = []
            for index, call in enumerate(m.tool_calls):
                entry: dict[str, Any] = {"function": {"index": index, "name": call.name,
                                                      "arguments": call.arguments_object()}}
                if call.id and not is_synthetic_id(call.id):
                    entry = {"id": call.id, **entry}
                calls.append(entry)
            wire.append({"role": "assistant", "content": m.content or "", "tool_calls": calls})
        else:
            wire.append({"role": m.role, "content": m.content or ""})
        state = own_reasoning(m, NAME, model) if m.role == "assistant" else None
        for item in state.items if state else ():
            wire[-1].update(item)  # {"thinking": "..."}, as the model wrote it
    return wire


def reasoning_of(thinking: Any, model: Any) -> ReasoningState | None:
    """A message's `thinking` text as reasoning state (None when there is none)."""
    if not isinstance(thinking, str) or not thinking:
        return None
    return ReasoningState(NAME, model if isinstance(model, str) else None, ({"thinking": thinking},))


# --- client side: the response ---------------------------------------------------------------------

def synthetic_ids(seed: Any, calls: list[tuple[Any, Any]]) -> list[str]:
    """Stable made-up ids for id-less calls: same answer, same calls -> same ids (`…_0`, `…_1`)."""
    digest = stable_id(seed, calls, length=10)
    return [f"{SYNTHETIC_ID_PREFIX}{digest}_{i}" for i in range(len(calls))]


def parse_response(body: Any) -> ModelTurn:
    """A ChatResponse (`{"message": {...}, "done": true, ...}`) as a ModelTurn.

    Each `message.tool_calls[]` entry becomes a ToolCall whose raw arguments are the `arguments` object;
    calls without an `id` get synthetic ids. A 200 body that is `{"error": ...}` raises its error.
    """
    if not isinstance(body, dict):
        raise BadResponseError("the response is not an Ollama chat response (not an object)", provider=NAME,
                               body=body)
    if "error" in body:
        raise _in_stream_error(body)
    message = body.get("message")
    if not isinstance(message, dict):
        raise BadResponseError("the response has no message", provider=NAME, body=body)
    wire_calls = message.get("tool_calls") or []
    if not isinstance(wire_calls, list):
        raise BadResponseError("message.tool_calls is not a list", provider=NAME, body=body)
    return _turn(message.get("content"), [c for c in wire_calls if isinstance(c, dict)], body, body,
                 message.get("thinking"))


def _turn(content: Any, wire_calls: list[dict], final: dict, raw: dict, thinking: Any = None) -> ModelTurn:
    # One constructor for the plain and the streamed path, so both give the same ModelTurn.
    functions = [c.get("function") if isinstance(c.get("function"), dict) else {} for c in wire_calls]
    invented = synthetic_ids([final.get("model"), final.get("created_at")],
                             [(f.get("name"), f.get("arguments")) for f in functions])
    calls = []
    for k, (call, function) in enumerate(zip(wire_calls, functions)):
        call_id = call.get("id") if isinstance(call.get("id"), str) and call.get("id") else invented[k]
        arguments = function.get("arguments")
        raw_arguments = arguments if isinstance(arguments, (dict, str)) else {}
        calls.append(ToolCall.from_raw(call_id, str(function.get("name") or ""), raw_arguments))
    native = final.get("done_reason") if isinstance(final.get("done_reason"), str) else None
    stop: TurnStop = DONE_TO_STOP.get(native, "other") if native else "stop"
    if calls and stop == "stop":
        stop = "tool_calls"
    model = final.get("model")
    return ModelTurn(content if isinstance(content, str) and content else None, tuple(calls), stop, native,
                     Usage(_count(final.get("prompt_eval_count")), _count(final.get("eval_count"))),
                     model if isinstance(model, str) else None, None, raw, reasoning_of(thinking, model))


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _in_stream_error(body: dict) -> ProviderError:
    """`{"error": "..."}` inside a 200 (a stream's last line): the model runner failed, a ServerError.

    The line carries no status; the docs' example is a failure while running the model, so it is
    treated as a 500, which is retryable.
    """
    return ServerError(str(body.get("error") or "error in the stream"), status=500, provider=NAME, body=body)


class StreamAssembler:
    """Rebuilds a streamed answer from its NDJSON lines into the ModelTurn `parse_response` would give.

        assembler = StreamAssembler()
        for line in response.iter_lines():        # one JSON object per line, no SSE framing
            if line:
                assembler.feed(None, line)
        turn = assembler.turn()

    Content pieces are joined; tool calls arrive whole and are collected in order; the `done: true`
    line brings done_reason and the counters. `{"error": ...}` raises a ServerError; `turn()` raises
    BadResponseError when the stream ended before its `done: true` line. `feed` returns the line's
    pieces: content, thinking, and each call whole (its arguments as JSON text, in one piece).
    """

    def __init__(self) -> None:
        self.content: list[str] = []
        self.thinking: list[str] = []
        self.calls: list[dict] = []
        self.final: dict | None = None
        self.lines: list[dict] = []

    def feed(self, event: str | None, data: str) -> list[StreamDelta]:
        pieces: list[StreamDelta] = []
        if self.final is not None or not data or not data.strip():
            return pieces
        line = event_object(data, NAME)
        if "error" in line:
            raise _in_stream_error(line)
        self.lines.append(line)
        message = line.get("message") if isinstance(line.get("message"), dict) else {}
        if isinstance(message.get("content"), str):
            self.content.append(message["content"])
            if message["content"]:
                pieces.append(TextDelta(message["content"]))
        if isinstance(message.get("thinking"), str):
            self.thinking.append(message["thinking"])
            if message["thinking"]:
                pieces.append(ReasoningDelta(message["thinking"]))
        calls = message.get("tool_calls")
        for call in calls if isinstance(calls, list) else []:
            if not isinstance(call, dict):
                continue
            function = call.get("function") if isinstance(call.get("function"), dict) else {}
            arguments = function.get("arguments")  # an object, as Ollama sends it (text from a few servers)
            text = arguments if isinstance(arguments, str) else json.dumps(
                arguments if isinstance(arguments, dict) else {}, ensure_ascii=False)
            call_id = call.get("id") if isinstance(call.get("id"), str) and call.get("id") else None
            pieces.append(ToolCallDelta(len(self.calls), text, call_id,
                                        str(function.get("name") or "")))
            self.calls.append(call)
        if line.get("done") is True:
            self.final = line
        return pieces

    def turn(self) -> ModelTurn:
        if self.final is None:
            raise BadResponseError("the stream ended before its `done: true` line", provider=NAME)
        return _turn("".join(self.content), self.calls, self.final, {"lines": self.lines},
                     "".join(self.thinking))


#: Ollama keeps nothing between requests (contract: stored state).
stored_response_id = no_stored_id


#: The server's refusal of tools for a model without the "tools" capability (400), the model as it resolved it:
#: "registry.ollama.ai/library/llama2:13b does not support tools".
TOOLS_NOT_SUPPORTED = re.compile(r"(?:registry\.ollama\.ai/library/)?(?P<model>\S+) does not support tools")


def parse_error(status: int, body: Any, headers: Any = None) -> ProviderError:
    """`{"error": "message"}` -> the ProviderError subclass for the status; non-JSON bodies are quoted.

    A model without tool support is a ToolsNotSupportedError naming it ("llama2:13b"): not retried, and a
    fallback list moves on to the next model."""
    data = json_or_none(body)
    error = data.get("error") if isinstance(data, dict) else None
    message = str(error) if error else body_text(body) or f"HTTP {status}"
    no_tools = TOOLS_NOT_SUPPORTED.fullmatch(message) if status == 400 else None
    cls = ToolsNotSupportedError if no_tools else error_for_status(status)
    return cls(message, status=status, provider=NAME, retry_after=retry_after_seconds(headers),
               model=no_tools.group("model") if no_tools else None, body=data if data is not None else body)
