"""The simulator signs the reasoning state it issues and refuses what comes back altered, as the real APIs do.

Each reasoning-state string the simulator hands out (an Anthropic thinking `signature` or redacted `data`, a
Gemini `thoughtSignature`, a Responses `encrypted_content`) is an HMAC, with the installation's key
(`sim.wire.common.signing_key`: AGENTKIT_SIM_SIGNING_KEY, else a key kept in the user's cache), over the
content it belongs to, the model and the user request it answers (`sim.wire.common.mint_signature`). Here a
conversation is issued the way the server issues it (client encode -> server decode -> the simulator's model
-> the codec's reasoning state -> server encode -> client decode), replayed with its tool results, and the
replay tampered with in every way a learner or a proxy might: flipped, truncated, random, foreign (from
another conversation), minted over other content, invented. Every tampered replay is refused with that API's
own words; every untouched one passes. And because the key outlives the process, a run paused and saved with
its reasoning state resumes in a fresh process (each format that signs), while a simulator with another key
refuses the same state.
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


# -- the key outlives the process -------------------------------------------------------------------------------

#: A paused run with signed reasoning state, in every format (and model kind) that signs it.
SAVED_ACROSS_PROCESSES = {
    "anthropic": ("claude-sonnet-4-5", {"thinking": {"type": "enabled", "budget_tokens": 1024}, "max_tokens": 2048}),
    "anthropic:claude-opus-5-5": ("claude-opus-5-5", {"max_tokens": 2048}),
    "gemini": ("gemini-3-flash-preview", {}),
    "gemini:gemini-4-argon": ("gemini-4-argon", {}),
    "openai-responses": ("gpt-6.1-sol", {"reasoning": {"effort": "low"}, "store": False,
                                         "include": ["reasoning.encrypted_content"]}),
}
TOOLS_SOURCE = '''
import json, sys
from agentkit import Pause, run, sim, tool
from agentkit.http import HTTPModel
@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return city + ": sunny"
@tool
def get_exchange_rate(base: str, quote: str) -> str:
    """Exchange rate between two ISO 4217 currencies."""
    return "1 " + base + " = 155.2 " + quote
TOOLS = [get_weather, get_exchange_rate]
'''
#: Run in a fresh process: resume each saved state given (format, model, extra_body, path) on its own simulator.
RESUME = TOOLS_SOURCE + '''
from agentkit.long_running.resume import resume
with sim.serve() as server:
    for fmt, name, extra, path in json.loads(sys.argv[1]):
        model = HTTPModel(name, fmt, base_url=server.base_url(fmt), api_key="k", extra_body=extra, max_retries=0)
        saved = open(path).read()
        try:
            done = resume(saved, dict.fromkeys(json.loads(saved)["pending"]["waiting"], "approve"), model, tools=TOOLS)
            print(path, "RESUMED", done.stop_reason)
        except Exception as error:
            cause = error.__cause__ or error
            print(path, "REFUSED", type(cause).__name__, " ".join(str(cause).split())[:300])
'''
#: Run in a fresh process: pause one run and save it (for the cache-folder tests, whose key is the process's).
PAUSE = TOOLS_SOURCE + '''
with sim.serve() as server:
    model = HTTPModel("claude-sonnet-4-5", "anthropic", base_url=server.base_url("anthropic"), api_key="k",
                      extra_body={"thinking": {"type": "enabled", "budget_tokens": 1024}, "max_tokens": 2048})
    paused = run(model, "東京の天気と、1ドル何円か教えて", tools=TOOLS,
                 approve=lambda c, ctx: Pause() if c.name == "get_exchange_rate" else True)
    open(sys.argv[1], "w").write(paused.to_json())
    print("PAUSED", paused.stop_reason)
'''


def fresh_process(source: str, argument: str, **env: str) -> str:
    import os
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", source, argument], capture_output=True, text=True, timeout=180,
                          env={**os.environ, **env})
    assert done.returncode == 0, done.stderr[-2000:]
    return (done.stdout.strip() + "\n" + done.stderr.strip()).strip()


def test_a_paused_run_resumes_in_a_fresh_process_in_every_format_and_another_key_refuses_it(server, tmp_path):
    """Paused here (this process's simulator, this installation's key), resumed in a fresh process: the same key
    (the user's cache, or AGENTKIT_SIM_SIGNING_KEY if set) accepts the state; a simulator with another key refuses
    it in the provider's words."""
    from agentkit import Pause, run
    from agentkit.http import HTTPModel

    exec(TOOLS_SOURCE, scope := {})
    jobs = []
    for label, (name, extra) in SAVED_ACROSS_PROCESSES.items():
        fmt = label.split(":")[0]
        model = HTTPModel(name, fmt, base_url=server.base_url(fmt), api_key="k", extra_body=extra, max_retries=0)
        paused = run(model, "東京の天気と、1ドル何円か教えて", tools=scope["TOOLS"],
                     approve=lambda c, ctx: Pause() if c.name == "get_exchange_rate" else True)
        assert paused.stop_reason == "paused" and paused.pending.turn.reasoning is not None, (label, paused.summary())
        path = tmp_path / f"{label.replace(':', '_')}.json"
        path.write_text(paused.to_json())
        jobs.append([fmt, name, extra, str(path)])
    resumed = fresh_process(RESUME, json.dumps(jobs)).splitlines()
    assert len(resumed) == len(jobs) and all(" RESUMED final_answer" in line for line in resumed), resumed
    refused = [line for line in fresh_process(RESUME, json.dumps(jobs), AGENTKIT_SIM_SIGNING_KEY="cd" * 32).splitlines()
               if " REFUSED " in line or " RESUMED " in line]
    assert len(refused) == len(jobs) and all(" REFUSED " in line for line in refused), refused
    for words in ("Invalid `signature`", "Corrupted thought signature", "could not be verified"):
        assert any(words in line for line in refused), (words, refused)


def test_without_a_key_set_the_key_kept_in_the_users_cache_is_shared_by_processes(tmp_path):
    cache, state = tmp_path / "cache", tmp_path / "state.json"
    assert "PAUSED paused" in fresh_process(PAUSE, str(state), AGENTKIT_CACHE=str(cache), AGENTKIT_SIM_SIGNING_KEY="")
    key_file = cache / "sim-signing-key"
    assert key_file.stat().st_mode & 0o777 == 0o600 and len(bytes.fromhex(key_file.read_text())) == 32
    job = [["anthropic", "claude-sonnet-4-5", {"thinking": {"type": "enabled", "budget_tokens": 1024},
                                               "max_tokens": 2048}, str(state)]]
    again = fresh_process(RESUME, json.dumps(job), AGENTKIT_CACHE=str(cache), AGENTKIT_SIM_SIGNING_KEY="")
    assert " RESUMED final_answer" in again, again


def test_an_unwritable_cache_falls_back_to_a_key_of_the_process_with_a_one_line_warning(tmp_path):
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder would be")
    out = fresh_process(PAUSE, str(tmp_path / "state.json"), AGENTKIT_CACHE=str(blocked), AGENTKIT_SIM_SIGNING_KEY="")
    warnings = [line for line in out.splitlines() if "signing key" in line]
    assert "PAUSED paused" in out and len(warnings) == 1 and "AGENTKIT_SIM_SIGNING_KEY" in warnings[0], out


def test_a_signing_key_that_is_not_hex_stops_the_simulator_with_one_clear_line():
    import os
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", "from agentkit import sim\nwith sim.serve(): pass"],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "AGENTKIT_SIM_SIGNING_KEY": "not hex"})
    assert done.returncode != 0 and "AGENTKIT_SIM_SIGNING_KEY is not hex" in done.stderr
