"""Gemini's current rules on the simulator, driven over HTTP with the official google-genai SDK (and the kit's own
client), each checked against its fidelity-ledger entry: Gemini 4 signs its calls and refuses a replay without
the signature, as Gemini 3 does; Vertex AI (its `/projects/…/publishers/google/models/…` paths) words the same
refusal its own way; a model Google has shut down is the API's 404 on both surfaces; the conversation's order
rules are logged, two breaks in one request both recorded; and a signature is bound to what Google says it is
bound to (its part, its conversation), not to the answer's text.
"""

from __future__ import annotations

import copy

import httpx
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as gt
from google.oauth2.credentials import Credentials

import agentkit
from agentkit import HTTPModel, StopReason, tool
from agentkit.core.errors import BadRequestError
from agentkit.core.types import Message
from agentkit.providers import gemini as codec
from agentkit.sim.fidelity import Entry, ledger
from agentkit.sim.wire import gemini as gemini_server

ASK = "Weather in Paris and in Tokyo?"
WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
CONFIG = gt.GenerateContentConfig(
    tools=[gt.Tool(function_declarations=[gt.FunctionDeclaration(name="get_weather", parameters_json_schema=WEATHER)])],
    automatic_function_calling=gt.AutomaticFunctionCallingConfig(disable=True))
TOOLS = [{"functionDeclarations": [{"name": "get_weather", "parametersJsonSchema": WEATHER}]}]
GEMINI_4 = ["gemini-4-argon", "gemini-4-carbon"]


def entry(rule: str) -> Entry:
    return ledger()[rule]


def get_weather(city: str) -> str:
    """Current weather for a city.

    Args:
        city: the city's name
    """
    return f"{city}: sunny"


@pytest.fixture
def gemini_api(server):
    return genai.Client(api_key="AIza-sim", http_options=gt.HttpOptions(base_url=server.sdk_base_url("gemini")))


@pytest.fixture
def vertex(server):
    """google-genai as a Vertex AI client (project, location, OAuth credentials), pointed at the simulator."""
    return genai.Client(vertexai=True, project="sim-project", location="global", credentials=Credentials("ya29.sim"),
                        http_options=gt.HttpOptions(base_url=server.url))


def ask() -> list[gt.Content]:
    return [gt.Content(role="user", parts=[gt.Part(text=ASK)])]


def results(calls) -> gt.Content:
    return gt.Content(role="user", parts=[
        gt.Part(function_response=gt.FunctionResponse(id=c.id, name=c.name, response={"output": get_weather(**c.args)}))
        for c in calls])


def unsigned(calls) -> gt.Content:
    """The model turn rebuilt from the calls' names and arguments: what a client that drops the signature sends."""
    return gt.Content(role="model", parts=[gt.Part(function_call=c) for c in calls])


# --- Gemini 4 signs its calls, as Gemini 3 does --------------------------------------------------------------

@pytest.mark.parametrize("model", GEMINI_4)
def test_gemini_4_refuses_a_replayed_call_without_its_thought_signature(gemini_api, model):
    rule = entry("gemini.missing_thought_signature")
    assert model in rule.models
    first = gemini_api.models.generate_content(model=model, contents=ask(), config=CONFIG)
    parts = first.candidates[0].content.parts
    assert [p.thought_signature is not None for p in parts] == [True, False]  # a parallel batch: the first only
    assert all(c.id for c in first.function_calls)  # newer models give their calls ids
    answer = gemini_api.models.generate_content(model=model, config=CONFIG,
                                                contents=[*ask(), first.candidates[0].content,
                                                          results(first.function_calls)])
    assert "Paris: sunny" in answer.text and "Tokyo: sunny" in answer.text
    with pytest.raises(genai_errors.ClientError) as info:
        gemini_api.models.generate_content(model=model, config=CONFIG, contents=[
            *ask(), unsigned(first.function_calls), results(first.function_calls)])
    assert info.value.code == rule.status
    assert rule.matches(info.value.message) == {"name": "get_weather", "position": "2"}


@pytest.mark.parametrize("model", GEMINI_4)
def test_the_kits_client_keeps_gemini_4_signatures_through_a_run(server, model):
    llm = HTTPModel(model, "gemini", base_url=server.base_url("gemini"), api_key="AIza-sim")
    before = server.rule_logs()[-1].number if server.rule_logs() else 0
    result = agentkit.run(llm, ASK, tools=[tool(get_weather)])
    assert result.stop_reason == StopReason.FINAL_ANSWER and result.steps == 2
    assert any(m.reasoning is not None for m in result.messages)
    replay = [f for log in server.rule_logs(after=before) for f in log.findings
              if f.rule == "gemini.missing_thought_signature"]
    assert [f.outcome for f in replay] == ["passed"]


def test_the_codec_sends_the_placeholder_for_a_gemini_4_call_it_has_no_signature_for():
    history = [Message.user(ASK), Message.assistant(None, [agentkit.ToolCall("c1", "get_weather", {"city": "Paris"})]),
               Message.tool(agentkit.ToolResult.success(agentkit.ToolCall("c1", "get_weather", {}), "sunny"))]
    for model, sent in (("gemini-4-argon", codec.THOUGHT_SIGNATURE_PLACEHOLDER), ("gemini-2.5-flash", None)):
        parts = codec.build_request(model, history).body["contents"][1]["parts"]
        assert parts[0].get("thoughtSignature") == sent, model


# --- Vertex AI: the same rule in its own words -----------------------------------------------------------------

def test_vertex_refuses_a_call_without_its_signature_in_vertexs_words(vertex):
    rule = entry("gemini.vertex_missing_thought_signature")
    first = vertex.models.generate_content(model="gemini-4-argon", contents=ask(), config=CONFIG)
    answer = vertex.models.generate_content(model="gemini-4-argon", config=CONFIG, contents=[
        *ask(), first.candidates[0].content, results(first.function_calls)])
    assert "Paris: sunny" in answer.text
    with pytest.raises(genai_errors.ClientError) as info:
        vertex.models.generate_content(model="gemini-4-argon", config=CONFIG, contents=[
            *ask(), unsigned(first.function_calls), results(first.function_calls)])
    assert (info.value.code, info.value.status) == (rule.status, "INVALID_ARGUMENT")
    assert rule.matches(info.value.message) == {"name": "get_weather", "n": "1"}


def test_vertex_is_served_under_its_resource_paths(server):
    """Vertex's REST paths name the model as a resource (v1 and v1beta1, and express mode's publishers/…)."""
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    for path in ("/v1/projects/p/locations/global/publishers/google/models/gemini-4-argon:generateContent",
                 "/v1beta1/projects/p/locations/us-central1/publishers/google/models/gemini-4-argon:generateContent",
                 "/v1beta1/publishers/google/models/gemini-4-argon:generateContent"):
        r = httpx.post(server.url + path, json=body, headers={"authorization": "Bearer ya29.sim"}, timeout=10)
        assert r.status_code == 200 and r.json()["modelVersion"] == "gemini-4-argon", path


# --- retired models ----------------------------------------------------------------------------------------------

def test_a_retired_model_is_the_apis_404_on_both_surfaces(gemini_api, vertex):
    api_rule, vertex_rule = entry("gemini.retired_model"), entry("gemini.vertex_retired_model")
    assert "gemini-3-pro-preview" in api_rule.models and "gemini-3-pro-preview" in vertex_rule.models
    with pytest.raises(genai_errors.ClientError) as info:
        gemini_api.models.generate_content(model="gemini-3-pro-preview", contents="hi")
    assert (info.value.code, info.value.status) == (404, "NOT_FOUND")
    assert api_rule.matches(info.value.message) == {"model": "gemini-3-pro-preview"}
    with pytest.raises(genai_errors.ClientError) as info:
        vertex.models.generate_content(model="gemini-3-pro-preview", contents="hi")
    assert info.value.code == 404
    assert vertex_rule.matches(info.value.message) == {
        "resource": "projects/sim-project/locations/global/publishers/google/models/gemini-3-pro-preview"}
    # Its replacement answers.
    assert gemini_api.models.generate_content(model="gemini-3.1-pro-preview", contents="hi").text


def test_the_kits_client_moves_from_a_retired_model_to_its_fallback(server):
    retired = HTTPModel("gemini-3-pro-preview", "gemini", base_url=server.base_url("gemini"), api_key="AIza-sim")
    with pytest.raises(agentkit.ModelCallError) as info:
        agentkit.run(retired, ASK, tools=[tool(get_weather)])
    assert isinstance(info.value.__cause__, BadRequestError) and info.value.__cause__.status == 404
    moved = HTTPModel("gemini-3-pro-preview", "gemini", base_url=server.base_url("gemini"), api_key="AIza-sim",
                      fallback_models=["gemini-3.1-pro-preview"])
    assert agentkit.run(moved, ASK, tools=[tool(get_weather)]).stop_reason == StopReason.FINAL_ANSWER


# --- the conversation's order, logged ----------------------------------------------------------------------------

def test_a_history_that_starts_with_a_function_call_is_refused(gemini_api):
    rule = entry("gemini.call_turn_order")
    call = gt.FunctionCall(name="get_weather", args={"city": "Paris"})
    with pytest.raises(genai_errors.ClientError) as info:
        gemini_api.models.generate_content(model="gemini-2.5-flash", config=CONFIG, contents=[
            gt.Content(role="model", parts=[gt.Part(function_call=call)]), results([call])])
    assert info.value.code == rule.status and rule.matches(info.value.message) is not None


def post(server, model: str, contents: list) -> httpx.Response:
    return httpx.post(f"{server.base_url('gemini')}/models/{model}:generateContent", json={
        "contents": contents, "tools": TOOLS}, headers={"x-goog-api-key": "k"}, timeout=10)


def findings(server, model: str) -> list[tuple[str, str]]:
    (log,) = [log for log in server.rule_logs() if log.model == model]
    return [(f.rule, f.outcome) for f in log.findings]


TWO_CALLS = [{"functionCall": {"id": f"id{n}aaaaa", "name": "get_weather", "args": {"city": c}}}
             for n, c in enumerate(("Paris", "Tokyo"))]


def test_a_history_that_breaks_two_rules_has_both_recorded_and_the_first_answered(server):
    # One answer for two calls, and no signature on the step's first call: both are breaks.
    contents = [{"role": "user", "parts": [{"text": ASK}]}, {"role": "model", "parts": TWO_CALLS},
                {"role": "user", "parts": [{"functionResponse": {"id": "id0aaaaa", "name": "get_weather",
                                                                 "response": {"output": "sunny"}}}]}]
    r = post(server, "gemini-4-argon-two-breaks", contents)
    assert r.status_code == 400 and entry("gemini.response_count").matches(r.json()["error"]["message"]) is not None
    refused = [rule for rule, outcome in findings(server, "gemini-4-argon-two-breaks") if outcome == "refused"]
    assert refused == ["gemini.response_count", "gemini.missing_thought_signature"]


def test_a_well_ordered_history_passes_each_rule_it_exercises_once(server):
    step = [{"role": "model", "parts": TWO_CALLS},
            {"role": "user", "parts": [{"functionResponse": {"id": c["functionCall"]["id"], "name": "get_weather",
                                                             "response": {"output": "sunny"}}} for c in TWO_CALLS]}]
    contents = [{"role": "user", "parts": [{"text": ASK}]}, *step, *copy.deepcopy(step)]  # two steps, one request
    assert post(server, "gemini-2.5-flash-well-ordered", contents).status_code == 200
    # every decoded request passes the shape rules and the HTTP layer's too
    shapes = {*gemini_server.SHAPE_RULES, "sim.unsupported_media_type", "sim.body_too_large", "gemini.not_json"}
    assert [f for f in findings(server, "gemini-2.5-flash-well-ordered") if f[0] not in shapes] == [
        ("gemini.call_turn_order", "passed"), ("gemini.response_turn_order", "passed"),
        ("gemini.response_count", "passed"), ("gemini.response_id_matches_call", "passed")]
    assert all(rule in ledger() for rule, _ in findings(server, "gemini-2.5-flash-well-ordered"))


# --- what a signature is bound to --------------------------------------------------------------------------------

def signed_turn(server, model: str = "gemini-4-argon") -> tuple[list, dict, dict]:
    """(the question, the model's signed turn, the results) of a first exchange, as the API returned them."""
    question = [{"role": "user", "parts": [{"text": ASK}]}]
    turn = post(server, model, question).json()["candidates"][0]["content"]
    answers = {"role": "user", "parts": [{"functionResponse": {"id": p["functionCall"]["id"], "name": "get_weather",
                                                               "response": {"output": "sunny"}}}
                                         for p in turn["parts"]]}
    return question, turn, answers


def test_editing_a_signed_turns_arguments_is_not_refused_as_google_binds_no_arguments(server):
    question, turn, answers = signed_turn(server)
    edited = copy.deepcopy(turn)
    edited["parts"][0]["functionCall"]["args"] = {"city": "Lyon"}
    assert post(server, "gemini-4-argon", [*question, edited, answers]).status_code == 200


def test_a_signature_moved_onto_another_kind_of_part_or_into_another_conversation_is_corrupted(server):
    rule = entry("gemini.thought_signature_corrupted")
    question, turn, answers = signed_turn(server)
    moved = copy.deepcopy(turn)
    moved["parts"].insert(0, {"text": "Let me check.", "thoughtSignature": moved["parts"][0]["thoughtSignature"]})
    other = [{"role": "user", "parts": [{"text": "Weather in Oslo?"}]}]
    for contents in ([*question, moved, answers], [*other, turn, answers]):
        r = post(server, "gemini-4-argon", contents)
        assert (r.status_code, r.json()["error"]["message"]) == (rule.status, rule.wording)
