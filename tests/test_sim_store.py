"""The simulator's stored responses: a bounded table, and OpenAI Responses' `previous_response_id` over HTTP.

Before the table existed, a continued response answered with an empty tool name (the server did not know
the call the output answered) and a made-up id was answered with 200.
"""

from __future__ import annotations

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentkit import sim
from agentkit.sim.store import ResponseStore

WEATHER = {"type": "function", "name": "get_weather", "description": "Current weather for a city",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
           "strict": False}


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 8), st.lists(st.lists(st.sampled_from("abcdefghij"), min_size=1, max_size=3), max_size=30))
def test_the_table_keeps_at_most_its_bound_and_lets_the_least_recently_used_go(bound, batches):
    store, order = ResponseStore(bound), []
    for batch in batches:
        store.keep({key: key.upper() for key in batch})
        for key in dict.fromkeys(batch):  # one record per id, in the order the dict holds them
            if key in order:
                order.remove(key)
            order.append(key)
        order = order[-bound:]
        assert len(store) <= bound
    assert [k for k in "abcdefghij" if store.recall(k) is not None] == sorted(order)
    assert all(store.recall(k) == k.upper() for k in order)


def test_the_bound_must_be_positive():
    with pytest.raises(ValueError):
        ResponseStore(0)


@pytest.fixture(scope="module")
def server():
    with sim.serve(max_stored=8) as s:
        yield s


def responses(server, **body) -> httpx.Response:
    return httpx.post(server.base_url("openai-responses") + "/responses", json={"model": "gpt-6.1-sol", **body},
                      headers={"authorization": "Bearer sk-sim"}, timeout=10)


def first_turn(server, **extra) -> dict:
    r = responses(server, input="Weather in Tokyo?", tools=[WEATHER], **extra)
    assert r.status_code == 200, r.text
    return r.json()


def test_a_continued_response_knows_the_stored_call_and_answers_with_its_result(server):
    first = first_turn(server)
    (call,) = [i for i in first["output"] if i["type"] == "function_call"]
    r = responses(server, previous_response_id=first["id"], tools=[WEATHER],
                  input=[{"type": "function_call_output", "call_id": call["call_id"], "output": "Tokyo: sunny"}])
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["previous_response_id"] == first["id"]
    assert [i["type"] for i in body["output"]] == ["message"]
    assert "Tokyo: sunny" in body["output"][0]["content"][0]["text"]
    assert "get_weather" in body["output"][0]["content"][0]["text"]  # the tool's name, not an empty one


def test_an_unknown_previous_response_is_the_documented_400(server):
    r = responses(server, previous_response_id="resp_made_up", input="hi")
    assert r.status_code == 400
    assert r.json()["error"] == {"message": "Previous response with id 'resp_made_up' not found.",
                                 "type": "invalid_request_error", "param": "previous_response_id",
                                 "code": "previous_response_not_found"}


def test_a_response_made_with_store_false_cannot_be_continued(server):
    first = first_turn(server, store=False, instructions="Answer in English.")
    assert first["store"] is False
    r = responses(server, previous_response_id=first["id"], input="hi")
    assert r.status_code == 400 and r.json()["error"]["code"] == "previous_response_not_found"


def test_the_oldest_stored_responses_go_first_once_the_table_is_full():
    with sim.serve(max_stored=2) as small:
        ids = [responses(small, input=f"Say hello to {city}.").json()["id"] for city in ("Tokyo", "Osaka", "Paris")]
        assert responses(small, previous_response_id=ids[-1], input="thanks").status_code == 200
        assert responses(small, previous_response_id=ids[0], input="thanks").status_code == 400


def test_a_streamed_response_is_stored_too(server):
    r = httpx.post(server.base_url("openai-responses") + "/responses", timeout=10,
                   headers={"authorization": "Bearer sk-sim"},
                   json={"model": "gpt-6.1-sol", "input": "Say hello.", "stream": True})
    done = [line for line in r.text.splitlines() if line.startswith("data:") and "response.completed" in line]
    rid = httpx.Response(200, content=done[0][5:]).json()["response"]["id"]
    assert responses(server, previous_response_id=rid, input="thanks").status_code == 200


def test_continuing_a_response_whose_call_is_unanswered_is_refused_as_the_api_does(server):
    first = first_turn(server)
    r = responses(server, previous_response_id=first["id"], input="thanks")
    assert r.status_code == 400 and r.json()["error"]["message"].startswith("No tool output found for function call")
