"""The simulator signs the reasoning state it issues and refuses what comes back altered, as the real APIs do.

Each reasoning-state string the simulator hands out (an Anthropic thinking `signature` or redacted `data`, a
Gemini `thoughtSignature`, a Responses `encrypted_content`) is an HMAC, with this process's key, over the
content it belongs to, the model and the user request it answers (`sim.wire.common.mint_signature`). Here a
conversation is issued the way the server issues it (client encode -> server decode -> the simulator's model
-> the codec's reasoning state -> server encode -> client decode), replayed with its tool results, and the
replay tampered with in every way a learner or a proxy might: flipped, truncated, random, foreign (from
another conversation), minted over other content, invented. Every tampered replay is refused with that API's
own words; every untouched one passes.
"""

from __future__ import annotations

import base64
import json
from dataclasses import replace

import httpx
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from agentkit.core.types import Message, ModelOptions, ToolResult, ToolSpec
from agentkit.providers import anthropic, gemini, openai_responses
from agentkit.sim import behaviours as sim_models
from agentkit.sim.wire import anthropic as anthropic_server
from agentkit.sim.wire import gemini as gemini_server
from agentkit.sim.wire import get_server
from agentkit.sim.wire import openai_responses as openai_responses_server
from agentkit.sim.wire.common import RequestInvalid, mint_signature

WEATHER = ToolSpec("get_weather", "Current weather for a city",
                   {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})

#: format -> (codec, model, request extras that turn reasoning on, the field the state rides in)
FORMATS = {
    "anthropic": (anthropic, "claude-sonnet-4-5", {"thinking": {"type": "enabled", "budget_tokens": 1024}},
                  "signature"),
    "anthropic-redacted": (anthropic, "claude-sonnet-4-5",
                           {"thinking": {"type": "enabled", "budget_tokens": 1024}}, "data"),
    "gemini": (gemini, "gemini-3-flash-preview", {}, "thoughtSignature"),
    "openai-responses": (openai_responses, "gpt-6.1-sol", {"reasoning": {"effort": "low"}}, "encrypted_content"),
}
KIND = {"anthropic": anthropic_server.SIGNATURE_KIND, "anthropic-redacted": anthropic_server.REDACTED_KIND,
        "gemini": gemini_server.SIGNATURE_KIND, "openai-responses": openai_responses_server.ENCRYPTED_KIND}


def wire_json(body: dict) -> dict:
    return json.loads(json.dumps(body))


def issued_turn(fmt: str, asked: str):
    """The client's view of the simulator's answer to `asked`, reasoning state included."""
    codec, model, extras, _ = FORMATS[fmt]
    wire = codec.build_request(model, [Message.user(asked)], [WEATHER], ModelOptions(max_tokens=2048), **extras)
    server = get_server(codec.NAME)
    request = server.parse_request(wire_json(wire.body), model=model)
    turn = sim_models.respond(request)
    turn = replace(turn, reasoning=server.reasoning_for(turn, request))
    turn = codec.parse_response(wire_json(server.build_response(turn, request)))
    if fmt == "anthropic-redacted":  # the block a redacting model would have sent instead of its thinking
        turn = replace(turn, reasoning=replace(turn.reasoning, items=(anthropic_server.redacted_thinking(asked),)))
    return turn


def replay_body(fmt: str, asked: str, turn=None) -> dict:
    """The next request of the conversation: the question, the issued turn, its tool results (or a thank-you
    after a text answer), as the kit's client writes it."""
    codec, model, extras, _ = FORMATS[fmt]
    turn = turn or issued_turn(fmt, asked)
    history = [Message.user(asked), turn.as_message()]
    history += [Message.tool(ToolResult.success(c, "sunny")) for c in turn.tool_calls] or [Message.user("Thanks!")]
    return wire_json(codec.build_request(model, history, [WEATHER], ModelOptions(max_tokens=2048), **extras).body)


def state_fields(body, field: str) -> list[tuple[dict, str]]:
    """Every (object, key) in the body that holds reasoning state of this kind."""
    found = []
    if isinstance(body, dict):
        if isinstance(body.get(field), str) and (field != "data" or body.get("type") == "redacted_thinking"):
            found.append((body, field))
        for value in body.values():
            found += state_fields(value, field)
    elif isinstance(body, list):
        for value in body:
            found += state_fields(value, field)
    return found


def decode(fmt: str, body: dict) -> None:
    codec, model, _, _ = FORMATS[fmt]
    get_server(codec.NAME).parse_request(body, model=model)


def expected_refusal(fmt: str, error: RequestInvalid) -> bool:
    """The real API's words for altered reasoning state (sources in each codec's check)."""
    if fmt == "anthropic":
        return error.message == "messages.1.content.0: Invalid `signature` in `thinking` block"
    if fmt == "anthropic-redacted":
        return error.message == "messages.1.content.0: Invalid `data` in `redacted_thinking` block"
    if fmt == "gemini":
        return error.message == "Corrupted thought signature."
    return (error.code == "invalid_encrypted_content" and error.param is None
            and error.message.startswith("The encrypted content ")
            and error.message.endswith(" could not be verified. Reason: Encrypted content could not be decrypted "
                                       "or parsed."))


ASKED = st.sampled_from(["Weather in Tokyo?", "東京と大阪の天気は？", "Hello!", "What is the weather in Paris "
                                                                        "and in London?", "1ドル何円？"])
TAMPERINGS = ("flipped", "truncated", "random", "foreign", "minted over other content", "invented",
              "question edited")


def tampered(fmt: str, asked: str, how: str, data: st.DataObject) -> dict:
    """A replay of `asked` whose reasoning state (or whose question) was tampered with `how`."""
    _, model, _, field = FORMATS[fmt]
    body = replay_body(fmt, asked)
    holder, key = state_fields(body, field)[0]
    original = holder[key]
    raw = base64.b64decode(original)
    if how == "flipped":
        at = data.draw(st.integers(0, len(raw) - 1), label="byte")
        bit = data.draw(st.integers(0, 7), label="bit")
        holder[key] = base64.b64encode(raw[:at] + bytes([raw[at] ^ (1 << bit)]) + raw[at + 1:]).decode()
    elif how == "truncated":
        keep = data.draw(st.integers(1, len(raw) - 1), label="keep")
        holder[key] = base64.b64encode(raw[:keep]).decode()
    elif how == "random":
        holder[key] = base64.b64encode(data.draw(st.binary(min_size=1, max_size=120), label="bytes")).decode()
    elif how == "foreign":  # the same kind of state, issued for another conversation
        other = data.draw(ASKED.filter(lambda q: q != asked), label="other question")
        holder[key] = state_fields(replay_body(fmt, other), field)[0][0][key]
    elif how == "minted over other content":  # a genuine signature of this process, over other content
        payload = data.draw(st.text(min_size=1, max_size=40), label="payload")
        holder[key] = mint_signature(KIND[fmt], None if fmt.startswith("anthropic") else model, payload, asked)
    elif how == "invented":  # the right shape and prefix, an invented tag
        tag = data.draw(st.text("0123456789abcdef", min_size=32, max_size=32), label="tag")
        holder[key] = base64.b64encode(f"agentkit-sim|{KIND[fmt]}|{model}|{tag}".encode()).decode()
    else:  # the learner rewrote the question the state was issued for
        first = body.get("messages") or body.get("contents") or body.get("input")
        if fmt == "gemini":
            first[0]["parts"][0]["text"] += " (edited)"
        else:
            first[0]["content"] += " (edited)"
        return body
    assume(holder[key] != original)
    return body


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fmt=st.sampled_from(list(FORMATS)), asked=ASKED, how=st.sampled_from(TAMPERINGS), data=st.data())
def test_every_tampered_replay_is_refused_in_the_apis_words(fmt, asked, how, data):
    body = tampered(fmt, asked, how, data)
    with pytest.raises(RequestInvalid) as info:
        decode(fmt, body)
    assert expected_refusal(fmt, info.value), (fmt, how, info.value.message)


@settings(max_examples=150, deadline=None)
@given(fmt=st.sampled_from(list(FORMATS)),
       asked=st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=60).filter(str.strip))
def test_every_untouched_replay_passes(fmt, asked):
    body = replay_body(fmt, asked)
    assert state_fields(body, FORMATS[fmt][3])  # there is reasoning state to check
    decode(fmt, body)


def test_signatures_are_deterministic_within_a_process():
    for fmt in FORMATS:
        assert replay_body(fmt, "Weather in Tokyo?") == replay_body(fmt, "Weather in Tokyo?")


def test_a_signature_names_no_secret_and_cannot_be_rebuilt_from_what_it_shows():
    """What a learner can read in a signature (kind, model) is not enough to mint one: the tag is keyed."""
    body = replay_body("gemini", "Weather in Tokyo?")
    holder, key = state_fields(body, "thoughtSignature")[0]
    mark, kind, model, tag = base64.b64decode(holder[key]).decode().split("|")
    assert (mark, kind, model) == ("agentkit-sim", gemini_server.SIGNATURE_KIND, "gemini-3-flash-preview")
    import hashlib

    unkeyed = hashlib.sha256(json.dumps([kind, model]).encode()).hexdigest()[:32]
    assert tag != unkeyed and len(tag) == 32


def weather(city: str) -> str:
    """Current weather for a city"""
    return "sunny"


# --- over HTTP: the status and the error body each API answers with -----------------------------------------

def post(server, fmt: str, body: dict) -> httpx.Response:
    codec, model, _, _ = FORMATS[fmt]
    wire = codec.build_request(model, [Message.user("x")], [WEATHER])
    base = server.base_url("anthropic" if fmt == "anthropic-redacted" else fmt)
    return httpx.post(base + wire.path, json=body, headers={**wire.headers, **codec.auth_headers("sk-sim")},
                      timeout=10)


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_the_server_answers_an_altered_state_with_the_apis_400_and_an_intact_one_with_200(server, fmt):
    body = replay_body(fmt, "Weather in Tokyo?")
    assert post(server, fmt, body).status_code == 200
    holder, key = state_fields(body, FORMATS[fmt][3])[0]
    holder[key] = base64.b64encode(base64.b64decode(holder[key])[:-1]).decode()
    answer = post(server, fmt, body)
    assert answer.status_code == 400
    error = answer.json()
    if fmt.startswith("anthropic"):
        assert error["type"] == "error" and error["error"]["type"] == "invalid_request_error"
        assert "Invalid `" in error["error"]["message"]
    elif fmt == "gemini":
        assert error["error"] == {"code": 400, "message": "Corrupted thought signature.",
                                  "status": "INVALID_ARGUMENT"}
    else:
        assert error["error"]["type"] == "invalid_request_error"
        assert error["error"]["code"] == "invalid_encrypted_content" and error["error"]["param"] is None


def test_a_whole_run_through_the_server_still_passes(server):
    """The kit's own client, looping with tools, replays every signature it was given: nothing is refused."""
    import agentkit

    for fmt, (_, model, extras, _) in FORMATS.items():
        if fmt == "anthropic-redacted":
            continue
        extras = {**extras, "max_tokens": 4096} if fmt == "anthropic" else extras
        llm = agentkit.HTTPModel(model, fmt, base_url=server.base_url(fmt), api_key="sk-sim", extra_body=extras)
        result = agentkit.run(llm, "Weather in Tokyo and Osaka?", tools=[agentkit.tool(weather, name="get_weather")])
        assert str(result.stop_reason) == "final_answer" and result.steps >= 2, (fmt, result.stop_reason)
        assert any(m.reasoning is not None for m in result.messages), fmt
