"""The OpenAI Responses format (`POST /v1/responses`): the client side, as pure functions.

What is special about tool calling here, compared with Chat Completions:

* The conversation is a list of **items**, not messages: user/system/assistant messages, then
  `{"type": "function_call", "call_id", "name", "arguments"}` items for the calls and
  `{"type": "function_call_output", "call_id", "output"}` items for their results. A system prompt can
  also go in the top-level `instructions` (this codec puts a leading system message there).
* A tool is flat: `{"type": "function", "name", "description", "parameters", "strict"}`. Leave `strict`
  out and the API makes the tool strict, so this codec always states it.
* A call has two ids: the item `id` (`fc_…`, used by stream events) and `call_id` (`call_…`, the one a
  result answers). Only `call_id` links results; it is the kit's `ToolCall.id`.
* There is no "tool_calls" stop value: `status` is "completed" and the calls are the `function_call`
  items in `output[]`. A cut-off answer is `status: "incomplete"` with `incomplete_details.reason`.
* Streams are named events, each with a rising `sequence_number`, and end with `response.completed`
  (or `.incomplete` / `.failed`), never `[DONE]`. A call streams as `output_item.added`, N ×
  `function_call_arguments.delta`, `function_call_arguments.done`, `output_item.done`.
* `usage` counts `input_tokens` / `output_tokens` (not prompt/completion), with every detail counter.
* Reasoning models (GPT-6, the o-series) put `reasoning` items (`rs_…`, with `summary` and
  `encrypted_content`) before the calls they led to. They are the turn's ReasoningState here, kept in
  output order with the calls' item ids, and sent back together with those calls (same model only). The
  API refuses a reasoning item without its following item, and a stored call sent without its reasoning
  item. With `store` (the default) the API keeps the response: a request with `previous_response_id`
  continues from it and sends only the new items (`CONTINUATION_FIELD`, `stored_response_id`); an
  unknown id is refused with `code: "previous_response_not_found"`; an item referenced by id that the
  server never stored (`store: false`) is a 404 ("Item with id '…' not found.").
* `phase` on assistant messages (`commentary` / `final_answer`; GPT-5.3 Codex, GPT-5.4, GPT-5.5 and their
  Pro variants): the codec keeps it in the turn's ReasoningState (`{"type": "message", "phase": …}`
  where the message stood) and sends it back on that message; sources report early stopping when a
  history drops it. Chat Completions has no phase.
* `tool_choice` allowed_tools is flat here: `{"type": "allowed_tools", "mode": "auto" | "required",
  "tools": [{"type": "function", "name": …}]}`; a caller asks for it with the kit's
  `{"allowed": [names], "mode": …}` (see `tool_choice_to_wire`).
* Strict: `strict: true` with a schema strict mode cannot take (an object without
  `additionalProperties: false`, a property missing from `required`) is a 400; left out, the API
  normalizes the schema or falls back to best effort.
* Tool search (gpt-5.4 and later): with the hosted `tool_search` tool, a `defer_loading` function is
  loaded when the model needs it; the answer then holds `tool_search_call` and `tool_search_output`
  items, which this codec keeps whole in the ReasoningState and sends back where they stood (they keep
  the tools loaded).

    from agentkit.providers import openai_responses
    wire = openai_responses.build_request("gpt-4.1-mini", messages, tools, ModelOptions())
    # POST DEFAULT_BASE_URL + wire.path with wire.headers | openai_responses.auth_headers(key), json=wire.body
    turn = openai_responses.parse_response(response_json)

Left out on purpose: the Conversations API (`conversation` is accepted and echoed, not resolved),
background responses, hosted tools such as web search (skipped when received), images and files
(skipped), structured outputs (`text.format`), a `ToolSpec` with `defer_loading` (deferred tools and
`tool_search` are written by the caller, e.g. in `extra_body`), client-executed tool search, and the
`namespace` field on a call.

The server half of the format (what the simulator answers) is `agentkit.sim.wire.openai_responses`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.errors import BadResponseError, ProviderError
from ..core.types import (
    MESSAGE_FIELDS,
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
from . import openai_common
from .common import WireRequest, event_object, own_reasoning

# The OpenAI platform words its request errors the same way on both APIs, and authenticates the same
# way: those pieces live in openai_common, shared with Chat Completions.
from .openai_common import count, in_band_error, raw_arguments, token_details

NAME = "openai-responses"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
PATH = "/responses"
API_KEY_ENVS = ("OPENAI_API_KEY",)
KEY_REQUIRED = True
DEFAULT_MODEL = "gpt-4.1-mini"
STREAM_FRAMING = "sse"
SERVER_SIDE_FALLBACK = False
#: With `store` (the default), a response stays on the server and a request can continue from it by id.
CONTINUATION_FIELD = "previous_response_id"

#: The platform's bearer header, the same on both OpenAI APIs.
auth_headers = openai_common.auth_headers

#: incomplete_details.reason -> neutral stop (a missing or unknown reason is "other").
INCOMPLETE_TO_STOP: dict[str, TurnStop] = {"max_output_tokens": "length", "content_filter": "content_filter"}


# --- tool definitions ------------------------------------------------------------------------------

def tool_to_wire(spec: ToolSpec) -> dict:
    """A ToolSpec as the Responses API wants it: flat, with `strict` always stated."""
    tool: dict[str, Any] = {"type": "function", "name": spec.name}
    if spec.description:
        tool["description"] = spec.description
    tool["parameters"] = spec.parameters
    tool["strict"] = spec.strict  # the API's own default is strict=true, which rewrites loose schemas
    return tool


# --- client side: the request ----------------------------------------------------------------------

def tool_choice_to_wire(choice: ToolChoice, parallel: bool | None = None) -> str | dict:
    """The neutral choice on the wire: the three words stay strings; {"name": X} gets `"type": "function"`;
    {"allowed": [X, Y], "mode": "auto" | "required"} is allowed_tools, flat here (Chat nests it):

        tool_choice_to_wire({"allowed": ["get_time"], "mode": "required"})
        -> {"type": "allowed_tools", "mode": "required", "tools": [{"type": "function", "name": "get_time"}]}

    (The parallel switch is its own top-level field here, `parallel_tool_calls`, so it is not used.)
    """
    if isinstance(choice, dict) and "allowed" in choice:
        return {"type": "allowed_tools", "mode": choice.get("mode", "auto"),
                "tools": [{"type": "function", "name": name} for name in choice["allowed"]]}
    if isinstance(choice, dict):
        return {"type": "function", "name": choice["name"]}
    return choice


def build_request(model: str, messages: list[Message] | tuple[Message, ...], tools=(),
                  options: ModelOptions | None = None, **extras: Any) -> WireRequest:
    """The POST body for one model call, the whole conversation replayed as input items (stateless).

    A leading system message becomes `instructions`; later ones stay system messages in `input`.
    `extras` are further body fields, sent as given (`store=False`, `reasoning={...}`, ...).
    """
    options = options or ModelOptions()
    body: dict[str, Any] = {"model": model}
    rest = list(messages)
    if rest and rest[0].role == "system":
        body["instructions"] = rest.pop(0).content or ""
    body["input"] = [item for m in rest for item in _message_to_items(m, model)]
    if tools:
        body["tools"] = [tool_to_wire(t) for t in tools]
        body["tool_choice"] = tool_choice_to_wire(options.tool_choice)
    if options.parallel_tool_calls is not None:
        body["parallel_tool_calls"] = options.parallel_tool_calls
    if options.max_tokens is not None:
        body["max_output_tokens"] = options.max_tokens
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if options.stream:
        body["stream"] = True
    body.update(extras)
    return WireRequest(PATH, body, {}, stream=options.stream)


def _message_to_items(m: Message, model: str) -> list[dict]:
    """One neutral message -> its input items (an assistant turn is its text, then one item per call)."""
    if m.role == "tool":
        return [{"type": "function_call_output", "call_id": m.tool_call_id, "output": m.content or ""}]
    if m.role != "assistant":
        return [{"role": m.role, "content": m.content or ""}]
    text = [] if m.tool_calls and not m.content else [{"role": "assistant", "content": m.content or ""}]
    # The item id (fc_…) is left out of a call on purpose: `call_id` is what links a result, and an id
    # the server never stored can be refused. This model's reasoning items go back where they were,
    # with the calls' item ids, so the server can pair them (turn_items).
    calls = [{"type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.arguments_json()}
             for c in m.tool_calls]
    state = own_reasoning(m, NAME, model)
    return turn_items(state.items if state else (), text, calls)


# --- client side: the response ---------------------------------------------------------------------

def parse_response(body: Any) -> ModelTurn:
    """A `response` object -> ModelTurn: text from `message` items, calls from `function_call` items."""
    if not isinstance(body, dict):
        raise BadResponseError("the response body is not a JSON object", provider=NAME, body=body)
    if body.get("error") or body.get("status") == "failed":
        raise _failed(body, body)
    output = body.get("output")
    if not isinstance(output, list):
        raise BadResponseError("the response has no output list", provider=NAME, body=body)
    texts: list[str] = []
    calls: list[ToolCall] = []
    for item in output:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "message" and item.get("role", "assistant") == "assistant":
            texts.append(_output_text(item.get("content")))
        elif item.get("type") == "function_call":
            calls.append(ToolCall.from_raw(str(item.get("call_id") or ""), str(item.get("name") or ""),
                                           raw_arguments(item.get("arguments"))))
    return _turn("".join(texts), calls, body, body, reasoning_of([i for i in output if isinstance(i, dict)],
                                                                 body.get("model")))


#: Output items a turn hands back whole, where they stood: reasoning, and a hosted tool search (the call and
#: the output that loaded deferred tools: sent back, they keep those tools loaded).
KEPT_WHOLE = ("reasoning", "tool_search_call", "tool_search_output")


def reasoning_of(items: list[dict], model: Any) -> ReasoningState | None:
    """The state of one model turn's items that must go back with it: its reasoning (and tool search)
    items whole, in order, each assistant message's `phase` where the message stood, and each call's
    item id and call_id where it stood. None when the turn has neither a reasoning item nor a phase.

        reasoning_of([{"type": "message", "phase": "commentary", ...}, {"type": "function_call", ...}], "gpt-5.4")
        -> ReasoningState("openai-responses", "gpt-5.4", ({"type": "message", "phase": "commentary"},
                                                          {"type": "function_call", "call_id": ..., "id": ...}))
    """
    def phased(item: dict) -> bool:
        return item.get("type") in ("message", None) and item.get("phase") is not None

    if not any(i.get("type") in KEPT_WHOLE or phased(i) for i in items):
        return None
    entries: list[dict] = []
    for item in items:
        if item.get("type") in KEPT_WHOLE:
            entries.append(dict(item))
        elif phased(item):  # the message's own field, not reasoning: kept when a history leaves reasoning out
            entries.append({"type": MESSAGE_FIELDS, "phase": item["phase"]})
        elif item.get("type") == "function_call":
            entry = {"type": "function_call", "call_id": str(item.get("call_id") or "")}
            if isinstance(item.get("id"), str):
                entry["id"] = item["id"]
            entries.append(entry)
    return ReasoningState(NAME, model if isinstance(model, str) else None, tuple(entries))


def turn_items(entries: Sequence[dict], text: list[dict], calls: list[dict]) -> list[dict]:
    """A model turn's items in the order its reasoning state recorded them (the inverse of `reasoning_of`,
    for both sides: a client replaying the turn and a server answering with it place them the same way).

    Each reasoning item stands where it stood; a message entry places the text there, with the `phase`
    it kept; each call stands at its entry, with the item id the entry kept; without a message entry the
    text goes just before the first call so placed. Calls the state does not name come last, after the
    text (with no state at all: the text, then the calls).
    """
    items: list[dict] = []
    pending = list(calls)
    for entry in entries:
        if entry.get("type") == "message":
            items += [{**t, "phase": entry["phase"]} if entry.get("phase") else t for t in text]
            text = []
            continue
        if entry.get("type") != "function_call":
            items.append(dict(entry))
            continue
        k = next((k for k, c in enumerate(pending) if c["call_id"] == entry.get("call_id")), None)
        if k is None:
            continue
        items += text
        text = []
        call = pending.pop(k)
        if entry.get("id"):  # the stored item id, in the place an item's id has
            call = {"type": call["type"], "id": entry["id"],
                    **{key: value for key, value in call.items() if key not in ("type", "id")}}
        items.append(call)
    return items + text + pending


def _turn(text: str, calls: list[ToolCall], response: dict, raw: dict,
          reasoning: ReasoningState | None = None) -> ModelTurn:
    # One constructor for the plain and the streamed path, so both give the same ModelTurn.
    status = response.get("status")
    details = response.get("incomplete_details")
    reason = details.get("reason") if isinstance(details, dict) else None
    if status == "incomplete":
        stop: TurnStop = INCOMPLETE_TO_STOP.get(reason, "other") if isinstance(reason, str) else "other"
        native = reason if isinstance(reason, str) else "incomplete"
    elif status in ("completed", None):
        stop, native = ("tool_calls" if calls else "stop"), status
    else:  # cancelled, or a background response still queued / in progress
        stop, native = "other", status if isinstance(status, str) else None
    model, id = response.get("model"), response.get("id")
    return ModelTurn(text or None, tuple(calls), stop, native, _usage_from_wire(response.get("usage")),
                     model if isinstance(model, str) else None, id if isinstance(id, str) else None, raw,
                     reasoning)


def _output_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "output_text"]
    return "".join(t for t in texts if isinstance(t, str))


def _usage_from_wire(usage: Any) -> Usage:
    if not isinstance(usage, dict):
        return Usage()
    # cache reads and writes are part of input_tokens, reasoning tokens part of output_tokens
    given = token_details(usage, "input_tokens_details")
    return Usage(count(usage.get("input_tokens")), count(usage.get("output_tokens")),
                 count(token_details(usage, "output_tokens_details").get("reasoning_tokens")),
                 count(given.get("cached_tokens")), count(given.get("cache_write_tokens")))



def _failed(response: dict, body: Any) -> ProviderError:
    """A failed response (status "failed", or `error` set) as the typed error it carries: its `code`
    says which (server_error: a retryable ServerError; rate_limit_exceeded: a RateLimitError; ...)."""
    error = response.get("error")
    if not isinstance(error, dict):
        error = {"message": str(error or "the response failed"), "code": "server_error"}
    return in_band_error({"error": {"message": str(error.get("message") or "the response failed"),
                                    "code": error.get("code") or error.get("type")}}, NAME, raw=body)


class StreamAssembler:
    """Rebuilds the ModelTurn of a streamed response from its named events.

        assembler = StreamAssembler()
        for sse in events:
            assembler.feed(sse.event, sse.data)
        turn = assembler.turn()                # == parse_response() of the same answer, except `raw`

    Output items are kept by `output_index` (argument deltas find theirs by `item_id`); the `.done`
    events carry the full text and arguments and win over the deltas. Status, usage, model and id come
    from the terminal `response.completed` / `response.incomplete`. An `error` event or
    `response.failed` raises BadResponseError, and so does `turn()` when no terminal event came.
    `feed` returns the event's pieces: text and argument deltas, reasoning summary (or reasoning text)
    deltas, a call's id and name when its item is added, and whatever a `.done` adds to what streamed.
    """

    provider = NAME

    def __init__(self) -> None:
        self.items: dict[int, dict] = {}  # output_index -> {"type", "parts", "call_id", "name", "arguments"}
        self.by_item_id: dict[str, int] = {}
        self.response: dict | None = None   # the terminal event's response object
        self.events: list[dict] = []
        self.pieces: list[StreamDelta] = []  # what the event being fed brought

    def feed(self, event: str | None, data: str) -> list[StreamDelta]:
        self.pieces = []
        text = (data or "").strip()
        if self.response is not None or not text or text.startswith(":") or text == "[DONE]":
            return self.pieces
        payload = event_object(text, self.provider)
        self.events.append(payload)
        kind = payload.get("type") or event  # the SDK dispatches on data.type; `event:` is the same word
        if kind == "error":  # the typed error its `code` stands for (server_error, rate_limit_exceeded, ...)
            raise _failed({"error": {"message": payload.get("message") or "error event in the stream",
                                     "code": payload.get("code")}}, payload)
        if kind == "response.failed":
            response = payload.get("response") if isinstance(payload.get("response"), dict) else {}
            raise _failed(response, payload)
        if kind in ("response.completed", "response.incomplete"):
            self.response = payload.get("response") if isinstance(payload.get("response"), dict) else {}
        elif kind in ("response.output_item.added", "response.output_item.done"):
            self._item(payload, done=kind.endswith(".done"))
        elif kind == "response.output_text.delta":
            self._part(payload).append(str(payload.get("delta") or ""))
            if payload.get("delta"):
                self.pieces.append(TextDelta(str(payload["delta"])))
        elif kind == "response.output_text.done" and isinstance(payload.get("text"), str):
            self._text_done(self._part(payload), payload["text"])
        elif kind == "response.function_call_arguments.delta":
            state = self._state(payload)
            state["arguments"].append(str(payload.get("delta") or ""))
            if payload.get("delta"):
                self.pieces.append(ToolCallDelta(self._call_place(state), str(payload["delta"])))
        elif kind == "response.function_call_arguments.done" and isinstance(payload.get("arguments"), str):
            self._arguments_done(self._state(payload), payload["arguments"])
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta") \
                and payload.get("delta"):
            self.pieces.append(ReasoningDelta(str(payload["delta"])))
        return self.pieces

    def _call_place(self, state: dict) -> int:
        """A function_call item's place among the turn's calls (turn() keeps the output's order)."""
        index = next(i for i, known in self.items.items() if known is state)
        return sum(1 for i, known in self.items.items() if i < index and known["type"] == "function_call")

    def _text_done(self, part: list[str], whole: str) -> None:
        """The `.done` text wins; what it adds to the streamed text is a piece too."""
        streamed = "".join(part)
        if whole.startswith(streamed) and len(whole) > len(streamed):
            self.pieces.append(TextDelta(whole[len(streamed):]))
        part[:] = [whole]

    def _arguments_done(self, state: dict, whole: str) -> None:
        streamed = "".join(state["arguments"])
        if whole.startswith(streamed) and len(whole) > len(streamed):
            self.pieces.append(ToolCallDelta(self._call_place(state), whole[len(streamed):]))
        state["arguments"] = [whole]

    def _state(self, payload: dict) -> dict:
        """The item an event is about: by `item_id` when known, else by `output_index`."""
        item_id, index = payload.get("item_id"), payload.get("output_index")
        if isinstance(item_id, str) and item_id in self.by_item_id:
            index = self.by_item_id[item_id]
        elif not isinstance(index, int):
            index = len(self.items)
        fresh = {"type": None, "parts": {}, "call_id": "", "name": "", "arguments": [], "item": {}}
        return self.items.setdefault(index, fresh)

    def _part(self, payload: dict) -> list[str]:
        index = payload.get("content_index") if isinstance(payload.get("content_index"), int) else 0
        return self._state(payload)["parts"].setdefault(index, [])

    def _item(self, payload: dict, done: bool) -> None:
        item = payload.get("item") if isinstance(payload.get("item"), dict) else {}
        if isinstance(item.get("id"), str) and isinstance(payload.get("output_index"), int):
            self.by_item_id[item["id"]] = payload["output_index"]
        state = self._state({"item_id": item.get("id"), "output_index": payload.get("output_index")})
        state["type"] = item.get("type")
        if done or not state["item"]:
            state["item"] = dict(item)  # the whole item: a reasoning item's encrypted_content comes at .done
        if item.get("type") == "function_call":
            if not done:
                self.pieces.append(ToolCallDelta(self._call_place(state), "", item.get("call_id"), item.get("name")))
            state["call_id"] = str(item.get("call_id") or state["call_id"])
            state["name"] = str(item.get("name") or state["name"])
            if done and isinstance(item.get("arguments"), str):
                self._arguments_done(state, item["arguments"])
            elif not done and isinstance(item.get("arguments"), str) and item["arguments"]:
                self._arguments_done(state, item["arguments"])  # added whole: its arguments are a piece
        elif item.get("type") == "message" and done and isinstance(item.get("content"), list):
            whole = _output_text(item["content"])
            streamed = "".join("".join(part) for _, part in sorted(state["parts"].items()))
            if whole.startswith(streamed) and len(whole) > len(streamed):
                self.pieces.append(TextDelta(whole[len(streamed):]))
            state["parts"] = {0: [whole]}

    def turn(self) -> ModelTurn:
        if self.response is None:
            raise BadResponseError("the stream ended before response.completed", provider=self.provider)
        texts: list[str] = []
        calls: list[ToolCall] = []
        items: list[dict] = []
        for _, state in sorted(self.items.items()):
            items.append(state["item"])
            if state["type"] == "message":
                texts.append("".join("".join(part) for _, part in sorted(state["parts"].items())))
            elif state["type"] == "function_call":
                calls.append(ToolCall.from_raw(state["call_id"], state["name"], "".join(state["arguments"])))
        return _turn("".join(texts), calls, self.response, {"events": self.events},
                     reasoning_of(items, self.response.get("model")))


def parse_error(status: int, body: Any, headers: Any = None) -> ProviderError:
    """An error response -> the right ProviderError subclass: the same bodies as Chat Completions (OpenAI's
    Responses API reference)."""
    return openai_common.parse_error(status, body, headers, provider=NAME)


def stored_response_id(body: dict, turn: ModelTurn) -> str | None:
    """The response's id when the API stored it (`store` is true unless the request said false)."""
    return turn.id if turn.id and body.get("store") is not False else None
