"""Reasoning state in each format, and each API's documented refusals when it is dropped or altered.

The contract test (test_codec_contract.py) proves that every format carries its state both ways. Here
the per-format details: the exact 400s the real APIs answer (wording checked against their docs and
reported errors; the sources are in agentkit/sim/fidelity.toml), the shapes the simulator never emits itself
(redacted thinking, thought summaries, Google's `extra_content`, split reasoning details), and where
the state goes back.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from agentkit.core.types import Message, ModelOptions, ModelTurn, ReasoningState, ToolCall, ToolResult, ToolSpec
from agentkit.providers import anthropic, gemini, ollama, openai_chat, openai_responses, openrouter
from agentkit.sim.wire import anthropic as anthropic_server
from agentkit.sim.wire import gemini as gemini_server
from agentkit.sim.wire import get_server
from agentkit.sim.wire import ollama as ollama_server
from agentkit.sim.wire import openai_responses as openai_responses_server
from agentkit.sim.wire.common import ChatRequest, RequestInvalid, mint_signature

WEATHER = ToolSpec("get_weather", "Current weather for a city",
                   {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
ASK = Message.user("Weather in Tokyo and Osaka?")


def call(i: int, city: str) -> ToolCall:
    return ToolCall.from_raw(f"call_{i}", "get_weather", {"city": city})


def results(turn: ModelTurn) -> list[Message]:
    return [Message.tool(ToolResult.success(c, "sunny")) for c in turn.tool_calls]


def replay(codec, model: str, messages, **extras) -> ChatRequest:
    wire = codec.build_request(model, messages, [WEATHER], ModelOptions(max_tokens=2048), **extras)
    return get_server(codec.NAME).parse_request(json.loads(json.dumps(wire.body)), model=model)


def refusal(codec, body: dict, model: str | None = None) -> RequestInvalid:
    with pytest.raises(RequestInvalid) as info:
        get_server(codec.NAME).parse_request(body, model=model)
    return info.value


# --- Anthropic: thinking blocks ---------------------------------------------------------------------------

THINKING = {"type": "enabled", "budget_tokens": 1024}


def claude_turn(*calls: ToolCall, thought: str = "I should look both up.") -> ModelTurn:
    """A turn as the simulator issues it: the signature covers the thought and the user request (ASK)."""
    block = {"type": "thinking", "thinking": thought,
             "signature": mint_signature(anthropic_server.SIGNATURE_KIND, None, thought, ASK.content)}
    return ModelTurn(None, calls, "tool_calls", model="claude-sonnet-4-5",
                     reasoning=ReasoningState("anthropic", "claude-sonnet-4-5", (block,)))


def claude_body(assistant_content: list, **extra) -> dict:
    return {"model": "claude-sonnet-4-5", "max_tokens": 2048, "thinking": THINKING, "tools": [
        anthropic.tool_to_wire(WEATHER)], "messages": [
        {"role": "user", "content": ASK.content},
        {"role": "assistant", "content": assistant_content},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"}]}],
        **extra}


TOOL_USE = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Tokyo"}}


def test_claude_thinking_blocks_go_back_first_and_unmodified():
    turn = claude_turn(call(1, "Tokyo"), call(2, "Osaka"))
    body = anthropic.build_request("claude-sonnet-4-5", [ASK, turn.as_message(), *results(turn)], [WEATHER],
                                   thinking=THINKING).body
    assert body["messages"][1]["content"][0] == turn.reasoning.items[0]
    assert [b["type"] for b in body["messages"][1]["content"]] == ["thinking", "tool_use", "tool_use"]
    assert replay(anthropic, "claude-sonnet-4-5", [ASK, turn.as_message(), *results(turn)],
                  thinking=THINKING).messages[1].reasoning == turn.reasoning


@pytest.mark.parametrize("content, found", [([TOOL_USE], "tool_use"),
                                            ([{"type": "text", "text": "Looking."}, TOOL_USE], "text")])
def test_claude_refuses_a_tool_cycle_whose_assistant_turn_does_not_start_with_thinking(content, found):
    error = refusal(anthropic, claude_body(content))
    assert error.message.startswith(
        f"messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{found}`. When "
        "`thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the "
        "lastmost set of `tool_use` and `tool_result` blocks).")
    assert "To avoid this requirement, disable `thinking`." in error.message
    # The same history without thinking is fine: the requirement comes with `thinking`.
    body = claude_body(content)
    del body["thinking"]
    anthropic_server.parse_request(body)


def test_claude_with_thinking_takes_tool_choice_auto_or_none_only():
    block = claude_turn().reasoning.items[0]
    for choice in ({"type": "any"}, {"type": "tool", "name": "get_weather"}):
        error = refusal(anthropic, claude_body([block, TOOL_USE], tool_choice=choice))
        assert error.message == "Thinking may not be enabled when tool_choice forces tool use."
    for choice in ({"type": "auto"}, {"type": "none"}):
        anthropic_server.parse_request(claude_body([block, TOOL_USE], tool_choice=choice))


@pytest.mark.parametrize("budget, max_tokens, message", [
    (512, 2048, "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"),
    (2048, 2048, "`max_tokens` must be greater than `thinking.budget_tokens`."),
])
def test_claude_thinking_budget_is_checked_as_the_api_does(budget, max_tokens, message):
    body = claude_body([TOOL_USE], thinking={"type": "enabled", "budget_tokens": budget}, max_tokens=max_tokens)
    assert refusal(anthropic, body).message.startswith(message)


def test_an_altered_thinking_block_has_an_invalid_signature():
    block = dict(claude_turn().reasoning.items[0], thinking="I changed my mind.")
    assert refusal(anthropic, claude_body([block, TOOL_USE])).message == \
        "messages.1.content.0: Invalid `signature` in `thinking` block"


def test_redacted_thinking_is_kept_and_streamed_whole():
    redacted = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8"}
    body = {"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [redacted, TOOL_USE], "stop_reason": "tool_use", "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5}}
    turn = anthropic.parse_response(body)
    assert turn.reasoning == ReasoningState("anthropic", "claude-sonnet-4-5", (redacted,))
    request = ChatRequest("claude-sonnet-4-5", (ASK,), (WEATHER,))
    assembler = anthropic.StreamAssembler()
    for event in anthropic_server.build_stream(turn, request):
        assembler.feed(event.event, event.data)
    assert assembler.turn().reasoning == turn.reasoning
    wire = anthropic.build_request("claude-sonnet-4-5", [ASK, turn.as_message(), *results(turn)], [WEATHER]).body
    assert wire["messages"][1]["content"][0] == redacted


def test_a_signature_split_over_several_deltas_is_joined():
    assembler = anthropic.StreamAssembler()
    events = [("message_start", {"message": {"id": "msg_1", "model": "claude-sonnet-4-5", "usage": {}}}),
              ("content_block_start", {"index": 0, "content_block": {"type": "thinking", "thinking": "",
                                                                     "signature": ""}}),
              ("content_block_delta", {"index": 0, "delta": {"type": "thinking_delta", "thinking": "Hm"}}),
              ("content_block_delta", {"index": 0, "delta": {"type": "signature_delta", "signature": "Ab"}}),
              ("content_block_delta", {"index": 0, "delta": {"type": "signature_delta", "signature": "Cd"}}),
              ("content_block_stop", {"index": 0}),
              ("message_delta", {"delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}}),
              ("message_stop", {})]
    for name, payload in events:
        assembler.feed(name, json.dumps({"type": name, **payload}))
    assert assembler.turn().reasoning.items == ({"type": "thinking", "thinking": "Hm", "signature": "AbCd"},)


# --- Gemini 3: thought signatures -------------------------------------------------------------------------

G3 = "gemini-3-flash-preview"


def signed(model: str = G3, text: str = "x") -> str:
    """A signature for a text part `text` of a model turn answering ASK."""
    return mint_signature(gemini_server.SIGNATURE_KIND, model, gemini_server.signed_content({"text": text}),
                          ASK.content)


def model_turn(*parts: dict, model: str = G3) -> dict:
    """A model content as the simulator issues it: each part marked `"thoughtSignature": SIGN` gets a
    signature over the kind of part it rides on, answering ASK."""
    def sign(part: dict) -> str:
        return mint_signature(gemini_server.SIGNATURE_KIND, model, gemini_server.signed_content(part), ASK.content)
    return {"role": "model", "parts": [{**p, "thoughtSignature": sign(p)} if p.get("thoughtSignature") is SIGN
                                       else p for p in parts]}


SIGN = object()  # "sign this part" (see model_turn)


def fc(name: str, city: str, signature: str | object | None = None) -> dict:
    part = {"functionCall": {"id": f"id_{city}", "name": name, "args": {"city": city}}}
    return {**part, "thoughtSignature": signature} if signature else part


def fr(city: str) -> dict:
    return {"functionResponse": {"id": f"id_{city}", "name": "get_weather", "response": {"output": "sunny"}}}


def gemini_body(*contents: dict) -> dict:
    return {"contents": [{"role": "user", "parts": [{"text": "Weather in Tokyo and Osaka?"}]}, *contents],
            "tools": [{"functionDeclarations": [gemini.tool_to_wire(WEATHER)]}]}


def test_a_parallel_batch_needs_a_signature_on_its_first_call_only():
    gemini_server.parse_request(gemini_body(model_turn(fc("get_weather", "Tokyo", SIGN), fc("get_weather", "Osaka")),
                                     {"role": "user", "parts": [fr("Tokyo"), fr("Osaka")]}), model=G3)
    error = refusal(gemini, gemini_body(model_turn(fc("get_weather", "Tokyo"), fc("get_weather", "Osaka", SIGN)),
                                        {"role": "user", "parts": [fr("Tokyo"), fr("Osaka")]}), model=G3)
    assert error.message == (
        "Function call is missing a thought_signature in functionCall parts. This is required for tools to work "
        "correctly, and missing thought_signature may lead to degraded model performance. Additional data, "
        "function call `default_api:get_weather` , position 2. Please refer to "
        "https://ai.google.dev/gemini-api/docs/thought-signatures for more details.")


def test_every_sequential_step_of_the_current_turn_needs_its_own_signature():
    steps = [model_turn(fc("get_weather", "Tokyo", SIGN)),
             {"role": "user", "parts": [fr("Tokyo")]},
             {"role": "model", "parts": [fc("get_weather", "Osaka")]},
             {"role": "user", "parts": [fr("Osaka")]}]
    assert "position 4." in refusal(gemini, gemini_body(*steps), model=G3).message
    # Once a new user message starts a new turn, the earlier turn is no longer checked.
    later = gemini_body(*steps, {"role": "model", "parts": [{"text": "Sunny in both."}]},
                        {"role": "user", "parts": [{"text": "Thanks!"}]})
    gemini_server.parse_request(later, model=G3)


def test_the_placeholder_passes_and_a_signature_that_is_not_geminis_is_corrupted():
    body = gemini_body({"role": "model", "parts": [fc("get_weather", "Tokyo",
                                                      gemini.THOUGHT_SIGNATURE_PLACEHOLDER)]},
                       {"role": "user", "parts": [fr("Tokyo")]})
    gemini_server.parse_request(body, model=G3)
    # Another Gemini model's signature is accepted (Google: its thought is left out of the context)...
    body["contents"][1] = model_turn(fc("get_weather", "Tokyo", SIGN), model="gemini-3.1-pro-preview")
    gemini_server.parse_request(body, model=G3)
    # ... one that is truncated, or another API's, is not.
    for foreign in (signed()[:-8], mint_signature(anthropic_server.SIGNATURE_KIND, None, "t"), signed()):
        body["contents"][1]["parts"][0]["thoughtSignature"] = foreign
        assert refusal(gemini, body, model=G3).message == "Corrupted thought signature."
    body["contents"][1]["parts"][0]["thoughtSignature"] = "not base64!"
    assert "Base64 decoding failed" in refusal(gemini, body, model=G3).message
    # Older models check nothing.
    body["contents"][1]["parts"][0].pop("thoughtSignature")
    gemini_server.parse_request(body, model="gemini-2.5-flash")


def test_signatures_go_back_on_the_parts_they_came_with_for_the_same_model_only():
    state = ReasoningState("gemini", G3, ({"thoughtSignature": signed(), "on": "functionCall", "index": 1},))
    turn = ModelTurn(None, (call(1, "Tokyo"), call(2, "Osaka")), "tool_calls", model=G3, reasoning=state)
    history = [ASK, turn.as_message(), *results(turn)]
    parts = gemini.build_request(G3, history, [WEATHER]).body["contents"][1]["parts"]
    assert ["thoughtSignature" in p for p in parts] == [False, True]
    assert parts[1]["thoughtSignature"] == state.items[0]["thoughtSignature"]
    # Another Gemini 3 model gets the documented placeholder instead; an older model gets nothing.
    other = gemini.build_request("gemini-3.1-pro-preview", history, [WEATHER]).body["contents"][1]["parts"]
    assert [p.get("thoughtSignature") for p in other] == [gemini.THOUGHT_SIGNATURE_PLACEHOLDER] * 2
    older = gemini.build_request("gemini-2.5-flash", history, [WEATHER]).body["contents"][1]["parts"]
    assert not any("thoughtSignature" in p for p in older)


def test_thought_summaries_and_a_signature_on_the_last_text_piece_stream_to_the_plain_turn():
    body = {"candidates": [{"content": {"role": "model", "parts": [
        {"text": "Planning the answer.", "thought": True},
        {"text": "Tokyo is sunny.", "thoughtSignature": signed()}]}, "finishReason": "STOP", "index": 0}],
        "modelVersion": G3, "responseId": "r1"}
    plain = gemini.parse_response(body)
    assert plain.text == "Tokyo is sunny."
    assert plain.reasoning.items == ({"text": "Planning the answer.", "thought": True},
                                     {"thoughtSignature": signed(), "on": "text"})
    chunks = [[{"text": "Planning ", "thought": True}], [{"text": "the answer.", "thought": True}],
              [{"text": "Tokyo is "}], [{"text": "sunny.", "thoughtSignature": signed()}]]
    assembler = gemini.StreamAssembler()
    for k, parts in enumerate(chunks):
        candidate = {"content": {"role": "model", "parts": parts}, "index": 0}
        if k == len(chunks) - 1:
            candidate["finishReason"] = "STOP"
        assembler.feed(None, json.dumps({"candidates": [candidate], "modelVersion": G3, "responseId": "r1"}))
    assert assembler.turn() == plain
    wire = gemini.build_request(G3, [ASK, plain.as_message(), Message.user("Thanks")]).body
    assert wire["contents"][1]["parts"] == body["candidates"][0]["content"]["parts"]


# --- OpenAI Responses: reasoning items and stored responses ----------------------------------------------

RS = {"type": "reasoning", "id": "rs_1", "summary": [],  # sealed as the simulator issues it, answering ASK
      "encrypted_content": mint_signature(openai_responses_server.ENCRYPTED_KIND, "gpt-6.1-sol", "rs_1", ASK.content)}
FC = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather",
      "arguments": '{"city": "Tokyo"}'}
OUT = {"type": "function_call_output", "call_id": "call_1", "output": "sunny"}


def responses_body(*items: dict, **extra) -> dict:
    return {"model": "gpt-6.1-sol", "input": [{"role": "user", "content": ASK.content}, *items],
            "tools": [openai_responses.tool_to_wire(WEATHER)], **extra}


@pytest.mark.parametrize("items", [(RS,), (RS, OUT), (RS, {"role": "user", "content": "hi"})])
def test_a_reasoning_item_needs_the_item_it_led_to_right_after_it(items):
    assert refusal(openai_responses, responses_body(*items)).message == \
        "Item 'rs_1' of type 'reasoning' was provided without its required following item."


def test_reasoning_items_go_back_before_their_calls_with_the_calls_item_ids():
    body = {"id": "resp_1", "object": "response", "status": "completed", "model": "gpt-6.1-sol",
            "output": [RS, {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                            "content": [{"type": "output_text", "text": "Checking.", "annotations": []}]}, FC]}
    turn = openai_responses.parse_response(body)
    assert turn.reasoning.items == (RS, {"type": "function_call", "call_id": "call_1", "id": "fc_1"})
    items = openai_responses.build_request("gpt-6.1-sol", [ASK, turn.as_message(), *results(turn)]).body["input"]
    assert items[1:4] == [RS, {"role": "assistant", "content": "Checking."}, FC]
    assert items[4]["type"] == "function_call_output"
    decoded = replay(openai_responses, "gpt-6.1-sol", [ASK, turn.as_message(), *results(turn)])
    assert decoded.messages[1].reasoning == turn.reasoning and decoded.messages[1].content == "Checking."
    # Another model: no reasoning item, and the call without its item id (the server never stored it).
    other = openai_responses.build_request("o4-mini", [ASK, turn.as_message(), *results(turn)]).body["input"]
    assert [i.get("type") for i in other] == [None, None, "function_call", "function_call_output"]
    assert "id" not in other[2]


def kept(records: dict):
    return lambda key: records.get(key)


def test_an_unknown_previous_response_is_refused_with_its_code():
    with pytest.raises(RequestInvalid) as info:
        openai_responses_server.resolve_stored(responses_body(previous_response_id="resp_nope"), kept({}))
    error = info.value
    assert (error.message, error.param, error.code) == (
        "Previous response with id 'resp_nope' not found.", "previous_response_id", "previous_response_not_found")


def test_a_stored_response_continues_from_only_the_new_items():
    first = responses_body()
    response = {"id": "resp_1", "output": [RS, FC]}
    records = openai_responses_server.stored_records(first, response)
    assert set(records) == {"resp_1", "rs_1", "fc_1"} and records["fc_1"]["reasoning"] == "rs_1"
    follow_up = {"model": "gpt-6.1-sol", "previous_response_id": "resp_1", "input": [OUT]}
    resolved = openai_responses_server.resolve_stored(follow_up, kept(records))
    assert resolved["input"] == [*first["input"], RS, FC, OUT]
    request = openai_responses_server.parse_request(resolved)
    assert [m.name for m in request.messages if m.role == "tool"] == ["get_weather"]  # the call is known
    assert openai_responses_server.stored_records({**first, "store": False}, response) == {}


def test_a_stored_call_without_its_reasoning_item_is_refused():
    records = openai_responses_server.stored_records(responses_body(), {"id": "resp_1", "output": [RS, FC]})
    with pytest.raises(RequestInvalid) as info:
        openai_responses_server.resolve_stored(responses_body(FC, OUT), kept(records))
    assert info.value.message == ("Item 'fc_1' of type 'function_call' was provided without its required "
                                  "'reasoning' item: 'rs_1'.")
    openai_responses_server.resolve_stored(responses_body(RS, FC, OUT), kept(records))  # with it: fine
    openai_responses_server.resolve_stored(responses_body(FC, OUT), kept({}))  # a call the server never stored


@pytest.mark.parametrize("store, tail", [(None, ""), (False, " Items are not persisted when `store` is set to "
                                                             "false. Try again with `store` set to true, or remove "
                                                             "this item from your input.")])
def test_a_reasoning_item_without_its_encrypted_content_must_be_stored(store, tail):
    by_id = {k: v for k, v in RS.items() if k != "encrypted_content"}
    body = responses_body(by_id, FC, OUT, **({} if store is None else {"store": store}))
    with pytest.raises(RequestInvalid) as info:
        openai_responses_server.resolve_stored(body, kept({}))
    assert info.value.message == "Item with id 'rs_1' not found." + tail
    openai_responses_server.resolve_stored(body, kept({"rs_1": {"response": "resp_1"}}))


def test_stored_response_id_follows_the_store_switch():
    turn = ModelTurn("hi", id="resp_9")
    assert openai_responses.stored_response_id({"model": "m"}, turn) == "resp_9"
    assert openai_responses.stored_response_id({"model": "m", "store": False}, turn) is None


# --- the Chat family, and Ollama ---------------------------------------------------------------------------

def test_google_extra_content_on_a_tool_call_goes_back_on_that_call():
    extra = {"google": {"thought_signature": "c2lnbmVk"}}
    body = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gemini-3-flash-preview",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": None, "tool_calls": [
                    {"id": "call_1", "type": "function", "extra_content": extra,
                     "function": {"name": "get_weather", "arguments": '{"city": "Tokyo"}'}}]}}]}
    turn = openai_chat.parse_response(body)
    assert turn.reasoning.items == ({"call": 0, "extra_content": extra},)
    wire = openai_chat.build_request("gemini-3-flash-preview", [ASK, turn.as_message(), *results(turn)]).body
    assert wire["messages"][1]["tool_calls"][0]["extra_content"] == extra


def test_openrouter_reasoning_details_streamed_in_pieces_join_by_index():
    details = [{"type": "reasoning.text", "text": "Let me ", "index": 0, "format": "anthropic-claude-v1"},
               {"type": "reasoning.text", "text": "check.", "index": 0},
               {"type": "reasoning.text", "signature": "sig", "index": 0},
               {"type": "reasoning.encrypted", "data": "enc", "index": 1}]
    assembler = openrouter.StreamAssembler()
    head = {"id": "gen-1", "object": "chat.completion.chunk", "created": 1, "model": "anthropic/claude-sonnet-4.5"}
    for detail in details:
        assembler.feed(None, json.dumps({**head, "choices": [{"index": 0, "delta": {
            "reasoning": detail.get("text", ""), "reasoning_details": [detail]}, "finish_reason": None}]}))
    assembler.feed(None, json.dumps({**head, "choices": [{"index": 0, "delta": {"content": "Sunny."},
                                                          "finish_reason": "stop"}]}))
    assembler.feed(None, "[DONE]")
    message = assembler.turn().reasoning.items[0]["message"]
    assert message["reasoning"] == "Let me check."
    assert message["reasoning_details"] == [
        {"type": "reasoning.text", "text": "Let me check.", "index": 0, "format": "anthropic-claude-v1",
         "signature": "sig"},
        {"type": "reasoning.encrypted", "data": "enc", "index": 1}]


def test_ollama_thinking_streams_in_pieces_and_goes_back_on_the_assistant_message():
    request = ChatRequest("qwen3", (ASK,), (WEATHER,), extras={"think": True})
    turn = ModelTurn(None, (call(1, "Tokyo"),), "tool_calls", model="qwen3")
    turn = replace(turn, reasoning=ollama_server.reasoning_for(turn, request))
    lines = ollama_server.build_stream(turn, request)
    assert sum('"thinking"' in line.data for line in lines) >= 2
    assembler = ollama.StreamAssembler()
    for line in lines:
        assembler.feed(None, line.data)
    plain = ollama.parse_response(ollama_server.build_response(turn, request))
    assert assembler.turn().reasoning == turn.reasoning == plain.reasoning
    wire = ollama.build_request("qwen3", [ASK, turn.as_message(), *results(turn)]).body
    assert wire["messages"][1]["thinking"] == turn.reasoning.items[0]["thinking"]


def test_state_from_another_format_never_reaches_the_wire():
    block = {"type": "thinking", "thinking": "t", "signature": "S" * 40}
    state = ReasoningState("anthropic", "claude-sonnet-4-5", (block,))
    message = Message.assistant(None, [call(1, "Tokyo")], state)
    for codec, model in ((gemini, G3), (openai_responses, "claude-sonnet-4-5"), (openai_chat, "claude-sonnet-4-5"),
                         (openrouter, "claude-sonnet-4-5"), (ollama, "claude-sonnet-4-5")):
        body = codec.build_request(model, [ASK, message, Message.tool(ToolResult.success(call(1, "Tokyo"), "x"))]).body
        assert "S" * 40 not in json.dumps(body), codec.NAME
