"""The server codec contract: every name a format's server half (`sim/wire/<format>.py`) provides.

The simulator serves every registered format (`sim.wire.SERVERS`) and knows none by name: a format's
server half says how the real API decodes (and refuses) a request, writes its responses, streams,
errors (plain and in-stream) and model list, what reasoning state its models attach to a turn, what
the API remembers between requests (stored responses), and, as `SERVER` (a `ServerFacts`), the rest of
what a real server does around the body: its routes, which headers carry the key, what it says when the
key or a header is missing, which header carries the request id, how it words an unknown model, a
failure or a body that is not JSON. `ServerCodec` is the one list of the names; `NAMES` and
`conforms(module)` (what a module lacks) are read from it, as the client contract's are
(`providers.contract.contract_names`). The client half of each format is `agentkit.providers.<format>`
(`providers.contract`).

Reasoning state: `parse_request` reads it the way the real API does (and refuses a request that drops
or alters it, in the API's own words), and `build_response` / `build_stream` write a turn's state the
way the API does (`reasoning_for` makes it, signed with `common.mint_signature`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Literal, Protocol

from ...core.types import ModelTurn, ReasoningState, ToolSpec
from ...providers.common import StreamEvent
from ...providers.contract import contract_names, missing_or_wrong
from .common import ChatRequest, RequestInvalid


@dataclass(frozen=True)
class Route:
    """One HTTP route of a format: `action` is "chat" (a model call), "models" (the model list) or
    "count_tokens" (the request's input tokens, counted as usage counts them: the format's
    `SERVER.count_request` decodes its body).

    `path` uses Starlette's syntax, so a model named in the URL is `{model}` (Gemini). `stream` is True
    or False when the route itself decides (Gemini's `:streamGenerateContent`), None when the body's
    `stream` field does.
    """

    method: str
    path: str
    action: Literal["chat", "models", "count_tokens"] = "chat"
    stream: bool | None = None


@dataclass(frozen=True)
class SpendLimitAnswer:
    """How a provider answers a request over a spend or quota limit (a 429 no retry can fix): its words,
    its error type, and the further error fields that say so (OpenAI's `code`, Anthropic's `details`)."""

    message: str
    error_type: str
    fields: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ServerFacts:
    """What a real server of one format does beyond encoding bodies (the simulator reads these).

    Messages may hold `{model}` (and fault messages `{retry_ms}`); they are filled in by the server.
    """

    routes: tuple[Route, ...]
    #: The base URL the format's official SDK wants, relative to the server root ("" = the root).
    #: (agentkit's own base URL is the path part of the codec's DEFAULT_BASE_URL.)
    sdk_base_path: str
    #: (status, message) a request without any key gets; None when the API needs no key (local Ollama).
    no_key: tuple[int, str] | None
    #: Headers that can carry the key ("authorization" counts only as `Bearer <token>`).
    key_headers: tuple[str, ...]
    #: "The model does not exist" in the provider's words (the status: `unknown_model_status`).
    unknown_model: str
    #: How the provider words a body that is not JSON; `{detail}` is the parser's complaint.
    not_json: str
    #: The provider's words for injected failures, by the status it answers (429, 500, 503, ...).
    fault_messages: Mapping[int, str]
    #: A query parameter that can carry the key instead (Gemini's `?key=`).
    key_query_param: str | None = None
    #: Headers the API requires, with the message it answers (400) when one is missing.
    required_headers: Mapping[str, str] = field(default_factory=dict)
    #: Headers only this format's clients send: they decide which format a shared path (GET /v1/models)
    #: answers in. The first registered format on a path answers when no client header matches.
    client_headers: tuple[str, ...] = ()
    #: The response header that carries the request id (None: the API sends none).
    request_id_header: str | None = None
    #: A response header that repeats the response body's `id` (OpenRouter's X-Generation-Id).
    response_id_header: str | None = None
    #: Statuses this API never answers, mapped to its nearest one (529 is Anthropic's alone).
    nearest_status: Mapping[int, int] = field(default_factory=dict)
    #: Extra headers on a 429 (`{retry_ms}` is filled in), besides retry-after and retry-after-ms.
    rate_limit_headers: Mapping[str, str] = field(default_factory=dict)
    #: True when GET on the model list needs no key (OpenRouter's list is public).
    public_model_list: bool = False
    #: (name, value) of the query parameter that makes a stream SSE; without it the stream route
    #: answers one JSON array written element by element (Gemini's `?alt=sse`). None: always framed.
    sse_query: tuple[str, str] | None = None
    #: The status of the unknown-model answer: 404 almost everywhere; OpenRouter answers 400.
    unknown_model_status: int = 404
    #: The answer to the `spend` fault (a spend or quota limit reached); None: the format's provider
    #: documents no such 429, and the fault answers its ordinary 429.
    spend_limit: SpendLimitAnswer | None = None
    #: How the server gets one answer out of the model, when it does more than ask it once:
    #: `serve_turn(respond, search, request) -> ModelTurn`, where `search` is the simulator's tool search
    #: (`sim.tool_search.run_search`): Anthropic's runs between two passes of the model. None: asked once.
    serve_turn: Callable[..., ModelTurn] | None = None
    #: For a format with a "count_tokens" route: `count_request(body, model) -> ChatRequest`, which decodes
    #: (and refuses, in the API's words) that route's body.
    count_request: Callable[[Any, str | None], ChatRequest] | None = None


class ServerCodec(Protocol):
    """The names every server half defines. Signatures are the ones to implement."""

    # -- the facts around the body ------------------------------------------
    SERVER: ServerFacts

    # -- verbs ---------------------------------------------------------------
    def tool_from_wire(self, d: Any, param: str = ...) -> ToolSpec:
        """One tool definition back to a ToolSpec; RequestInvalid in the API's words when it is wrong."""

    def parse_request(self, body: Any, model: str | None = None) -> ChatRequest:
        """A request body -> ChatRequest, or RequestInvalid with the 4xx the real API would give.
        `model` is the model named in the URL, for formats that put it there."""

    def model_refusal(self, request: ChatRequest) -> RequestInvalid | None:
        """A documented refusal of a model family (e.g. GPT-6 tools on Chat Completions), or None."""

    def reasoning_for(self, turn: ModelTurn, request: ChatRequest) -> ReasoningState | None:
        """The reasoning state this API's model attaches to `turn` when `request` asks for reasoning in
        this format's words (a signed thinking block, a thought signature, a reasoning item, ...), or None."""

    def resolve_stored(self, body: dict, recall: Callable[[str], Any]) -> dict:
        """The request body with what the server remembers filled in (`recall(id)` -> a record that
        `stored_records` made, or None): Responses' `previous_response_id`. RequestInvalid, in the API's
        words, for a reference it does not know. Formats that store nothing return `body` unchanged."""

    def stored_records(self, body: dict, response: dict) -> dict[str, Any]:
        """What the server keeps after answering `body` with `response`: {id: record} for `recall`.
        {} when nothing is stored (every format but Responses, and Responses with `store: false`)."""

    def response_id(self, turn: ModelTurn, request: ChatRequest) -> str:
        """The response's id as this API writes it (`chatcmpl-…`, `msg_01…`, ...), deterministic."""

    def build_response(self, turn: ModelTurn, request: ChatRequest) -> dict:
        """The JSON body a real server answers."""

    def build_stream(self, turn: ModelTurn, request: ChatRequest) -> list[StreamEvent]:
        """The same answer as the events (SSE) or lines (NDJSON) a real server streams."""

    def build_error(self, status: int, message: str, error_type: str | None = None, **details: Any) -> dict:
        """The API's error body. `details` may hold param=, code=, retry_after=, request_id=; a codec
        uses those its format has and ignores the rest."""

    def build_stream_error(self, status: int, message: str, request: ChatRequest,
                           sent: Sequence[StreamEvent] = ()) -> StreamEvent:
        """A failure after the stream started (the HTTP status was already 200), as this API sends it.

        `status` is the status the same failure has as a plain answer (429, 500, 503, 529: already
        mapped through `SERVER.nearest_status`); `sent` are the events already written (a format that
        numbers its events, or repeats an id, continues from them)."""

    def build_model_list(self, names: Sequence[str]) -> dict:
        """The body of GET on the format's model list."""


#: Every name of the server contract: (name, what it must be), read from `ServerCodec`.
NAMES = contract_names(ServerCodec)


def conforms(server: ModuleType) -> list[str]:
    """What `server` lacks or has wrong, one line each; [] when it satisfies the contract."""
    return missing_or_wrong(server, NAMES)
