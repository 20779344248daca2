"""Replay reproduces a run offline, byte for byte; fork re-runs from step k with another model; diff names
the first divergence."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_compaction import REASONING, TOOLS

from agentkit import Limits, StopReason, call, run, tool
from agentkit.core.errors import ScriptError
from agentkit.http import HTTPModel
from agentkit.long_running.replay import Playback, diff, fork, history_bytes, load, replay
from agentkit.models import FunctionModel, ScriptedModel

CALLED = []


@tool
def lookup(q: str) -> str:
    """Look something up."""
    CALLED.append(q)
    if q.startswith("boom"):
        raise RuntimeError("the index is down")
    return f"found {q}"


def test_replay_is_byte_identical_and_runs_no_tool():
    model = ScriptedModel([[call("lookup", {"q": "a"}), call("lookup", {"q": "boom"}), call("lookup", {"n": 1})],
                           [call("lookup", {"q": "b"})], [call("lookup", {"q": "c"})], "done"])
    limits = Limits(max_tool_calls=5, exit_behavior="continue")
    original = run(model, "find", tools=[lookup], limits=limits, system="Be brief.",
                   approve=lambda c, ctx: "not b" if c.arguments == {"q": "b"} else True)
    CALLED.clear()
    again = replay(original, [lookup], limits=limits, system="Be brief.")
    assert CALLED == [] and history_bytes(again) == history_bytes(original)
    assert (again.stop_reason, again.output) == (original.stop_reason, original.output)
    assert diff(original, again) is None


def test_replay_from_json_after_a_restart():
    original = run(ScriptedModel([[call("lookup", {"q": "a"})], "done"]), "find", tools=[lookup])
    again = replay(load(original.to_json()), [lookup])
    assert history_bytes(again) == history_bytes(original)


def test_a_replay_that_takes_another_path_says_so():
    original = run(ScriptedModel(["done"]), "find", tools=[lookup])
    playback = Playback(original.turns)
    assert playback.complete([], [], None) == original.turns[0]
    with pytest.raises(ScriptError, match="asked for turn 2, but the run recorded 1: the replay took another path"):
        playback.complete([], [], None)


@pytest.mark.parametrize("fmt", sorted(REASONING))
def test_replay_of_a_simulator_run_is_byte_identical_in_every_format(server, fmt):
    name, extra = REASONING[fmt]
    model = HTTPModel(name, fmt, base_url=server.base_url(fmt), api_key="sim-key", extra_body=extra, max_retries=0)
    original = run(model, "東京の天気と、1ドル何円か教えて", tools=TOOLS)
    again = replay(original, TOOLS)
    assert original.stop_reason is StopReason.FINAL_ANSWER and history_bytes(again) == history_bytes(original)


def test_fork_keeps_the_steps_before_k_and_diff_names_the_first_divergence():
    original = run(ScriptedModel([[call("lookup", {"q": "a"})], [call("lookup", {"q": "b"})], "done: a, b"]), "find",
                   tools=[lookup])
    other = FunctionModel(lambda messages, tools, options: "done early")
    forked = fork(original, step=2, model=other, tools=[lookup])
    assert forked.messages[:3] == original.messages[:3] and forked.output == "done early"
    divergence = diff(original, forked)
    assert (divergence.index, divergence.step) == (3, 2)
    assert str(divergence) == ('first divergence at message 3 (step 2):\n  a: assistant calls lookup({"q": "b"})\n'
                               "  b: assistant: done early")
    assert forked.trace.of("fork")[0].data == {"run_id": original.run_id, "step": 2, "messages": 3}
    with pytest.raises(ValueError, match="steps 1 to 3"):
        fork(original, step=4, model=other)


@given(plan=st.lists(st.lists(st.sampled_from(["ok", "boom", "bad"]), min_size=1, max_size=3), max_size=5),
       cap=st.one_of(st.none(), st.integers(0, 6)), behavior=st.sampled_from(["continue", "end"]))
def test_any_run_replays_byte_identical(plan, cap, behavior):
    arguments = {"ok": lambda i: {"q": f"q{i}"}, "boom": lambda i: {"q": f"boom{i}"}, "bad": lambda i: {"n": i}}
    steps = [[call("lookup", arguments[kind](i)) for i, kind in enumerate(batch)] for batch in plan] + ["done"]
    limits = Limits(max_tool_calls=cap, exit_behavior=behavior)
    original = run(ScriptedModel(steps), "go", tools=[lookup], limits=limits)
    again = replay(original, [lookup], limits=limits)
    assert history_bytes(again) == history_bytes(original) and again.stop_reason == original.stop_reason


def test_a_paused_then_resumed_run_replays_byte_identical():
    from agentkit.core.policies import Pause
    from agentkit.long_running.resume import resume

    steps = [[call("lookup", {"q": "a"}, id="c1"), call("lookup", {"q": "b"}, id="c2")], "done"]
    paused = run(ScriptedModel(steps), "find", tools=[lookup],
                 approve=lambda c, ctx: Pause() if c.id == "c2" else True)
    done = resume(paused.to_json(), {"c2": "deny"}, ScriptedModel(steps[1:]), tools=[lookup])
    again = replay(done, [lookup])
    assert [t.text for t in done.turns] == [None, "done"]
    assert history_bytes(again) == history_bytes(done) and done.stop_reason is StopReason.FINAL_ANSWER


# -- steps counted one way, inputs of every kind, nothing sent ----------------------------------------------

def thread_run():
    """A run that continues a Thread with two earlier exchanges: its own steps start at 1 again."""
    from agentkit import Thread

    thread = Thread()
    for q in ("first", "second"):
        run(ScriptedModel([[call("lookup", {"q": q})], f"{q} done"]), q, tools=[lookup], thread=thread)
    return run(ScriptedModel([[call("lookup", {"q": "a"})], [call("lookup", {"q": "b"})], "done: a, b"]), "third",
               tools=[lookup], thread=thread)


def test_fork_and_diff_count_the_steps_of_a_run_that_continues_a_thread_alike():
    original = thread_run()
    forked = fork(original, step=2, model=FunctionModel(lambda m, t, o: "done early"), tools=[lookup])
    divergence = diff(original, forked)
    assert divergence.step == 2 and divergence.index == original.start_index + 3
    assert forked.trace.of("fork")[0].data["step"] == 2
    before = fork(original, step=1, model=FunctionModel(lambda m, t, o: "at once"), tools=[lookup])
    assert diff(original, before).step == 1


def test_fork_refuses_the_loops_own_limit_message_as_a_step():
    capped = run(ScriptedModel([[call("lookup", {"q": "a"})], [call("lookup", {"q": "b"})]]), "find", tools=[lookup],
                 limits=Limits(max_steps=2))
    assert capped.stop_reason is StopReason.MAX_STEPS and capped.messages[-1].content.startswith("Step limit")
    with pytest.raises(ValueError, match="steps 1 to 2"):
        fork(capped, step=3, model=FunctionModel(lambda m, t, o: "x"))
    loaded = load(capped.to_json())
    with pytest.raises(ValueError, match="steps 1 to 2"):
        fork(loaded, step=3, model=FunctionModel(lambda m, t, o: "x"))


def test_replay_fork_and_diff_take_the_saved_text_or_its_dict_and_refuse_anything_else_clearly():
    import json

    original = run(ScriptedModel([[call("lookup", {"q": "a"})], "done"]), "find", tools=[lookup])
    text = original.to_json()
    for saved in (text, json.loads(text)):
        assert history_bytes(replay(saved, [lookup])) == history_bytes(original)
        assert diff(saved, original) is None and diff(original, saved) is None
        assert fork(saved, step=2, model=ScriptedModel(["other"]), tools=[lookup]).output == "other"
    for bad in (None, 3, ["not", "a", "run"]):
        with pytest.raises(TypeError, match="give a Run"):
            replay(bad, [lookup])
        with pytest.raises(TypeError, match="give a Run"):
            diff(original, bad)
        with pytest.raises(TypeError, match="give a Run"):
            fork(bad, step=1, model=ScriptedModel([]))


def test_replay_without_the_runs_tools_says_so_instead_of_another_history():
    from agentkit.core.errors import ReplayError

    original = run(ScriptedModel([[call("lookup", {"q": "a"}), call("nothing_of_that_name", {})], "done"]), "find",
                   tools=[lookup])
    with pytest.raises(ReplayError, match="needs the run's tools: lookup"):
        replay(original, [])
    assert history_bytes(replay(original, [lookup])) == history_bytes(original)  # the unknown one needs none


def test_a_replay_that_comes_out_otherwise_raises_with_the_replayed_run():
    from agentkit.core.errors import ReplayError

    original = run(ScriptedModel([[call("lookup", {"q": "a"})], [call("lookup", {"q": "b"})], "done"]), "find",
                   tools=[lookup])
    with pytest.raises(ReplayError, match="first divergence") as raised:
        replay(original, [lookup], limits=Limits(max_steps=2))
    assert raised.value.run is not None and raised.value.run.stop_reason is StopReason.MAX_STEPS


def test_replay_of_a_summarized_run_sends_nothing_not_even_the_summaries(server):
    from agentkit import Thread
    from agentkit.long_running.compaction import Summarize

    attempts = []
    summariser = HTTPModel("sim-reasoner", "openai-chat", base_url=server.base_url("openai-chat"), api_key="sim",
                           on_attempt=attempts.append)
    strategy, thread = Summarize(summariser, keep_rounds=1), Thread()
    for q in ("a", "b", "c", "d"):
        last = run(ScriptedModel([[call("lookup", {"q": q})], f"{q} done"]), q, tools=[lookup], thread=thread,
                   compact=strategy)
    assert strategy.calls >= 2 and len(attempts) == strategy.calls
    attempts.clear()
    again = replay(load(last.to_json()), [lookup], compact=Summarize(summariser, keep_rounds=1))
    assert attempts == [] and history_bytes(again) == history_bytes(last)
