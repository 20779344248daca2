"""The Google Gemini `generateContent` format (REST v1beta): the client side, pure functions.

What is special about tool calling here:

* The JSON is lowerCamelCase (`functionDeclarations`, `toolConfig`, `usageMetadata`). Google's parser
  also accepts snake_case names, and the official SDK sends some (`parameters_json_schema`), so the
  server side here reads both spellings.
* Roles are `user` and `model`; the system prompt is the top-level `systemInstruction`.
* Tools are one `functionDeclarations` list; the schema goes in `parametersJsonSchema` (plain JSON
  Schema) or `parameters` (an OpenAPI subset with upper-case types, converted on the way in).
* A call is a part `{"functionCall": {"name", "args": {...}}}`, arguments as an **object**. The stop
  signal is `finishReason: "STOP"` whether or not the model called tools: the calls themselves tell.
* Results go back as `functionResponse` parts in one user turn, each with the tool `name` and a
  `response` **object**; there is no error flag, so by convention `{"output": …}` reports a success and
  `{"error": …}` a failure. Here the object holds the kit's result envelope (parsed from its JSON text).
* `toolConfig.functionCallingConfig.mode` is AUTO / ANY / NONE (+ `allowedFunctionNames` to force one
  function). There is **no parallel switch**: `ModelOptions.parallel_tool_calls` is ignored.

The lesson of this format: **call ids are optional.** Older models send calls without an `id`; newer
ones (Gemini 3 and 4) send one and expect it echoed in `functionResponse.id`. The kit needs an id for every
call, so `parse_response` makes one up when the model sent none: deterministic (the response id, the
calls, the position: the same response always gets the same ids) and marked with SYNTHETIC_ID_PREFIX
(`gemini_synth_…_0`, `…_1`). `build_request` recognises the prefix and sends no id for those calls and
their results. The API documents no pairing by position: a `functionResponse` names its call
(`name` "matches FunctionCall.name", and `id` the call's id when it had one), and the turn must hold one
`functionResponse` per `functionCall`. The simulator pairs id-less results by name (the first unanswered
call of that name). Real ids are echoed.

Gemini 3 and Gemini 4 also sign their calls (`signs_calls`): a `thoughtSignature` (opaque base64) rides
on the `functionCall` part — in a parallel batch on the first call only, in sequential steps on each
step's call — and on the last part of an answer without calls. They are the turn's ReasoningState here,
and `build_request` puts each back on the part it came with, for the same model only. The API refuses a
current-turn step whose first call lacks one (400 "Function call is missing a thought_signature in
functionCall parts…") and a signature that is truncated, altered or not Gemini's ("Corrupted thought
signature."); one made by another Gemini model is accepted and its thought left out of the model's
context (Google's docs). For a signing model's call that has no signature of this model's (history from
another provider or model, or an older codec), `build_request` sends Google's documented placeholder,
`skip_thought_signature_validator`, which skips that check.

    from agentkit.providers import gemini
    wire = gemini.build_request("gemini-2.5-flash", messages, tools, ModelOptions())
    # POST DEFAULT_BASE_URL + wire.path with wire.headers | gemini.auth_headers(key), json=wire.body

Left out on purpose: images and files (skipped), the order of parts beyond thought summaries, text,
then calls (a signature goes back on the part it came with), safety settings and the other generation
settings (kept in `ChatRequest.extras`), candidate counts above one, and Vertex AI (its URLs under
`/projects/…/publishers/google/models/…`, its credentials and its streamed argument fragments: the
simulator answers Vertex's paths, this codec speaks the Gemini API).

The server half of the format (what the simulator answers) is `agentkit.sim.wire.gemini`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from ..core.errors import BadResponseError, ProviderError, error_for_status
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

NAME = "gemini"
DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"
API_KEY_ENVS = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
KEY_REQUIRED = True
DEFAULT_MODEL = "gemini-2.5-flash"
STREAM_FRAMING = "sse"
SERVER_SIDE_FALLBACK = False
CONTINUATION_FIELD = None  # generateContent keeps no conversation (interactions are another API)

#: Ids this codec invents for calls that came without one; never sent back to the API.
SYNTHETIC_ID_PREFIX = "gemini_synth_"
#: Google's documented stand-in for a lost thoughtSignature (Gemini 3 and 4 reject replayed calls without one).
THOUGHT_SIGNATURE_PLACEHOLDER = "skip_thought_signature_validator"
#: The model families that sign their function calls and refuse a replayed call without its signature:
#: "When using Gemini 3 models, you must pass back thought signatures during function calling" (Gemini API,
#: thought-signatures page); its newer edition says the same of Gemini 4 ("Gemini 4- und Gemini 3-Modellen").
SIGNING_FAMILIES = ("gemini-3", "gemini-4")


FINISH_TO_NEUTRAL = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    **dict.fromkeys(("SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY",
                     "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION", "MODEL_ARMOR"), "content_filter"),
}


def _bare_model(model: str) -> str:
    return model.removeprefix("models/")


def signs_calls(model: str | None) -> bool:
    """Whether `model` signs its function calls and wants each signature back (Gemini 3 and Gemini 4).

        signs_calls("gemini-4-argon")  ->  True        signs_calls("gemini-2.5-flash")  ->  False
    """
    return bool(model) and _bare_model(model).startswith(SIGNING_FAMILIES)


def _get(d: dict, camel: str, default: Any = None) -> Any:
    """A request field by its camelCase name or its snake_case twin (Google's parser takes both)."""
    if camel in d:
        return d[camel]
    snake = re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), camel)
    return d.get(snake, default)


# ---------------------------------------------------------------------------------------------------
# Tool definitions
# ---------------------------------------------------------------------------------------------------

def tool_to_wire(spec: ToolSpec) -> dict:
    """A ToolSpec as a function declaration, schema in `parametersJsonSchema` (Gemini has no `strict`)."""
    declaration: dict[str, Any] = {"name": spec.name}
    if spec.description:
        declaration["description"] = spec.description
    declaration["parametersJsonSchema"] = spec.parameters
    return declaration


# ---------------------------------------------------------------------------------------------------
# Client side: build a request, read a response, a stream, an error
# ---------------------------------------------------------------------------------------------------

def auth_headers(api_key: str) -> dict:
    """Gemini's API key header (the alternative, `?key=` in the URL, ends up in logs)."""
    return {"x-goog-api-key": api_key}


def tool_choice_to_wire(choice: ToolChoice, parallel: bool | None = None) -> dict:
    """The kit's tool_choice as `toolConfig`: auto -> AUTO, required -> ANY, none -> NONE, and a
    named tool -> ANY restricted by `allowedFunctionNames`. (Gemini has no parallel switch.)"""
    if isinstance(choice, dict) and "allowed" in choice:  # OpenAI's allowed_tools: Gemini restricts ANY only
        if choice.get("mode") != "required":
            raise ValueError("tool_choice {'allowed': ..., 'mode': 'auto'} has no Gemini form "
                             "(allowedFunctionNames needs mode ANY): use mode 'required', or send only those tools")
        config: dict[str, Any] = {"mode": "ANY", "allowedFunctionNames": list(choice["allowed"])}
    elif isinstance(choice, dict):
        config = {"mode": "ANY", "allowedFunctionNames": [choice["name"]]}
    else:
        config = {"mode": {"required": "ANY", "none": "NONE"}.get(choice, "AUTO")}
    return {"functionCallingConfig": config}


def is_synthetic_id(call_id: str | None) -> bool:
    """True for an id this codec made up (the API never saw it, so it must not be sent)."""
    return bool(call_id) and call_id.startswith(SYNTHETIC_ID_PREFIX)


def build_request(model: str, messages: list[Message] | tuple[Message, ...], tools=(),
                  options: ModelOptions | None = None, **extras: Any) -> WireRequest:
    """Encode a conversation as a generateContent (or streamGenerateContent) request.

    The model goes in the URL path, not the body. System messages become `systemInstruction`. Each
    assistant turn is replayed as text + `functionCall` parts; consecutive tool messages become one user
    turn of `functionResponse` parts. Ids are sent only when the model gave them (see the module notes).
    `options.parallel_tool_calls` is ignored: the API has no such switch. `extras` are copied into the
    body last (e.g. `safetySettings`).
    """
    options = options or ModelOptions()
    model = _bare_model(model)
    path = f"/models/{model}:streamGenerateContent?alt=sse" if options.stream else \
        f"/models/{model}:generateContent"
    body: dict[str, Any] = {"contents": _contents_to_wire(messages, model)}
    system = [m.content for m in messages if m.role == "system" and m.content]
    if system:
        body["systemInstruction"] = {"parts": [{"text": "\n\n".join(system)}]}
    if tools:
        body["tools"] = [{"functionDeclarations": [tool_to_wire(t) for t in tools]}]
        body["toolConfig"] = tool_choice_to_wire(options.tool_choice)
    generation: dict[str, Any] = {}
    if options.max_tokens is not None:
        generation["maxOutputTokens"] = options.max_tokens
    if options.temperature is not None:
        generation["temperature"] = options.temperature
    if generation:
        body["generationConfig"] = generation
    body.update(extras)
    return WireRequest(path, body, {"content-type": "application/json"}, stream=options.stream)


def _contents_to_wire(messages, model: str) -> list[dict]:
    signed = signs_calls(model)
    names = {c.id: c.name for m in messages for c in m.tool_calls}  # for results that lack a name
    contents: list[dict] = []
    results_open = False  # is contents[-1] a user turn of functionResponse parts, open for more?
    for m in messages:
        if m.role == "system":
            continue
        if m.role == "tool":
            response: dict[str, Any] = {"name": m.name or names.get(m.tool_call_id, ""),
                                        "response": _response_object(m.content, m.is_error)}
            if m.tool_call_id and not is_synthetic_id(m.tool_call_id):
                response = {"id": m.tool_call_id, **response}
            if results_open:
                contents[-1]["parts"].append({"functionResponse": response})
            else:
                contents.append({"role": "user", "parts": [{"functionResponse": response}]})
                results_open = True
            continue
        results_open = False
        if m.role == "user":
            contents.append({"role": "user", "parts": [{"text": m.content or ""}]})
            continue
        # This model's own signatures go back on the parts they came with; another model's are dropped.
        state = own_reasoning(m, NAME, model)
        items = state.items if state else ()
        parts, call_signatures = signed_text_parts(items, m.content)
        # A signing model's call with no signature of this model's gets the documented placeholder.
        unsigned = THOUGHT_SIGNATURE_PLACEHOLDER if signed and state is None else None
        for k, call in enumerate(m.tool_calls):
            call_id = None if is_synthetic_id(call.id) else call.id  # a made-up id never goes out
            parts.append(call_part(call, call_id, call_signatures.get(k, unsigned)))
        contents.append({"role": "model", "parts": parts or [{"text": ""}]})
    return contents


def signed_text_parts(items: Sequence[dict], text: str | None) -> tuple[list[dict], dict[int, str]]:
    """A model turn's thought parts and text part, the text signed as its reasoning items say; and the
    signatures of its functionCall parts by call index. The inverse of `reasoning_of`, for both sides: a
    client replaying the turn and a server answering with it place the signatures the same way."""
    parts = [dict(item) for item in items if item.get("thought")]
    text_signature = next((i["thoughtSignature"] for i in items if i.get("on") == "text"), None)
    if text or text_signature:
        parts.append({"text": text or ""})
        if text_signature:
            parts[-1]["thoughtSignature"] = text_signature
    return parts, {i.get("index"): i["thoughtSignature"] for i in items if i.get("on") == "functionCall"}


def call_part(call: ToolCall, call_id: str | None, signature: str | None) -> dict:
    """One functionCall part, for both sides: the id first when there is one to send, and the
    thoughtSignature that rides on it, if any."""
    function_call: dict[str, Any] = {"name": call.name, "args": call.arguments_object()}
    part: dict[str, Any] = {"functionCall": {"id": call_id, **function_call} if call_id else function_call}
    if signature is not None:
        part["thoughtSignature"] = signature
    return part


def reasoning_of(parts: list[dict], model: str | None) -> ReasoningState | None:
    """The reasoning state in a model turn's parts: thought summaries whole, and each `thoughtSignature`
    with the part it rode on (the text, or the k-th functionCall). None when there is neither."""
    items: list[dict] = []
    calls = 0
    for part in parts:
        signature = _get(part, "thoughtSignature")
        if _get(part, "functionCall") is not None:
            if signature is not None:
                items.append({"thoughtSignature": signature, "on": "functionCall", "index": calls})
            calls += 1
        elif part.get("thought") is True:
            items.append(dict(part))
        elif signature is not None and isinstance(part.get("text"), str):
            items.append({"thoughtSignature": signature, "on": "text"})
    return ReasoningState(NAME, model, tuple(items)) if items else None


def _response_object(content: str | None, is_error: bool) -> dict:
    """`{"output": …}` or `{"error": …}` around the tool's text, parsed when it is a JSON object/array."""
    value: Any = content or ""
    try:
        parsed = json.loads(value)
    except (ValueError, RecursionError):
        parsed = None
    if isinstance(parsed, (dict, list)):
        value = parsed  # the envelope as an object: the model reads structure, not an escaped string
    return {"error": value} if is_error else {"output": value}


def synthetic_ids(response_id: str | None, calls: list[tuple[str, Any]]) -> list[str]:
    """Stable made-up ids for id-less calls: same response, same calls -> same ids (`…_0`, `…_1`)."""
    digest = stable_id(response_id, calls, length=10)
    return [f"{SYNTHETIC_ID_PREFIX}{digest}_{i}" for i in range(len(calls))]


def parse_response(body: Any) -> ModelTurn:
    """A GenerateContentResponse (first candidate) as a ModelTurn.

    Text parts are joined (thought summaries skipped); each `functionCall` part becomes a ToolCall with
    the `args` object as its raw arguments; calls without an `id` get synthetic ids (module notes). The
    neutral stop is "tool_calls" when there are calls, although the API says STOP. Thinking tokens count
    as output, tool-use prompt tokens as input.
    """
    if isinstance(body, list) and len(body) == 1:
        body = body[0]  # the non-SSE stream endpoint wraps its answer in an array
    if not isinstance(body, dict):
        raise BadResponseError("response is not a Gemini GenerateContentResponse", provider=NAME, body=body)
    usage = _usage_from_wire(body.get("usageMetadata"))
    model, response_id = body.get("modelVersion"), body.get("responseId")
    candidates = body.get("candidates")
    if not isinstance(candidates, list) or not candidates or not isinstance(candidates[0], dict):
        feedback = body.get("promptFeedback")
        block = feedback.get("blockReason") if isinstance(feedback, dict) else None
        if block:  # the prompt itself was blocked: no candidates at all
            return ModelTurn(None, (), "content_filter", block, usage, model, response_id, raw=body)
        raise BadResponseError("response has no candidates", provider=NAME, body=body)
    candidate = candidates[0]
    content = candidate.get("content") if isinstance(candidate.get("content"), dict) else {}
    parts = [p for p in content.get("parts") or [] if isinstance(p, dict)]
    texts = [p["text"] for p in parts if isinstance(p.get("text"), str) and not p.get("thought")]
    wire_calls = [p["functionCall"] for p in parts if isinstance(p.get("functionCall"), dict)]
    invented = synthetic_ids(response_id, [(c.get("name"), c.get("args")) for c in wire_calls])
    calls = tuple(ToolCall.from_raw(c.get("id") or invented[i], str(c.get("name", "")), c.get("args") or {})
                  for i, c in enumerate(wire_calls))
    native = candidate.get("finishReason") if isinstance(candidate.get("finishReason"), str) else None
    stop = FINISH_TO_NEUTRAL.get(native, "other") if native else "stop"
    if calls and stop in ("stop", "other"):
        stop = "tool_calls"
    model = model if isinstance(model, str) else None
    text = "".join(texts) if texts else None
    return ModelTurn(text, calls, stop, native, usage, model, response_id, raw=body,
                     reasoning=reasoning_of(parts, model))


def _usage_from_wire(usage: Any) -> Usage:
    if not isinstance(usage, dict):
        return Usage()

    def count(key: str) -> int:
        value = usage.get(key)
        return value if isinstance(value, int) else 0

    # thoughts are billed as output; cachedContentTokenCount is part of promptTokenCount
    return Usage(count("promptTokenCount") + count("toolUsePromptTokenCount"),
                 count("candidatesTokenCount") + count("thoughtsTokenCount"),
                 count("thoughtsTokenCount"), count("cachedContentTokenCount"))


class StreamAssembler:
    """Rebuilds an `:streamGenerateContent?alt=sse` stream into the ModelTurn `parse_response` would give.

    Every chunk is a complete GenerateContentResponse: parts add up (adjacent text pieces are joined,
    calls arrive whole), and the last chunk carries `finishReason` and the final `usageMetadata`. The
    chunks are merged into one response body that goes through `parse_response`, so synthetic ids and
    everything else come out exactly as without streaming. A chunk `{"error": …}` raises. `feed` returns
    the chunk's pieces: text, thought text, and each call whole (its `args` as JSON text, in one piece).
    """

    def __init__(self) -> None:
        self.parts: list[dict] = []
        self.last: dict = {}          # the latest chunk, for usage, model version and response id
        self.finish: str | None = None
        self.blocked = False
        self.calls = 0  # functionCall parts so far: the next one's place in the turn
        self.pieces: list[StreamDelta] = []  # what the chunk being fed brought

    def feed(self, event: str | None, data: str) -> list[StreamDelta]:
        self.pieces = []
        if not data or not data.strip():
            return self.pieces
        chunk = event_object(data, NAME)
        if "error" in chunk:
            error = chunk["error"] if isinstance(chunk["error"], dict) else {}
            code = error.get("code")
            raise parse_error(code if isinstance(code, int) else 500, chunk, {})
        self.last = {**self.last, **{k: v for k, v in chunk.items() if k != "candidates"}}
        feedback = chunk.get("promptFeedback")
        if isinstance(feedback, dict) and feedback.get("blockReason"):
            self.blocked = True  # a blocked prompt ends the stream without any candidate
        candidates = chunk.get("candidates")
        if not isinstance(candidates, list) or not candidates or not isinstance(candidates[0], dict):
            return self.pieces
        candidate = candidates[0]
        content = candidate.get("content") if isinstance(candidate.get("content"), dict) else {}
        for part in content.get("parts") or []:
            if isinstance(part, dict):
                self._add_part(part)
                self._show(part)
        if candidate.get("finishReason"):
            self.finish = candidate["finishReason"]
        return self.pieces

    def _show(self, part: dict) -> None:
        """A part as the pieces a caller sees (parse_response reads the same keys)."""
        if isinstance(part.get("text"), str) and part["text"]:
            self.pieces.append(ReasoningDelta(part["text"]) if part.get("thought") else TextDelta(part["text"]))
        call = part.get("functionCall")
        if isinstance(call, dict):
            arguments = json.dumps(call.get("args") or {}, ensure_ascii=False)
            name = call.get("name")
            self.pieces.append(ToolCallDelta(self.calls, arguments, call.get("id") or None,
                                             str(name) if name is not None else ""))
            self.calls += 1

    def _add_part(self, part: dict) -> None:
        # Text pieces join (thought summaries with thought summaries): a signature, which comes with the
        # last piece, ends a part, so the joined parts are the ones a non-streamed answer has.
        previous = self.parts[-1] if self.parts else None
        kind = _text_kind(part)
        if kind is not None and previous is not None and _text_kind(previous) == kind \
                and "thoughtSignature" not in previous:
            previous["text"] += part["text"]
            if "thoughtSignature" in part:
                previous["thoughtSignature"] = part["thoughtSignature"]
        else:
            self.parts.append(dict(part))

    def body(self) -> dict:
        """The non-streamed response these chunks add up to."""
        body = dict(self.last)
        if self.parts or self.finish:
            candidate: dict[str, Any] = {"content": {"role": "model", "parts": self.parts}, "index": 0}
            if self.finish:
                candidate["finishReason"] = self.finish
            body["candidates"] = [candidate]
        return body

    def turn(self) -> ModelTurn:
        if self.finish is None and not self.blocked:
            raise BadResponseError("stream ended before a chunk with finishReason", provider=NAME,
                                   body=self.body())
        return parse_response(self.body())


def _text_kind(part: dict) -> str | None:
    """"text" or "thought" for a part that is only (thought) text, with or without a signature."""
    keys = set(part) - {"thoughtSignature"}
    if keys == {"text"}:
        return "text"
    if keys == {"text", "thought"} and part.get("thought") is True:
        return "thought"
    return None


#: generateContent keeps nothing between requests (contract: stored state).
stored_response_id = no_stored_id


def parse_error(status: int, body: Any, headers: Any = None) -> ProviderError:
    """A Google RPC error body as the right ProviderError subclass.

    Reads `{"error": {"code", "message", "status", "details"}}`; `error_type` is the RPC status name
    (RESOURCE_EXHAUSTED, ...). The retry hint lives in the body (`RetryInfo.retryDelay: "46s"`), with a
    `retry-after` header as a fallback. Non-JSON bodies are tolerated and quoted.
    """
    data = json_or_none(body)
    if isinstance(data, list) and data and isinstance(data[0], dict):
        data = data[0]  # the non-SSE stream endpoint wraps errors in an array too
    error = data.get("error") if isinstance(data, dict) else None
    retry_after = None
    if isinstance(error, dict):
        message = str(error.get("message") or f"HTTP {status}")
        error_type = error.get("status")
        for detail in error.get("details") or []:
            if isinstance(detail, dict) and str(detail.get("@type", "")).endswith("google.rpc.RetryInfo"):
                retry_after = _duration_seconds(detail.get("retryDelay"))
    else:
        message = body_text(body) or f"HTTP {status}"
        error_type = None
    if retry_after is None:
        retry_after = retry_after_seconds(headers)
    cls = error_for_status(status)
    return cls(message, status=status, error_type=error_type, provider=NAME, retry_after=retry_after,
               body=data if data is not None else body)


def _duration_seconds(value: Any) -> float | None:
    """A protobuf Duration in JSON ("46s", "0.5s") as seconds."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)s\s*", value) if isinstance(value, str) else None
    return float(match.group(1)) if match else None
