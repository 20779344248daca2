"""The Google Gemini `generateContent` format (REST v1beta), both sides of the wire, as pure functions.

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
ones (Gemini 3) send one and expect it echoed in `functionResponse.id`. The kit needs an id for every
call, so `parse_response` makes one up when the model sent none: deterministic (the response id, the
calls, the position: the same response always gets the same ids) and marked with SYNTHETIC_ID_PREFIX
(`gemini_synth_…_0`, `…_1`). `build_request` recognises the prefix and sends no id for those calls and
their results. The API documents no pairing by position: a `functionResponse` names its call
(`name` "matches FunctionCall.name", and `id` the call's id when it had one), and the turn must hold one
`functionResponse` per `functionCall`. The simulator pairs id-less results by name (the first unanswered
call of that name). Real ids are echoed.

Gemini 3 also signs its calls: a `thoughtSignature` (opaque base64) rides on the `functionCall` part —
in a parallel batch on the first call only, in sequential steps on each step's call — and on the last
part of an answer without calls. They are the turn's ReasoningState here, and `build_request` puts each
back on the part it came with, for the same model only. The API refuses a current-turn step whose first
call lacks one (400 "Function call is missing a thought_signature in functionCall parts…") and a
signature that is truncated, altered or not Gemini's ("Corrupted thought signature."); one made by
another Gemini model is accepted and its thought left out of the model's context (Google's docs). For a
Gemini 3 call that has no signature of this model's (history from another provider or model, or an
older codec), `build_request` sends Google's documented placeholder, `skip_thought_signature_validator`,
which skips that check.

    from agentkit.providers import gemini
    wire = gemini.build_request("gemini-2.5-flash", messages, tools, ModelOptions())
    # POST DEFAULT_BASE_URL + wire.path with wire.headers | gemini.auth_headers(key), json=wire.body

Left out on purpose: images and files (skipped), the order of parts beyond thought summaries, text,
then calls (a signature goes back on the part it came with), safety settings and the other generation
settings (kept in `ChatRequest.extras`), candidate counts above one, and Vertex AI's streamed argument
fragments.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Sequence
from typing import Any

from ..errors import BadResponseError, ProviderError, error_for_status
from ..types import Message, ModelOptions, ModelTurn, ReasoningState, ToolCall, ToolChoice, ToolSpec, Usage
from .common import (ChatRequest, JSONLine, RequestInvalid, SSEvent, StreamEvent, WireRequest, body_text,
                     conversation_of, dumps, event_object, json_or_none, mint_signature, no_records, no_stored_id,
                     nothing_stored, own_reasoning, retry_after_seconds, schema_problem, signature_valid, stable_id)
from .contract import Route, ServerFacts

NAME = "gemini"
DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"
API_KEY_ENVS = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
KEY_REQUIRED = True
DEFAULT_MODEL = "gemini-2.5-flash"
STREAM_FRAMING = "sse"
SERVER_SIDE_FALLBACK = False
CONTINUATION_FIELD = None  # generateContent keeps no conversation (interactions are another API)

_GENERATE = "/models/{model}:generateContent"
_STREAM = "/models/{model}:streamGenerateContent"
#: What the real server does around the bodies (see contract.py). The REST docs use v1beta; google-genai
#: 3.x defaults to v1, so both are served. No 401 and no 529 on this API (reference §4.9).
SERVER = ServerFacts(
    routes=tuple(route for version in ("/v1beta", "/v1") for route in (
        Route("POST", version + _GENERATE, stream=False), Route("POST", version + _STREAM, stream=True),
        Route("GET", version + "/models", "models"))),
    sdk_base_path="",
    no_key=(403, "Method doesn't allow unregistered callers (callers without established identity). Please use "
                 "API Key or other form of API consumer identity to call this API. (On the simulator any "
                 "x-goog-api-key or ?key= works.)"),
    key_headers=("x-goog-api-key", "authorization"),
    key_query_param="key",
    unknown_model="models/{model} is not found for API version v1beta, or is not supported for generateContent. "
                  "Call ListModels to see the list of available models and their supported methods.",
    not_json="Invalid JSON payload received. {detail}",
    fault_messages={
        429: "Resource has been exhausted (e.g. check quota).",
        500: "An internal error has occurred. Please retry or report in "
             "https://developers.generativeai.google/guide/troubleshooting",
        503: "The model is overloaded. Please try again later.",
    },
    client_headers=("x-goog-api-key",),
    nearest_status={529: 503},
    sse_query=("alt", "sse"),
)

#: Ids this codec invents for calls that came without one; never sent back to the API.
SYNTHETIC_ID_PREFIX = "gemini_synth_"
#: Google's documented stand-in for a lost thoughtSignature (Gemini 3 rejects replayed calls without one).
THOUGHT_SIGNATURE_PLACEHOLDER = "skip_thought_signature_validator"
#: `ChatRequest.extras` key the simulator sets to choose whether responses carry call ids.
CALL_IDS_OPTION = "gemini_call_ids"
#: The kind the simulator's thought signatures are minted for.
SIGNATURE_KIND = "gemini-thought"


FINISH_TO_NEUTRAL = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    **dict.fromkeys(("SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY",
                     "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION", "MODEL_ARMOR"), "content_filter"),
}
NEUTRAL_TO_FINISH = {"stop": "STOP", "tool_calls": "STOP", "length": "MAX_TOKENS",
                     "content_filter": "SAFETY", "other": "OTHER"}
KNOWN_FINISH_REASONS = {
    "STOP", "MAX_TOKENS", "SAFETY", "RECITATION", "LANGUAGE", "OTHER", "BLOCKLIST", "PROHIBITED_CONTENT",
    "SPII", "MALFORMED_FUNCTION_CALL", "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_OTHER",
    "NO_IMAGE", "IMAGE_RECITATION", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS",
    "MISSING_THOUGHT_SIGNATURE", "MALFORMED_RESPONSE", "MODEL_ARMOR"}

#: HTTP status -> Google RPC status name in the error body (reference §4.9).
STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
_TYPE_URL = "type.googleapis.com/google.rpc."
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.:\-]{0,127}")
_GEMINI_ID_RE = re.compile(r"[a-z0-9]{8}")


def _bare_model(model: str) -> str:
    return model.removeprefix("models/")


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


def tool_from_wire(d: Any, param: str = "tools[0].function_declarations[0]") -> ToolSpec:
    """A function declaration back to a ToolSpec; `parameters` (OpenAPI style) becomes JSON Schema."""
    if not isinstance(d, dict):
        raise RequestInvalid(f"Invalid value at '{param}' (FunctionDeclaration)", param)
    name = d.get("name")
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
        raise RequestInvalid(
            f"* GenerateContentRequest.{param}.name: Invalid function name. Must start with a letter or an "
            "underscore. Must be alphameric (a-z, A-Z, 0-9), underscores (_), dots (.), colons (:), or "
            "dashes (-), with a maximum length of 128.", f"{param}.name")
    description = d.get("description", "")
    if not isinstance(description, str):
        raise RequestInvalid(f"Invalid value at '{param}.description' (TYPE_STRING)", f"{param}.description")
    json_schema, openapi = _get(d, "parametersJsonSchema"), d.get("parameters")
    if json_schema is not None and openapi is not None:
        raise RequestInvalid(f"* GenerateContentRequest.{param}: parameters and parameters_json_schema are "
                             "mutually exclusive; specify only one.", param)
    where = f"{param}.parameters"
    schema = json_schema if json_schema is not None else openapi_to_json_schema(openapi, where)
    if schema is None:  # no schema at all: a function without arguments
        schema = {"type": "object", "properties": {}}
    if not isinstance(schema, dict):
        raise RequestInvalid(f"Invalid value at '{param}.parameters_json_schema' (google.protobuf.Value)",
                             f"{param}.parameters_json_schema")
    problem = schema_problem(schema)
    if problem is not None and json_schema is not None:
        # Google's docs do not say how an invalid `parametersJsonSchema` is answered (it is a free-form
        # protobuf Value on the wire). The conservative choice: refuse it with a 400, as the other
        # providers do, rather than let a learner build on a schema no validator accepts.
        raise RequestInvalid(f"* GenerateContentRequest.{param}.parameters_json_schema: not a valid JSON "
                             f"Schema: {problem}", f"{param}.parameters_json_schema")
    if problem is not None:
        raise RequestInvalid(f"Invalid value at '{where}' (type.googleapis.com/google.ai.generativelanguage."
                             f"v1beta.Schema), {problem}", where)
    return ToolSpec(name, description, schema)


#: The values of Gemini's `Type` enum (an OpenAPI-style `parameters` schema names one of these).
SCHEMA_TYPES = ("TYPE_UNSPECIFIED", "STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL")

#: OpenAPI Schema keys (either spelling) -> JSON Schema keys; values are converted recursively.
_SCHEMA_KEYS = {
    "any_of": "anyOf", "max_items": "maxItems", "min_items": "minItems", "max_length": "maxLength",
    "min_length": "minLength", "max_properties": "maxProperties", "min_properties": "minProperties",
    "additional_properties": "additionalProperties", "defs": "$defs", "ref": "$ref",
}


def openapi_to_json_schema(schema: Any, param: str = "parameters") -> Any:
    """Gemini's OpenAPI-style Schema (`{"type": "OBJECT", "nullable": true}`) as plain JSON Schema.

    Upper-case types become lower-case, `nullable` becomes a `"null"` type, snake_case keys become
    their camelCase JSON Schema names, and Gemini-only hints (`propertyOrdering`) are dropped.
    """
    if schema is None:
        return None
    if not isinstance(schema, dict):
        raise RequestInvalid(f"Invalid value at '{param}' (Schema)", param)
    out: dict[str, Any] = {}
    for key, value in schema.items():
        key = _SCHEMA_KEYS.get(key, key)
        if key in ("propertyOrdering", "property_ordering", "nullable"):
            continue
        if key == "type":
            if not isinstance(value, str) or value.upper() not in SCHEMA_TYPES:
                raise RequestInvalid(f"Invalid value at '{param}.type' (type.googleapis.com/"
                                     f"google.ai.generativelanguage.v1beta.Type), {dumps(value)[:80]}", param)
            if value.upper() != "TYPE_UNSPECIFIED":
                out["type"] = value.lower()
        elif key in ("properties", "$defs") and isinstance(value, dict):
            out[key] = {k: openapi_to_json_schema(v, f"{param}.{k}") for k, v in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = openapi_to_json_schema(value, f"{param}.{key}")
        elif key == "anyOf" and isinstance(value, list):
            out[key] = [openapi_to_json_schema(v, f"{param}.anyOf") for v in value]
        elif key == "example":
            out["examples"] = [value]
        else:
            out[key] = value
    if schema.get("nullable") is True and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    return out


# ---------------------------------------------------------------------------------------------------
# Client side: build a request, read a response, a stream, an error
# ---------------------------------------------------------------------------------------------------

def auth_headers(api_key: str) -> dict:
    """Gemini's API key header (the alternative, `?key=` in the URL, ends up in logs)."""
    return {"x-goog-api-key": api_key}


def tool_choice_to_wire(choice: ToolChoice, parallel: bool | None = None) -> dict:
    """The kit's tool_choice as `toolConfig`: auto -> AUTO, required -> ANY, none -> NONE, and a
    named tool -> ANY restricted by `allowedFunctionNames`. (Gemini has no parallel switch.)"""
    if isinstance(choice, dict):
        config: dict[str, Any] = {"mode": "ANY", "allowedFunctionNames": [choice["name"]]}
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
    signed = model.startswith("gemini-3")
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
        # A Gemini 3 call with no signature of this model's gets the documented placeholder.
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
    everything else come out exactly as without streaming. A chunk `{"error": …}` raises.
    """

    def __init__(self) -> None:
        self.parts: list[dict] = []
        self.last: dict = {}          # the latest chunk, for usage, model version and response id
        self.finish: str | None = None
        self.blocked = False

    def feed(self, event: str | None, data: str) -> None:
        if not data or not data.strip():
            return
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
            return
        candidate = candidates[0]
        content = candidate.get("content") if isinstance(candidate.get("content"), dict) else {}
        for part in content.get("parts") or []:
            if isinstance(part, dict):
                self._add_part(part)
        if candidate.get("finishReason"):
            self.finish = candidate["finishReason"]

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
resolve_stored = nothing_stored
stored_records = no_records


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


# ---------------------------------------------------------------------------------------------------
# Server side: what the simulator reads and writes
# ---------------------------------------------------------------------------------------------------

#: The fields of a GenerateContentRequest this codec models; they do not land in `extras`.
MODELLED = {"contents", "systemInstruction", "system_instruction", "tools", "toolConfig", "tool_config",
            "generationConfig", "generation_config", "model"}
#: Every top-level field the API knows (both spellings, as Google's parser takes both); the ones the
#: kit does not model (safetySettings, cachedContent, ...) are kept in `extras`.
REQUEST_FIELDS = MODELLED | {
    "safetySettings", "safety_settings", "cachedContent", "cached_content", "labels", "serviceTier",
    "service_tier", "continuationToken", "continuation_token", "store"}


def parse_request(body: Any, model: str | None = None) -> ChatRequest:
    """Decode a generateContent request; `model` comes from the URL path (`/models/{model}:…`).

    Accepts camelCase and snake_case field names, `parametersJsonSchema` and OpenAPI-style `parameters`.
    Checks the documented 400s, with the API's wording: non-empty `contents` and `parts`, valid roles, a
    function-call turn follows a user turn, a function-response turn follows a function-call turn and
    answers every call (by id when given, else by name). For Gemini 3 models, the first call of every
    step of the current turn carries a thought signature of this model's (or the documented placeholder).
    Whether the request streams is in the URL, not the body, so `options.stream` is left False for the
    server to set.
    """
    if not isinstance(body, dict):
        raise RequestInvalid("Invalid JSON payload received. Expected an object (GenerateContentRequest).")
    model = model if model is not None else body.get("model")
    if not isinstance(model, str) or not model:
        raise RequestInvalid("* GenerateContentRequest.model: unexpected model name format", "model")
    model = _bare_model(model)
    unknown = [k for k in body if k not in REQUEST_FIELDS]
    if unknown:  # proto JSON knows its fields: anything else is refused by name
        raise RequestInvalid(f'Invalid JSON payload received. Unknown name "{unknown[0]}": Cannot find field.',
                             unknown[0])
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents:
        raise RequestInvalid("* GenerateContentRequest.contents: contents is not specified", "contents")

    messages: list[Message] = _system_field(_get(body, "systemInstruction"))
    previous_role: str | None = None
    previous_calls: list[ToolCall] = []  # the calls of the content just before, when it was a model turn
    for i, content in enumerate(contents):
        role, parts = _content_parts(i, content)
        if role == "model":
            assistant = _model_turn(i, parts, previous_role, model)
            messages.append(assistant)
            previous_calls = list(assistant.tool_calls)
        else:
            messages.extend(_user_turn(i, parts, previous_calls if previous_role == "model" else []))
            previous_calls = []
        previous_role = role
    if model.startswith("gemini-3"):
        _check_signatures(contents, model)

    tools, server_tools = _tools_field(body.get("tools"))
    choice, allowed = _tool_config_field(_get(body, "toolConfig"))
    max_tokens, temperature, other_generation = _generation_field(_get(body, "generationConfig"))
    extras = {k: v for k, v in body.items() if k not in MODELLED}
    if server_tools:
        extras["server_tools"] = server_tools
    if allowed is not None:
        extras["allowed_function_names"] = allowed
    if other_generation:
        extras["generationConfig"] = other_generation
    options = ModelOptions(tool_choice=choice, max_tokens=max_tokens, temperature=temperature)
    return ChatRequest(model, tuple(messages), tuple(tools), options, extras=extras)


def _system_field(system: Any) -> list[Message]:
    if system is None:
        return []
    # A Content object, like every entry of `contents`; proto JSON refuses anything else (a bare
    # string included), so a learner who writes `"systemInstruction": "Be brief."` sees the 400.
    if not isinstance(system, dict) or not isinstance(system.get("parts", []), list):
        raise RequestInvalid("Invalid value at 'system_instruction' (type.googleapis.com/"
                             f"google.ai.generativelanguage.v1beta.Content), {dumps(system)[:80]}",
                             "system_instruction")
    for j, part in enumerate(system.get("parts", [])):
        _check_part(f"system_instruction.parts[{j}]", "user", part)
    texts = [p["text"] for p in system.get("parts", [])
             if isinstance(p, dict) and isinstance(p.get("text"), str)]
    return [Message.system("\n".join(texts))] if texts else []


def _content_parts(i: int, content: Any) -> tuple[str, list[dict]]:
    where = f"contents[{i}]"
    if not isinstance(content, dict):
        raise RequestInvalid(f"Invalid value at '{where}' (type.googleapis.com/"
                             "google.ai.generativelanguage.v1beta.Content)", where)
    role = content.get("role", "user")  # a lone prompt may omit the role
    if role == "function":
        role = "user"  # older examples send results with this role; the API still takes it
    if role not in ("user", "model"):
        raise RequestInvalid("Please use a valid role: user, model.", f"{where}.role")
    parts = content.get("parts")
    if not isinstance(parts, list) or not parts:
        raise RequestInvalid(f"* GenerateContentRequest.{where}.parts: contents.parts must not be empty.",
                             f"{where}.parts")
    for j, part in enumerate(parts):
        _check_part(f"{where}.parts[{j}]", role, part)
    return role, parts


_SKIPPED_PARTS = ("inlineData", "fileData", "executableCode", "codeExecutionResult", "videoMetadata")


def _check_part(where: str, role: str, part: Any) -> None:
    if not isinstance(part, dict):
        raise RequestInvalid(f"Invalid value at '{where}' (type.googleapis.com/"
                             "google.ai.generativelanguage.v1beta.Part)", where)
    text, call, response = part.get("text"), _get(part, "functionCall"), _get(part, "functionResponse")
    signature = _get(part, "thoughtSignature")
    if signature is not None and not _is_base64(signature):
        raise RequestInvalid(f"Invalid value at '{where}.thought_signature' (TYPE_BYTES), Base64 decoding failed "
                             f"for {dumps(signature)[:80]}", f"{where}.thought_signature")
    if text is None and call is None and response is None:
        if any(_get(part, k) is not None for k in _SKIPPED_PARTS):
            return
        raise RequestInvalid(f"* GenerateContentRequest.{where}.data: required oneof field 'data' must have "
                             "one initialized field", f"{where}.data")
    if text is not None and not isinstance(text, str):
        raise RequestInvalid(f"Invalid value at '{where}.text' (TYPE_STRING), {dumps(text)[:80]}",
                             f"{where}.text")
    for field, value in (("function_call", call), ("function_response", response)):
        if value is None:
            continue
        if not isinstance(value, dict):
            kind = "FunctionCall" if field == "function_call" else "FunctionResponse"
            raise RequestInvalid(f"Invalid value at '{where}.{field}' (type.googleapis.com/"
                                 f"google.ai.generativelanguage.v1beta.{kind})", f"{where}.{field}")
        if not isinstance(value.get("name"), str) or not value["name"]:
            raise RequestInvalid(f"* GenerateContentRequest.{where}.{field}.name: Name cannot be empty.",
                                 f"{where}.{field}.name")
        if "id" in value and not isinstance(value["id"], str):
            raise RequestInvalid(f"Invalid value at '{where}.{field}.id' (TYPE_STRING)",
                                 f"{where}.{field}.id")
    if call is not None:
        if role != "model":
            raise RequestInvalid(f"* GenerateContentRequest.{where}.function_call: function calls can only "
                                 "appear in model turns.", f"{where}.function_call")
        if not isinstance(call.get("args", {}), dict):
            raise RequestInvalid(f"Invalid value at '{where}.function_call.args' "
                                 "(type.googleapis.com/google.protobuf.Struct)",
                                 f"{where}.function_call.args")
    if response is not None:
        if role != "user":
            raise RequestInvalid(f"* GenerateContentRequest.{where}.function_response: function responses "
                                 "can only appear in user turns.", f"{where}.function_response")
        if not isinstance(response.get("response", {}), dict):
            raise RequestInvalid(f"Invalid value at '{where}.function_response.response' "
                                 "(type.googleapis.com/google.protobuf.Struct)",
                                 f"{where}.function_response.response")


def _is_base64(value: Any) -> bool:
    """Proto JSON `bytes`: base64 text, in the standard or the URL-safe alphabet."""
    if not isinstance(value, str):
        return False
    text = value.replace("-", "+").replace("_", "/")
    try:
        base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _model_turn(i: int, parts: list[dict], previous_role: str | None, model: str) -> Message:
    wire_calls = [_get(p, "functionCall") for p in parts if _get(p, "functionCall") is not None]
    if wire_calls and previous_role != "user":
        raise RequestInvalid("Please ensure that function call turn comes immediately after a user turn or "
                             "after a function response turn.", f"contents[{i}]")
    # Id-less calls in the history get ids here too, so the neutral results can point at them.
    invented = synthetic_ids(f"request:{i}", [(c["name"], c.get("args")) for c in wire_calls])
    calls = [ToolCall.from_raw(c.get("id") or invented[k], c["name"], c.get("args") or {})
             for k, c in enumerate(wire_calls)]
    texts = [p["text"] for p in parts if isinstance(p.get("text"), str) and not p.get("thought")]
    return Message.assistant("".join(texts) or None, calls, reasoning_of(parts, model))


def _check_signatures(contents: list[dict], model: str) -> None:
    """Gemini 3's rules for thought signatures, in the API's words.

    Every signature must be an intact Gemini signature (or the documented placeholder); one another
    Gemini model made passes, its thought is simply not used. In the current turn (everything after the
    last user content that is not only function responses) the first functionCall part of each model step
    must carry one; earlier turns are not checked.
    """
    current = 0
    asked = ""  # the user request each model turn answers (common.conversation_of, on the wire)
    for i, content in enumerate(contents):
        parts = content.get("parts") or []
        for part in parts:
            signature = _get(part, "thoughtSignature")
            # 400 INVALID_ARGUMENT "Corrupted thought signature.", no field named (reported bodies:
            # https://github.com/lbjlaq/Antigravity-Manager/issues/970, https://github.com/massgen/MassGen/issues/665)
            if signature is not None and signature != THOUGHT_SIGNATURE_PLACEHOLDER and \
                    not signature_valid(signature, SIGNATURE_KIND, signed_content(parts), asked):
                raise RequestInvalid("Corrupted thought signature.")
        if content.get("role", "user") != "model":
            asked = "\n".join(p["text"] for p in parts if isinstance(p.get("text"), str)) or asked
            if any(_get(p, "functionResponse") is None for p in parts):
                current = i + 1
    for i in range(current, len(contents)):
        calls = [p for p in contents[i].get("parts") or [] if _get(p, "functionCall") is not None]
        if contents[i].get("role") == "model" and calls and _get(calls[0], "thoughtSignature") is None:
            raise RequestInvalid(
                "Function call is missing a thought_signature in functionCall parts. This is required for tools "
                "to work correctly, and missing thought_signature may lead to degraded model performance. "
                f"Additional data, function call `default_api:{_get(calls[0], 'functionCall')['name']}` , "
                f"position {i + 1}. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures "
                "for more details.", f"contents[{i}]")


def _user_turn(i: int, parts: list[dict], calls: list[ToolCall]) -> list[Message]:
    """Tool messages for the functionResponse parts (answering `calls`, the turn before), then the text."""
    responses = [_get(p, "functionResponse") for p in parts if _get(p, "functionResponse") is not None]
    texts = [p["text"] for p in parts if isinstance(p.get("text"), str)]
    messages: list[Message] = []
    if responses:
        if not calls:
            raise RequestInvalid("Please ensure that function response turn comes immediately after a "
                                 "function call turn.", f"contents[{i}]")
        if len(responses) != len(calls):
            raise RequestInvalid("Please ensure that the number of function response parts is equal to the "
                                 "number of function call parts of the function call turn.", f"contents[{i}]")
        by_id = {c.id: c for c in calls}
        unanswered = list(calls)
        for k, response in enumerate(responses):
            if "id" in response:
                if response["id"] not in by_id:
                    raise RequestInvalid("functionResponse.id does not match functionCall.id",
                                         f"contents[{i}].parts[{k}].function_response.id")
                call_id = response["id"]
            else:
                # No id: the documented link is the name (FunctionResponse.name "matches FunctionCall.name");
                # between calls of one name, the first not yet answered (our choice: the docs say no more).
                call = next((c for c in unanswered if c.name == response["name"]), None)
                if call is None:
                    raise RequestInvalid(f"functionResponse.name {response['name']!r} matches no functionCall of "
                                         "the previous turn", f"contents[{i}].parts[{k}].function_response.name")
                call_id = call.id
            unanswered = [c for c in unanswered if c.id != call_id]
            content, is_error = _response_content(response.get("response", {}))
            messages.append(Message("tool", content, (), call_id, response["name"], is_error))
    if texts or not responses:
        messages.append(Message.user("\n".join(texts)))
    return messages


def _response_content(response: dict) -> tuple[str, bool]:
    """`{"output": x}` / `{"error": x}` back to the tool message text (x re-serialised when not a str)."""
    if len(response) == 1 and ("output" in response or "error" in response):
        (key, value), = response.items()
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        return text, key == "error"
    return json.dumps(response, ensure_ascii=False), "error" in response


def _tools_field(tools: Any) -> tuple[list[ToolSpec], list[dict]]:
    if tools is None:
        return [], []
    if not isinstance(tools, list):
        raise RequestInvalid("Invalid value at 'tools' (type.googleapis.com/google.ai.generativelanguage."
                             "v1beta.Tool)", "tools")
    specs: list[ToolSpec] = []
    server_tools: list[dict] = []
    for t, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise RequestInvalid(f"Invalid value at 'tools[{t}]' (type.googleapis.com/"
                                 "google.ai.generativelanguage.v1beta.Tool)", f"tools[{t}]")
        declarations = _get(tool, "functionDeclarations")
        if declarations is None:
            server_tools.append(tool)  # googleSearch, codeExecution, ...: the server's own tools
            continue
        if not isinstance(declarations, list):
            raise RequestInvalid(f"Invalid value at 'tools[{t}].function_declarations'",
                                 f"tools[{t}].function_declarations")
        specs.extend(tool_from_wire(d, f"tools[{t}].function_declarations[{k}]")
                     for k, d in enumerate(declarations))
    return specs, server_tools


def _tool_config_field(config: Any) -> tuple[ToolChoice, list | None]:
    """`toolConfig` back to a tool_choice; ANY with several allowed names keeps them for `extras`."""
    if config is None:
        return "auto", None
    if not isinstance(config, dict):
        raise RequestInvalid("Invalid value at 'tool_config' (type.googleapis.com/google.ai.generativelanguage."
                             f"v1beta.ToolConfig), {dumps(config)[:80]}", "tool_config")
    calling = _get(config, "functionCallingConfig")
    if calling is None:
        return "auto", None
    if not isinstance(calling, dict):
        raise RequestInvalid("Invalid value at 'tool_config.function_calling_config'",
                             "tool_config.function_calling_config")
    mode = calling.get("mode", "AUTO")
    allowed = _get(calling, "allowedFunctionNames")
    if allowed is not None and not (isinstance(allowed, list) and all(isinstance(n, str) for n in allowed)):
        raise RequestInvalid("Invalid value at 'tool_config.function_calling_config.allowed_function_names'",
                             "tool_config.function_calling_config.allowed_function_names")
    if mode in ("AUTO", "MODE_UNSPECIFIED", "VALIDATED"):
        return "auto", None
    if mode == "NONE":
        return "none", None
    if mode == "ANY":
        if allowed and len(allowed) == 1:
            return {"name": allowed[0]}, None
        return "required", allowed or None
    raise RequestInvalid("Invalid value at 'tool_config.function_calling_config.mode' (type.googleapis.com/"
                         "google.ai.generativelanguage.v1beta.FunctionCallingConfig.Mode), "
                         f"{dumps(mode)[:80]}", "tool_config.function_calling_config.mode")


def _generation_field(config: Any) -> tuple[int | None, float | None, dict]:
    if config is None:
        return None, None, {}
    if not isinstance(config, dict):
        raise RequestInvalid("Invalid value at 'generation_config'", "generation_config")
    max_tokens, temperature = _get(config, "maxOutputTokens"), config.get("temperature")
    if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int)):
        raise RequestInvalid(f"Invalid value at 'generation_config.max_output_tokens' (TYPE_INT32), "
                             f"{dumps(max_tokens)[:80]}", "generation_config.max_output_tokens")
    if temperature is not None and (isinstance(temperature, bool)
                                    or not isinstance(temperature, (int, float))):
        raise RequestInvalid(f"Invalid value at 'generation_config.temperature' (TYPE_FLOAT), "
                             f"{dumps(temperature)[:80]}", "generation_config.temperature")
    other = {k: v for k, v in config.items()
             if k not in ("maxOutputTokens", "max_output_tokens", "temperature")}
    return max_tokens, temperature, other


def call_ids_enabled(request: ChatRequest) -> bool:
    """Whether responses carry `functionCall.id`: `extras[CALL_IDS_OPTION]` when set, else only for
    `gemini-3*` models, so the simulator shows both the old (id-less) and the new behaviour."""
    if CALL_IDS_OPTION in request.extras:
        return bool(request.extras[CALL_IDS_OPTION])
    return _bare_model(request.model).startswith("gemini-3")


def response_id(turn: ModelTurn, request: ChatRequest) -> str:
    """The turn's own id, or one derived from what identifies it (same request -> same id)."""
    if turn.id:
        return turn.id
    return stable_id(request.model, len(request.messages), turn.text,
                     [c.to_dict() for c in turn.tool_calls], length=22)


def call_ids(turn: ModelTurn, request: ChatRequest) -> list[str | None]:
    """Per call: a short Gemini-3-style id (kept when the call already has one), or None when ids are off."""
    if not call_ids_enabled(request):
        return [None] * len(turn.tool_calls)
    rid = response_id(turn, request)
    return [c.id if _GEMINI_ID_RE.fullmatch(c.id) else stable_id(rid, i, c.id, length=8)
            for i, c in enumerate(turn.tool_calls)]


def _finish_reason(turn: ModelTurn) -> str:
    if turn.native_stop in KNOWN_FINISH_REASONS:
        neutral = FINISH_TO_NEUTRAL.get(turn.native_stop, "other")
        if neutral == turn.stop or (turn.stop == "tool_calls" and neutral in ("stop", "other")):
            return turn.native_stop
    return NEUTRAL_TO_FINISH.get(turn.stop, "STOP")


def reasoning_for(turn: ModelTurn, request: ChatRequest) -> ReasoningState | None:
    """Gemini 3 signs every answer: the first functionCall part of a turn with calls (a parallel batch
    has one signature, on its first call), else the last part. The signature names the model it serves and
    covers the turn's text and calls and the user request it answers (see `signed_content`)."""
    model = _bare_model(request.model)
    if not model.startswith("gemini-3"):
        return None
    answer = [{"text": turn.text}] if turn.text else []
    answer += [{"functionCall": {"name": c.name, "args": c.arguments_object()}} for c in turn.tool_calls]
    signature = mint_signature(SIGNATURE_KIND, model, signed_content(answer), conversation_of(request.messages))
    item = {"thoughtSignature": signature, "on": "functionCall", "index": 0} if turn.tool_calls else \
        {"thoughtSignature": signature, "on": "text"}
    return ReasoningState(NAME, turn.model or request.model, (item,))


def signed_content(parts: list[dict]) -> list:
    """What the simulator's thought signature covers: the model turn it rides in (its answer text and its
    calls, by name and arguments; thought summaries aside). Computed from the parts on both sides, so a
    signature moved onto another turn, or a turn whose calls were edited, is refused. (Google does not say
    what its signatures cover; binding the turn is the simulator's choice, so that edited reasoning state
    meets the API's refusal for an altered signature.)"""
    text = "".join(p["text"] for p in parts if isinstance(p.get("text"), str) and not p.get("thought"))
    calls = [_get(p, "functionCall") for p in parts if isinstance(_get(p, "functionCall"), dict)]
    return [text, [[c.get("name"), c.get("args") or {}] for c in calls]]


def _parts(turn: ModelTurn, request: ChatRequest) -> tuple[list[dict], list[dict]]:
    """(thought and text parts, functionCall parts) of the response, signed as the turn's state says."""
    state = turn.reasoning if turn.reasoning is not None and turn.reasoning.format == NAME else None
    items = state.items if state else ()
    text, call_signatures = signed_text_parts(items, turn.text)
    calls = [call_part(call, call_id, call_signatures.get(k))
             for k, (call, call_id) in enumerate(zip(turn.tool_calls, call_ids(turn, request), strict=True))]
    return text, calls


def _usage_to_wire(usage: Usage) -> dict:
    return {"promptTokenCount": usage.input_tokens, "candidatesTokenCount": usage.output_tokens,
            "totalTokenCount": usage.total_tokens}


def build_response(turn: ModelTurn, request: ChatRequest) -> dict:
    """The JSON a real server answers (reference §4.5); validates as `GenerateContentResponse`."""
    text, calls = _parts(turn, request)
    return {"candidates": [{"content": {"role": "model", "parts": text + calls},
                            "finishReason": _finish_reason(turn), "index": 0}],
            "usageMetadata": _usage_to_wire(turn.usage),
            "modelVersion": turn.model or request.model, "responseId": response_id(turn, request)}


def build_stream(turn: ModelTurn, request: ChatRequest) -> list[SSEvent]:
    """The same response as `data:`-only SSE chunks (reference §4.8), each a full response.

    The text goes out in pieces (a signature on the last piece), then one call per chunk (with its
    signature); the last chunk carries `finishReason` and the final usage (earlier ones only count the
    prompt). No event names, no `[DONE]`.
    """
    text, calls = _parts(turn, request)
    pieces = [[part] for part in text if part.get("thought")]
    plain = [part for part in text if not part.get("thought")]
    if plain:  # the text in pieces; a signature comes with the last piece
        words = plain[0]["text"]
        chunks = [{"text": words[i:i + 24]} for i in range(0, len(words), 24)] or [{"text": ""}]
        if "thoughtSignature" in plain[0]:
            chunks[-1]["thoughtSignature"] = plain[0]["thoughtSignature"]
        pieces += [[chunk] for chunk in chunks]
    pieces += [[call] for call in calls]
    if not pieces:
        pieces = [[]]
    head = {"modelVersion": turn.model or request.model, "responseId": response_id(turn, request)}
    events = []
    for n, parts in enumerate(pieces):
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        last = n == len(pieces) - 1
        if last:
            candidate["finishReason"] = _finish_reason(turn)
        usage = _usage_to_wire(turn.usage) if last else {
            "promptTokenCount": turn.usage.input_tokens, "totalTokenCount": turn.usage.input_tokens}
        events.append(SSEvent(dumps({"candidates": [candidate], "usageMetadata": usage, **head})))
    return events


def build_error(status: int, message: str, error_type: str | None = None, **kw: Any) -> dict:
    """Google's RPC error body: `{"error": {"code", "message", "status", "details"}}`.

    `error_type` is the RPC status name (defaults from the status, §4.9). Details follow the API: a 429
    gets QuotaFailure + RetryInfo (`retry_after=` seconds, default 1), a 400 with `param=` gets a
    BadRequest field violation, `reason=` adds an ErrorInfo (e.g. "API_KEY_INVALID"); `details=` replaces
    them all.
    """
    if error_type is None:
        error_type = STATUS_NAMES.get(status, "INTERNAL" if status >= 500 else "INVALID_ARGUMENT")
    details = kw.get("details")
    if details is None:
        details = []
        if kw.get("reason"):
            details.append({"@type": _TYPE_URL + "ErrorInfo", "reason": kw["reason"],
                            "domain": "googleapis.com",
                            "metadata": {"service": "generativelanguage.googleapis.com"}})
        if status == 400 and kw.get("param"):
            details.append({"@type": _TYPE_URL + "BadRequest",
                            "fieldViolations": [{"field": kw["param"], "description": message}]})
        if status == 429:
            delay = kw.get("retry_after")
            delay = 1 if delay is None else delay
            details.append({"@type": _TYPE_URL + "QuotaFailure", "violations": [{
                "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]})
            details.append({"@type": _TYPE_URL + "RetryInfo", "retryDelay": f"{delay:g}s"})
    error: dict[str, Any] = {"code": status, "message": message, "status": error_type}
    if details:
        error["details"] = details
    return {"error": error}


def build_stream_error(status: int, message: str, request: ChatRequest,
                       sent: Sequence[StreamEvent] = ()) -> JSONLine:
    """A failure after the stream started, as Gemini sends it: the error body itself, pretty-printed,
    on plain lines between the `data:` events (not an event of its own). google-genai buffers such
    lines until the braces balance and raises the error's class (503 -> ServerError); an SSE parser
    that keeps only `data:` lines never sees it, and its stream just ends without a finishReason."""
    return JSONLine(json.dumps(build_error(status, message), indent=2, ensure_ascii=False))


def build_model_list(names: Sequence[str]) -> dict:
    """GET /v1beta/models: `{"models": [{"name": "models/…", "supportedGenerationMethods", ...}]}`."""
    methods = ["generateContent", "streamGenerateContent", "countTokens"]
    return {"models": [{"name": f"models/{n}", "displayName": n, "version": "sim", "inputTokenLimit": 1048576,
                        "outputTokenLimit": 65536, "supportedGenerationMethods": methods} for n in names]}


def model_refusal(request: ChatRequest) -> RequestInvalid | None:
    """No documented per-model refusal is reproduced for Gemini."""
    return None
