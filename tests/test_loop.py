"""The loop's behaviour, one promise per test, against scripted models (no network)."""

from __future__ import annotations

import asyncio
import contextvars
import json
import threading
import time

import pytest

import agentkit
from agentkit import (
    Deny,
    Edit,
    LimitExceeded,
    Limits,
    ModelCallError,
    Retry,
    ScriptedModel,
    StopReason,
    Thread,
    ToolContext,
    ToolExecutionError,
    Update,
    call,
    run,
    tool,
)
from agentkit.core.execute import Outcome
from agentkit.core.types import ModelTurn, ToolCall
from agentkit.models import FunctionModel, always_calls, malformed_then_fixed, parallel_calls, repeats


@tool
def get_weather(city: str) -> str:
    """Current weather for a city.

    Args:
        city: City name, e.g. Tokyo.
    """
    return f"{city}: sunny, 22°C"


@tool
def get_exchange_rate(base: str, quote: str) -> str:
    """Exchange rate between two ISO 4217 currencies."""
    return f"1 {base} = 155.2 {quote}"


@tool
def search(q: str, n: int = 0) -> str:
    """Search something."""
    return f"results for {q}"


def tool_messages(run_):
    return [m for m in run_.messages if m.role == "tool"]


def test_final_answer_without_tools_stops_at_once():
    model = ScriptedModel(["Hello!"])
    r = run(model, "hi", tools=[get_weather])
    assert r.stop_reason is StopReason.FINAL_ANSWER and r.output == "Hello!"
    assert r.steps == 1 and r.tool_call_count == 0
    model.assert_complete()


def test_tool_result_goes_back_with_the_same_id_and_the_envelope():
    model = ScriptedModel([[call("get_weather", {"city": "Tokyo"}, id="call_1")], "Sunny in Tokyo."])
    r = run(model, "weather?", tools=[get_weather])
    (answer,) = tool_messages(r)
    assert answer.tool_call_id == "call_1" and answer.name == "get_weather" and not answer.is_error
    assert json.loads(answer.content) == {"toolCallId": "call_1", "name": "get_weather", "ok": True,
                                          "result": "Tokyo: sunny, 22°C"}
    assert [m.role for m in r.messages] == ["user", "assistant", "tool", "assistant"]
    assert r.output == "Sunny in Tokyo."


def test_tool_definitions_ride_on_every_request():
    model = ScriptedModel([[call("get_weather", {"city": "A"})], [call("get_weather", {"city": "B"})], "done"])
    run(model, "x", tools=[get_weather, get_exchange_rate])
    assert [tools for _, tools, _ in model.requests] == [2, 2, 2]


def test_parallel_results_come_back_in_emitted_order_even_when_finishing_out_of_order():
    @tool
    def wait(seconds: float) -> float:
        """Sleep."""
        time.sleep(seconds)
        return seconds

    model = ScriptedModel([[call("wait", {"seconds": s}) for s in (0.15, 0.0, 0.1)], "ok"])
    r = run(model, "x", tools=[wait])
    assert [json.loads(m.content)["result"] for m in tool_messages(r)] == [0.15, 0.0, 0.1]


def all_overlap(trace) -> bool:
    """Every tool attempt started before any ended: the batch ran at the same time, not in turns."""
    return max(e.seq for e in trace.of("tool_start")) < min(e.seq for e in trace.of("tool_end"))


@pytest.mark.parametrize("executor", ["threads", "asyncio"])
def test_parallel_sync_tools_overlap(executor):
    together = threading.Barrier(8, timeout=10)  # passes only when all 8 calls are inside at once

    @tool
    def nap(i: int) -> int:
        """Wait for the other seven."""
        together.wait()
        return i

    r = run(parallel_calls("nap", 8), "go", tools=[nap], executor=executor)
    assert r.stop_reason is StopReason.FINAL_ANSWER and r.tool_runs == 8
    assert all(json.loads(m.content)["ok"] for m in tool_messages(r))
    assert all_overlap(r.trace)
    assert len({s.worker for s in r.trace.spans()}) == 8


def test_sequential_executor_runs_one_after_another():
    @tool
    def nap(i: int) -> int:
        """Sleep 0.05 s."""
        time.sleep(0.05)
        return i

    r = run(parallel_calls("nap", 4), "go", tools=[nap], executor="sequential")
    spans = r.trace.spans()
    assert all(a.end <= b.start for a, b in zip(spans, spans[1:]))


def test_contextvars_reach_tools_in_worker_threads():
    var = contextvars.ContextVar("request_id", default="unset")

    @tool
    def whoami(i: int) -> str:
        """Return the context variable."""
        return var.get()

    var.set("req-42")
    r = run(parallel_calls("whoami", 3), "x", tools=[whoami])
    assert {json.loads(m.content)["result"] for m in tool_messages(r)} == {"req-42"}


def test_step_cap_stops_without_running_the_requested_tools():
    counter = {"runs": 0}

    @tool
    def ping(n: int) -> int:
        """Ping."""
        counter["runs"] += 1
        return n

    r = run(always_calls("ping", lambda step: {"n": step}), "go", tools=[ping], limits=Limits(max_steps=13))
    assert r.stop_reason is StopReason.MAX_STEPS
    assert r.steps == 13 and counter["runs"] == 12  # claim C8 (README): 13 model calls, 12 tool runs
    last_call = [m for m in r.messages if m.tool_calls][-1].tool_calls[0]
    last_result = [m for m in tool_messages(r) if m.tool_call_id == last_call.id]
    assert len(last_result) == 1 and "not run" in last_result[0].content
    assert r.output == "Step limit reached: step limit exceeded (13/13 model calls)."


def test_max_tool_calls_end_stops_with_the_seed_message():
    r = run(always_calls("search", lambda step: {"q": f"q{step}"}), "go", tools=[search],
            limits=Limits(max_tool_calls=3, exit_behavior="end"))
    assert r.stop_reason is StopReason.TOOL_LIMIT
    assert r.steps == 4 and r.tool_runs == 3  # claim C9 (README) "end": 4 model calls
    assert r.output == "Tool call limit reached: run limit exceeded (4/3 calls)."
    assert r.messages[-1].role == "assistant" and r.messages[-1].content == r.output


def test_max_tool_calls_continue_lets_a_stubborn_model_go_on_until_the_step_cap():
    r = run(always_calls("search", lambda step: {"q": f"q{step}"}), "go", tools=[search],
            limits=Limits(max_steps=30, max_tool_calls=3, exit_behavior="continue"))
    assert r.stop_reason is StopReason.MAX_STEPS and r.steps == 30 and r.tool_runs == 3
    blocked = [json.loads(m.content) for m in tool_messages(r) if agentkit.core.policies.CONTINUE_TEXT in m.content]
    assert len(blocked) == 26  # calls 4..29 answered "limit exceeded"; call 30 is past the step cap
    # each in the stable envelope every result uses, with LangChain's sentence as the message
    assert all(b["ok"] is False and b["error"] == {"kind": "limit", "message": agentkit.core.policies.CONTINUE_TEXT,
                                                    "path": None, "keyword": None} for b in blocked)


def test_max_tool_calls_error_raises_with_the_partial_run():
    with pytest.raises(LimitExceeded) as info:
        run(always_calls("search", lambda step: {"q": f"q{step}"}), "go", tools=[search],
            limits=Limits(max_tool_calls=2, exit_behavior="error"))
    assert info.value.limit == "max_tool_calls" and (info.value.count, info.value.maximum) == (3, 2)
    partial = info.value.run
    assert partial.stop_reason is StopReason.ERROR and partial.tool_runs == 2
    _assert_every_call_answered_once(partial)


def test_a_batch_cut_short_by_a_limit_still_answers_every_call():
    model = ScriptedModel([[call("search", {"q": str(i)}) for i in range(5)]])
    r = run(model, "go", tools=[search], limits=Limits(max_tool_calls=2))
    assert r.stop_reason is StopReason.TOOL_LIMIT and r.tool_runs == 2
    _assert_every_call_answered_once(r)
    assert sum("not run" in m.content for m in tool_messages(r)) == 3


def test_repeated_identical_call_stops_the_loop():
    r = run(repeats("search", {"q": "same"}), "go", tools=[search], limits=Limits(max_repeats=2))
    assert r.stop_reason is StopReason.REPEATED_CALL and r.tool_runs == 2 and r.steps == 3


def test_argument_order_does_not_hide_a_repeat():
    model = ScriptedModel([[call("search", raw='{"q":"a","n":1}')], [call("search", raw='{"n":1,"q":"a"}')]])
    r = run(model, "go", tools=[search], limits=Limits(max_repeats=1))
    assert r.stop_reason is StopReason.REPEATED_CALL and r.tool_runs == 1


def test_max_calls_per_tool_and_the_max_calls_flag():
    @tool(max_calls=1)
    def once(x: int) -> int:
        """Only once per run."""
        return x

    model = ScriptedModel([[call("once", {"x": 1}), call("once", {"x": 2})]])
    r = run(model, "go", tools=[once])
    assert r.stop_reason is StopReason.TOOL_LIMIT and r.limit.limit == "max_calls_per_tool:once"

    model = ScriptedModel([[call("search", {"q": "a"})], [call("search", {"q": "b"})]])
    r = run(model, "go", tools=[search], limits=Limits(max_calls_per_tool={"search": 1}))
    assert r.limit.limit == "max_calls_per_tool:search" and r.tool_runs == 1


def test_max_thread_tool_calls_counts_across_runs():
    thread = Thread()
    limits = Limits(max_thread_tool_calls=3)
    r1 = run(ScriptedModel([[call("search", {"q": "a"}), call("search", {"q": "b"})], "ok"]), "one",
             tools=[search], thread=thread, limits=limits)
    assert r1.stop_reason is StopReason.FINAL_ANSWER and thread.tool_call_count == 2
    r2 = run(ScriptedModel([[call("search", {"q": "c"}), call("search", {"q": "d"})]]), "two",
             tools=[search], thread=thread, limits=limits)
    assert r2.stop_reason is StopReason.TOOL_LIMIT and r2.limit.limit == "max_thread_tool_calls"
    assert r2.output == "Tool call limit reached: thread limit exceeded (4/3 calls)."
    assert thread.messages == r2.messages and r2.messages[0].content == "one"
    assert r2.new_messages[0].content == "two"


def test_return_direct_ends_only_when_every_call_of_the_batch_is_direct():
    @tool(return_direct=True)
    def lookup(key: str) -> str:
        """Direct answer."""
        return f"value of {key}"

    r = run(ScriptedModel([[call("lookup", {"key": "a"})]]), "x", tools=[lookup])
    assert r.stop_reason is StopReason.RETURN_DIRECT and r.output == "value of a" and r.steps == 1

    model = ScriptedModel([[call("lookup", {"key": "a"}), call("search", {"q": "b"})], "model answer"])
    r = run(model, "x", tools=[lookup, search])
    assert r.stop_reason is StopReason.FINAL_ANSWER and r.steps == 2


# -- errors ------------------------------------------------------------------------------------------

@tool
def broken(q: str) -> str:
    """Always fails, mentioning an internal host."""
    raise RuntimeError("upstream 503 from db-7.internal.example.com: SELECT * FROM users")


def _script_broken():
    return ScriptedModel([[call("broken", {"q": "x"})], "sorry"])


def test_default_policy_reports_a_sanitised_error_to_the_model():
    r = run(_script_broken(), "x", tools=[broken])
    (msg,) = tool_messages(r)
    body = json.loads(msg.content)
    assert msg.is_error and body["ok"] is False and body["error"]["kind"] == "tool_error"
    assert "RuntimeError" in body["error"]["message"]
    assert "internal.example.com" not in msg.content and "SELECT" not in msg.content
    assert r.stop_reason is StopReason.FINAL_ANSWER


def test_raise_policy_propagates_like_langgraph_toolnode():
    with pytest.raises(ToolExecutionError) as info:
        run(_script_broken(), "x", tools=[broken], on_tool_error="raise")
    assert isinstance(info.value.__cause__, RuntimeError)
    assert info.value.run.stop_reason is StopReason.ERROR


def test_fixed_text_policy():
    r = run(_script_broken(), "x", tools=[broken], on_tool_error="The tool failed; try later.")
    assert tool_messages(r)[0].content == "The tool failed; try later."


def test_exception_class_policy_reports_only_those_classes():
    r = run(_script_broken(), "x", tools=[broken], on_tool_error=RuntimeError)
    assert tool_messages(r)[0].is_error
    with pytest.raises(ToolExecutionError):
        run(_script_broken(), "x", tools=[broken], on_tool_error=(TimeoutError, KeyError))


def test_class_policy_still_reports_argument_errors_and_unknown_tools():
    model = ScriptedModel([[call("get_weather", raw="{bad"), call("no_such_tool", {})], "done"])
    r = run(model, "x", tools=[get_weather], on_tool_error=TimeoutError)
    kinds = [json.loads(m.content)["error"]["kind"] for m in tool_messages(r)]
    assert kinds == ["bad_json", "unknown_tool"]


def test_callable_policy_chooses_text_or_raise():
    def on_error(exc, call_):
        return f"{call_.name} timed out" if isinstance(exc, TimeoutError) else None

    with pytest.raises(ToolExecutionError):
        run(_script_broken(), "x", tools=[broken], on_tool_error=on_error)

    @tool
    def slow(q: str) -> str:
        """Times out."""
        raise TimeoutError("timeout")

    r = run(ScriptedModel([[call("slow", {"q": "x"})], "ok"]), "x", tools=[slow], on_tool_error=on_error)
    assert tool_messages(r)[0].content == "slow timed out"


def test_retry_runs_an_idempotent_tool_three_times_then_reports():
    attempts = []

    @tool(idempotent=True)
    def flaky(q: str) -> str:
        """Always times out."""
        attempts.append(1)
        raise TimeoutError("timeout")

    r = run(ScriptedModel([[call("flaky", {"q": "x"})], "ok"]), "x", tools=[flaky],
            on_tool_error=Retry(max_retries=2, backoff=0.0))
    assert len(attempts) == 3 and r.tool_runs == 3 and r.trace.count("retry") == 2
    assert "after 3 attempts" in tool_messages(r)[0].content


def test_retry_skips_tools_not_flagged_idempotent():
    attempts = []

    @tool
    def pay(amount: int) -> str:
        """Not idempotent."""
        attempts.append(1)
        raise TimeoutError("gateway timeout")

    run(ScriptedModel([[call("pay", {"amount": 5})], "ok"]), "x", tools=[pay],
        on_tool_error=Retry(max_retries=2, backoff=0.0))
    assert len(attempts) == 1


def test_retry_on_failure_raise_and_callable():
    @tool(idempotent=True)
    def flaky(q: str) -> str:
        """Always times out."""
        raise TimeoutError("timeout")

    with pytest.raises(ToolExecutionError):
        run(ScriptedModel([[call("flaky", {"q": "x"})], "ok"]), "x", tools=[flaky],
            on_tool_error=Retry(max_retries=1, backoff=0.0, on_failure="raise"))
    r = run(ScriptedModel([[call("flaky", {"q": "x"})], "ok"]), "x", tools=[flaky],
            on_tool_error=Retry(max_retries=1, backoff=0.0, on_failure=lambda e, c: "gave up"))
    assert tool_messages(r)[0].content == "gave up" and r.tool_runs == 2


def test_bad_policy_value_is_a_clear_error():
    with pytest.raises(TypeError, match="on_tool_error"):
        run(ScriptedModel(["x"]), "x", tools=[search], on_tool_error=42)


def test_bad_json_arguments_go_back_with_the_call_id_and_the_model_fixes_its_call():
    r = run(malformed_then_fixed("get_weather", {"city": "Tokyo"}), "x", tools=[get_weather])
    first, second = tool_messages(r)
    assert json.loads(first.content)["error"]["kind"] == "bad_json" and first.is_error
    assert json.loads(second.content)["ok"] is True
    assert r.stop_reason is StopReason.FINAL_ANSWER and r.invalid_calls == 1


def test_unknown_tool_is_reported_with_the_available_names():
    r = run(ScriptedModel([[call("get_wether", {"city": "x"})], "ok"]), "x", tools=[get_weather])
    error = json.loads(tool_messages(r)[0].content)["error"]
    assert error["kind"] == "unknown_tool" and "get_weather" in error["message"]


def test_raise_policy_raises_for_argument_errors_too():
    with pytest.raises(ToolExecutionError, match="parse"):
        run(ScriptedModel([[call("get_weather", raw="{")]]), "x", tools=[get_weather], on_tool_error="raise")


def test_schema_fail_stops_after_too_many_invalid_calls():
    model = FunctionModel(lambda m, t, o: [call("get_weather", {"town": "x"})])
    r = run(model, "x", tools=[get_weather], limits=Limits(max_invalid_calls=2))
    assert r.stop_reason is StopReason.SCHEMA_FAIL and r.steps == 3 and r.tool_runs == 0


def test_timeout_becomes_an_error_result():
    release = threading.Event()

    @tool(timeout=0.05)
    def hang(q: str) -> str:
        """Hangs until the test ends."""
        release.wait(30)
        return "late"

    try:
        r = run(ScriptedModel([[call("hang", {"q": "x"})], "ok"]), "x", tools=[hang])
        assert not release.is_set()  # the tool is still hanging: the loop did not wait for it
    finally:
        release.set()
    assert json.loads(tool_messages(r)[0].content)["error"]["kind"] == "timeout"


@pytest.mark.parametrize("driver", ["run", "arun"])
def test_a_hanging_tool_is_bounded_by_the_runs_tool_timeout(driver):
    release = threading.Event()

    @tool
    def stuck(q: str) -> str:
        """Never answers in time."""
        release.wait(30)
        return "late"

    model = ScriptedModel([[call("stuck", {"q": "x"})], "ok"])
    try:
        if driver == "run":
            r = run(model, "x", tools=[stuck], tool_timeout=0.05)
        else:
            r = asyncio.run(agentkit.arun(model, "x", tools=[stuck], tool_timeout=0.05))
        assert not release.is_set()  # still stuck: the run did not wait for it
    finally:
        release.set()
    error = json.loads(tool_messages(r)[0].content)["error"]
    assert error["kind"] == "timeout" and "0.05" in error["message"]
    assert r.stop_reason is StopReason.FINAL_ANSWER


def test_unserialisable_return_is_a_typed_error_result():
    @tool
    def weird(q: str) -> object:
        """Returns a lock."""
        return threading.Lock()

    r = run(ScriptedModel([[call("weird", {"q": "x"})], "ok"]), "x", tools=[weird])
    assert json.loads(tool_messages(r)[0].content)["error"]["kind"] == "bad_return"


def test_model_failure_raises_model_call_error_with_the_run():
    def boom(messages, tools, options):
        raise ConnectionError("down")

    with pytest.raises(ModelCallError) as info:
        run(FunctionModel(boom), "x", tools=[search])
    assert info.value.run.stop_reason is StopReason.ERROR and info.value.run.steps == 1


# -- state, approval, cancel, tool_choice -------------------------------------------------------------

def test_tool_context_is_hidden_and_state_updates_apply():
    @tool
    def remember_city(city: str, ctx: ToolContext) -> Update:
        """Remember the user's city."""
        return Update(state={"city": city}, message=f"remembered {city} ({ctx.call_id})")

    @tool
    def current_city(ctx: ToolContext) -> str:
        """The remembered city."""
        return f"city={ctx.state.get('city')}"

    assert "ctx" not in json.dumps(remember_city.parameters)
    model = ScriptedModel([[call("remember_city", {"city": "大阪"}, id="c1")], [call("current_city", {})], "ok"])
    r = run(model, "x", tools=[remember_city, current_city])
    assert r.state == {"city": "大阪"}
    assert json.loads(tool_messages(r)[0].content)["result"] == "remembered 大阪 (c1)"  # same envelope
    assert json.loads(tool_messages(r)[1].content)["result"] == "city=大阪"


def test_state_update_without_its_message_is_an_error_naming_the_tool():
    @tool
    def forgetful(city: str) -> Update:
        """Forgets the message."""
        return Update(state={"city": city}, message=None)

    r = run(ScriptedModel([[call("forgetful", {"city": "x"})], "ok"]), "x", tools=[forgetful])
    error = json.loads(tool_messages(r)[0].content)["error"]
    assert error["kind"] == "bad_return" and "forgetful" in error["message"]
    with pytest.raises(ToolExecutionError) as info:
        run(ScriptedModel([[call("forgetful", {"city": "x"})]]), "x", tools=[forgetful], on_tool_error="raise")
    assert isinstance(info.value.__cause__, agentkit.ToolReturnError)


def test_a_tool_reads_the_run_state_and_counters_but_cannot_write_them():
    @tool
    def meddle(ctx: ToolContext) -> str:
        """Tries to change the run's state behind the loop's back."""
        assert ctx.state == {"city": "Kyoto"} and ctx.counters == {"meddle": 1}
        ctx.state["city"] = "Osaka"  # type: ignore[index]
        return "changed"

    r = run(ScriptedModel([[call("meddle", {})], "ok"]), "x", tools=[meddle], thread=Thread(state={"city": "Kyoto"}))
    assert json.loads(tool_messages(r)[0].content)["error"]["message"].startswith("TypeError")
    assert r.state == {"city": "Kyoto"}  # only an Update changes state


def test_a_state_update_whose_message_cannot_be_sent_is_a_failed_call_that_changes_no_state():
    @tool
    def remember(city: str) -> Update:
        """Remembers the city, but answers with something JSON cannot carry."""
        return Update(state={"city": city}, message=object())

    thread = Thread(state={"city": "Kyoto"})
    r = run(ScriptedModel([[call("remember", {"city": "Osaka"})], "ok"]), "x", tools=[remember], thread=thread)
    assert json.loads(tool_messages(r)[0].content)["error"]["kind"] == "bad_return"
    assert r.state == thread.state == {"city": "Kyoto"}  # like the MCP server: no result, no state change


def test_approval_can_deny_or_edit():
    seen = []

    def approve(call_, ctx):
        seen.append(call_.name)
        if call_.name == "search":
            return Deny("not allowed")
        return Edit({"city": "Osaka"})

    model = ScriptedModel([[call("search", {"q": "x"}), call("get_weather", {"city": "Tokyo"})], "ok"])
    r = run(model, "x", tools=[search, get_weather], approve=approve)
    denied, edited = tool_messages(r)
    assert json.loads(denied.content)["error"] == {"kind": "denied", "message": "not allowed", "path": None,
                                                   "keyword": None}
    assert json.loads(edited.content)["result"] == "Osaka: sunny, 22°C"
    assert seen == ["search", "get_weather"]


def test_cancel_before_the_first_call_and_during_a_batch():
    stop = threading.Event()
    stop.set()
    r = run(ScriptedModel([]), "x", tools=[search], cancel=stop)
    assert r.stop_reason is StopReason.USER_CANCEL and r.steps == 0

    stop = threading.Event()

    @tool
    def pressing(q: str) -> str:
        """Sets cancel while running."""
        stop.set()
        return q

    r = run(ScriptedModel([[call("pressing", {"q": "a"}), call("search", {"q": "b"})]]), "x",
            tools=[pressing, search], cancel=stop)
    assert r.stop_reason is StopReason.USER_CANCEL and len(tool_messages(r)) == 2


def test_tool_choice_required_first_then_auto():
    model = ScriptedModel([[call("search", {"q": "a"})], "done"])
    run(model, "x", tools=[search], tool_choice="required_first")
    assert [o.tool_choice for _, _, o in model.requests] == ["required", "auto"]


def test_forcing_a_tool_every_turn_prevents_a_final_answer():
    def obedient(messages, tools, options):  # a model that must call a tool when told "required"
        if options.tool_choice == "required":
            return [call("search", {"q": str(len(messages))})]
        return "final answer"

    r = run(FunctionModel(obedient), "x", tools=[search], tool_choice="required", limits=Limits(max_steps=5))
    assert r.stop_reason is StopReason.MAX_STEPS
    r = run(FunctionModel(obedient), "x", tools=[search], tool_choice="required_first")
    assert r.stop_reason is StopReason.FINAL_ANSWER and r.steps == 2


def test_tool_choice_naming_an_unknown_tool_is_refused_up_front():
    with pytest.raises(ValueError, match="not among the tools"):
        run(ScriptedModel(["x"]), "x", tools=[search], tool_choice={"name": "nope"})


def test_duplicate_tool_names_are_refused():
    with pytest.raises(ValueError, match="share a name"):
        run(ScriptedModel(["x"]), "x", tools=[search, search])


def test_bad_prompt_type_is_a_clear_error():
    with pytest.raises(TypeError, match="prompt"):
        run(ScriptedModel(["x"]), 42, tools=[search])


def test_async_driver_matches_the_sync_driver():
    def script():
        return ScriptedModel([[call("get_weather", {"city": "Tokyo"}), call("get_exchange_rate",
                                                                             {"base": "USD", "quote": "JPY"})],
                              "done"])

    sync = run(script(), "x", tools=[get_weather, get_exchange_rate])
    asyn = asyncio.run(agentkit.arun(script(), "x", tools=[get_weather, get_exchange_rate]))
    assert sync.messages == asyn.messages and sync.summary() == asyn.summary()


def test_async_tools_run_concurrently_under_arun():
    inside = {"n": 0}

    @tool
    async def anap(i: int) -> int:
        """Returns once all ten calls are waiting together."""
        inside["n"] += 1
        for _ in range(10_000):  # at most ~10 s, and only if the calls do not overlap
            if inside["n"] == 10:
                return i
            await asyncio.sleep(0.001)
        raise AssertionError("the calls never ran together")

    r = asyncio.run(agentkit.arun(parallel_calls("anap", 10), "x", tools=[anap]))
    assert r.tool_runs == 10 and all(json.loads(m.content)["ok"] for m in tool_messages(r))
    assert all_overlap(r.trace)


def test_async_tool_under_the_sync_driver():
    @tool
    async def anap(i: int) -> int:
        """Async sleep."""
        await asyncio.sleep(0.01)
        return i * 2

    r = run(ScriptedModel([[call("anap", {"i": 4})], "ok"]), "x", tools=[anap])
    assert json.loads(tool_messages(r)[0].content)["result"] == 8


def test_trace_counters_agree_with_the_run_and_json_export():
    r = run(ScriptedModel([[call("search", {"q": "a"}), call("nope", {})], "done"]), "x", tools=[search])
    t = r.trace
    assert t.count("model_request") == r.steps == 2
    assert t.count("tool_start") == r.tool_runs == 1
    assert t.count("result") == len(r.results) == 2
    assert [e.seq for e in t.events] == list(range(len(t.events)))
    assert all(a.t <= b.t for a, b in zip(t.events, t.events[1:]))
    assert json.loads(t.to_json())[-1]["kind"] == "stop"
    assert "model_request" in t.table()


def test_a_tool_records_its_raw_payload_in_the_trace_not_in_the_envelope():
    @tool
    def invoices(q: str, ctx: ToolContext) -> dict:
        """Search invoices."""
        raw = {"data": [{"id": "INV-1", "total": 12.5, "internal": "x" * 500}], "paging": {"next": None}}
        ctx.record("downstream", status=200, body=raw)
        return {"count": 1, "ids": [row["id"] for row in raw["data"]]}

    r = run(ScriptedModel([[call("invoices", {"q": "paid"}, id="c1")], "ok"]), "x", tools=[invoices])
    (logged,) = r.trace.of("downstream")
    assert logged.data["call_id"] == "c1" and logged.data["body"]["data"][0]["internal"] == "x" * 500
    assert "internal" not in tool_messages(r)[0].content


def test_observation_hook_sees_every_event():
    seen = []
    r = run(ScriptedModel([[call("search", {"q": "a"})], "done"]), "x", tools=[search],
            on_event=lambda e: seen.append(e.kind))
    assert seen == [e.kind for e in r.trace.events]


def test_scripted_model_fails_loudly_on_missing_and_unused_steps():
    model = ScriptedModel([[call("search", {"q": "a"})]])
    with pytest.raises(ModelCallError) as info:
        run(model, "x", tools=[search])
    assert isinstance(info.value.__cause__, agentkit.ScriptError)
    model = ScriptedModel(["a", "b"])
    run(model, "x")
    with pytest.raises(agentkit.ScriptError, match="1 of 2 steps were never used"):
        model.assert_complete()


def _assert_every_call_answered_once(r):
    """Each assistant turn's calls are answered right after it, once each, in the emitted order."""
    msgs = r.messages
    for i, m in enumerate(msgs):
        if m.role == "assistant" and m.tool_calls:
            answers = msgs[i + 1:i + 1 + len(m.tool_calls)]
            assert [a.role for a in answers] == ["tool"] * len(m.tool_calls)
            assert [a.tool_call_id for a in answers] == [c.id for c in m.tool_calls]


# -- every call keeps exactly one result, whatever ended the run (issue 7, item 1) ------------------------

@tool(idempotent=True)
def storm(city: str) -> str:
    """Always fails."""
    raise RuntimeError(f"weather service down for {city}")


def _boom_approval(call_, ctx):
    raise RuntimeError("the approval service is down")


def _listener_that_breaks(event):
    if event.kind == "tool_end":
        raise RuntimeError("the dashboard is down")


def _batch(*calls):
    return ScriptedModel([list(calls)])


TOKYO, OSAKA, KYOTO = (call("storm", {"city": c}) for c in ("Tokyo", "Osaka", "Kyoto"))
GOOD = call("get_weather", {"city": "Nara"})

# (what ends the run, the model's one turn, run keywords, the exception that comes out)
ENDINGS = {
    "raise policy": ([GOOD, TOKYO, OSAKA], {"on_tool_error": "raise"}, ToolExecutionError),
    "exception class policy": ([TOKYO, GOOD], {"on_tool_error": KeyError}, ToolExecutionError),
    "function policy returning None": ([TOKYO, OSAKA], {"on_tool_error": lambda e, c: None}, ToolExecutionError),
    "Retry then raise": ([GOOD, TOKYO], {"on_tool_error": Retry(max_retries=1, backoff=0.0, on_failure="raise")},
                         ToolExecutionError),
    "argument error under raise": ([GOOD, call("get_weather", raw="{bad"), KYOTO], {"on_tool_error": "raise"},
                                   ToolExecutionError),
    "unknown tool under raise": ([call("nope", {}), GOOD], {"on_tool_error": "raise"}, ToolExecutionError),
    "limit with exit_behavior error": ([GOOD, TOKYO, OSAKA],
                                       {"limits": Limits(max_tool_calls=1, exit_behavior="error")}, LimitExceeded),
    "step cap with exit_behavior error": ([GOOD, TOKYO], {"limits": Limits(max_steps=1, exit_behavior="error")},
                                          LimitExceeded),
    "approval hook that raises": ([GOOD, TOKYO], {"approve": _boom_approval}, RuntimeError),
    "approval hook answering nonsense": ([GOOD, TOKYO], {"approve": lambda c, ctx: 42}, TypeError),
    "listener that raises mid-batch": ([GOOD, TOKYO], {"on_event": _listener_that_breaks}, RuntimeError),
}


def assert_every_call_answered_once(messages):
    """Each assistant turn's calls are answered right after it, once each, in the emitted order."""
    for i, m in enumerate(messages):
        if m.role == "assistant" and m.tool_calls:
            answers = messages[i + 1:i + 1 + len(m.tool_calls)]
            assert [a.role for a in answers] == ["tool"] * len(m.tool_calls), messages
            assert [a.tool_call_id for a in answers] == [c.id for c in m.tool_calls]
    answered = {m.tool_call_id for m in messages if m.role == "tool"}
    asked = [c.id for m in messages for c in m.tool_calls]
    assert sorted(answered) == sorted(asked) and len(asked) == len(set(asked))


@pytest.mark.parametrize("driver", ["run", "arun"])
@pytest.mark.parametrize("ending", ENDINGS, ids=list(ENDINGS))
def test_a_run_that_raises_answers_every_call_and_its_thread_stays_usable(ending, driver):
    turn, kwargs, raised = ENDINGS[ending]
    thread = Thread()
    model = _batch(*turn)
    with pytest.raises(raised) as info:
        if driver == "run":
            run(model, "Weather?", tools=[storm, get_weather], thread=thread, **kwargs)
        else:
            asyncio.run(agentkit.arun(model, "Weather?", tools=[storm, get_weather], thread=thread, **kwargs))
    # the thread (and the partial run, when the error carries one) answers every call of the turn
    assert_every_call_answered_once(thread.messages)
    assert len([m for m in thread.messages if m.role == "tool"]) == len(turn)
    if isinstance(info.value, agentkit.RunError):
        assert info.value.run.messages == thread.messages and info.value.run.stop_reason is StopReason.ERROR
    # the raising call carries its own error; calls that never ran say so
    kinds = [json.loads(m.content)["error"]["kind"] if m.is_error else "ok"
             for m in thread.messages if m.role == "tool"]
    assert all(k in ("ok", "tool_error", "bad_json", "unknown_tool", "not_run") for k in kinds), kinds

    # the next run on the same thread sees a history a provider accepts, and goes on
    def strict_provider(messages, tools, options):
        assert_every_call_answered_once(list(messages))
        return "Sorry, the weather service is down."

    again = run(FunctionModel(strict_provider), "try again", tools=[storm, get_weather], thread=thread)
    assert again.stop_reason is StopReason.FINAL_ANSWER
    assert_every_call_answered_once(thread.messages)


def test_the_raising_call_gets_its_error_and_calls_that_ran_keep_their_results():
    thread = Thread()
    with pytest.raises(ToolExecutionError) as info:
        run(_batch(GOOD, TOKYO, OSAKA), "x", tools=[storm, get_weather], on_tool_error="raise", thread=thread)
    answers = [json.loads(m.content) for m in thread.messages if m.role == "tool"]
    assert answers[0]["ok"] is True and answers[0]["result"] == "Nara: sunny, 22°C"
    assert answers[1]["error"]["kind"] == "tool_error" and "RuntimeError" in answers[1]["error"]["message"]
    assert answers[2]["error"]["kind"] == "tool_error"  # it ran too (one parallel batch): its own error
    assert info.value.call.id == "call_1_1" and isinstance(info.value.__cause__, RuntimeError)
    assert info.value.run.error is info.value.__cause__


def test_a_refused_call_under_raise_stops_the_batch_before_anything_runs():
    ran = []

    @tool
    def record(city: str) -> str:
        """Remembers that it ran."""
        ran.append(city)
        return city

    thread = Thread()
    with pytest.raises(ToolExecutionError, match="parse"):
        run(_batch(call("record", {"city": "A"}), call("record", raw="{bad"), call("record", {"city": "C"})),
            "x", tools=[record], on_tool_error="raise", thread=thread)
    assert ran == []
    kinds = [json.loads(m.content)["error"]["kind"] for m in thread.messages if m.role == "tool"]
    assert kinds == ["not_run", "bad_json", "not_run"]


def test_ctrl_c_during_the_tools_is_a_user_cancel_and_the_thread_is_answered():
    @tool
    def interrupted(q: str) -> str:
        """The user presses Ctrl-C while this runs."""
        raise KeyboardInterrupt

    thread = Thread()
    with pytest.raises(KeyboardInterrupt):
        run(_batch(call("interrupted", {"q": "a"}), call("search", {"q": "b"})), "x", tools=[interrupted, search],
            thread=thread, executor="sequential")
    assert_every_call_answered_once(thread.messages)
    assert thread.runs[-1].stop_reason is StopReason.USER_CANCEL
    assert thread.runs[-1].trace.events[-1].kind == "stop"


def test_a_limit_is_recorded_once_in_the_trace():
    r = run(always_calls("search", lambda step: {"q": f"q{step}"}), "go", tools=[search],
            limits=Limits(max_tool_calls=2))
    assert [(e.data["limit"], e.data["action"]) for e in r.trace.of("limit")] == [("max_tool_calls", "end")]
    r = run(always_calls("search", lambda step: {"q": f"q{step}"}), "go", tools=[search], limits=Limits(max_steps=3))
    assert [(e.data["limit"], e.data["action"]) for e in r.trace.of("limit")] == [("max_steps", "end")]
    assert r.trace.count("stop") == 1


# -- arguments nested 10,000 deep, handed over as an object (issue 7, item 2) -------------------------------

def nested(depth: int) -> dict:
    node: dict = {}
    for _ in range(depth):
        node = {"a": node}
    return node


@pytest.mark.parametrize("driver", ["run", "arun"])
@pytest.mark.parametrize("limits", [Limits(), Limits(max_repeats=1)], ids=["default", "repeat cap"])
def test_arguments_nested_ten_thousand_deep_are_a_refused_call_not_a_recursion_error(driver, limits):
    deep = ModelTurn(tool_calls=(ToolCall.from_raw("c1", "get_weather", {"city": nested(10_000)}),),
                     stop="tool_calls")
    model = ScriptedModel([deep, "Sorry."])
    if driver == "run":
        r = run(model, "x", tools=[get_weather], limits=limits)
    else:
        r = asyncio.run(agentkit.arun(model, "x", tools=[get_weather], limits=limits))
    (answer,) = tool_messages(r)
    assert json.loads(answer.content)["error"]["kind"] == "too_deep"
    assert r.stop_reason is StopReason.FINAL_ANSWER and r.invalid_calls == 1
    assert r.trace.of("model_request")[-1].data["chars"] > 10_000  # measured, without recursion


# -- the core without I/O --------------------------------------------------------------------------------

def test_the_core_answers_call_model_run_tools_done_in_turn():
    from agentkit.core.loop import CallModel, Done, LoopCore, RunTools

    core = LoopCore([get_weather], "Weather in Tokyo?")
    step = core.next()
    assert isinstance(step, CallModel) and [m.role for m in step.messages] == ["user"]
    assert step.tools == (get_weather.spec,) and step.options.tool_choice == "auto"
    core.take_turn(ModelTurn(tool_calls=(call("get_weather", {"city": "Tokyo"}, id="c1"),), stop="tool_calls"))
    step = core.next()
    assert isinstance(step, RunTools) and [j.call_id for j in step.jobs] == ["c1"]
    core.take_outcomes([Outcome(value=job.invoke(1)) for job in step.jobs])
    step = core.next()
    assert isinstance(step, CallModel) and [m.role for m in step.messages] == ["user", "assistant", "tool"]
    core.take_turn(ModelTurn(text="Sunny."))
    assert isinstance(core.next(), Done) and isinstance(core.next(), Done)
    assert core.result().output == "Sunny." and core.result().stop_reason is StopReason.FINAL_ANSWER


def test_settings_refuse_a_bad_tool_timeout_and_limits():
    from agentkit.core.runs import Settings

    for bad in (0, -1, float("inf"), float("nan"), True, "5"):
        with pytest.raises(ValueError, match="tool_timeout"):
            Settings(tool_timeout=bad)
    with pytest.raises(TypeError, match="limits"):
        Settings(limits={"max_steps": 3})


# -- reasoning state: the loop keeps what the provider handed back, without knowing what it is --------------

def _reasoning_model(seen: list):
    """Calls get_weather once, with reasoning state on its turn; then answers. Records every request."""
    from agentkit.core.types import ReasoningState

    state = ReasoningState("anthropic", "claude-sonnet-4-5", ({"type": "thinking", "thinking": "t", "signature": "s"},))

    def decide(messages, tools, options):
        seen.append(list(messages))
        if len(seen) == 1:
            return ModelTurn(None, (ToolCall.from_raw("call_1", "get_weather", {"city": "Tokyo"}),), "tool_calls",
                             reasoning=state)
        return ModelTurn("Sunny in Tokyo.", reasoning=state)
    return FunctionModel(decide), state


def test_run_sends_the_turns_reasoning_state_back_with_its_calls():
    seen: list = []
    model, state = _reasoning_model(seen)
    r = run(model, "Weather in Tokyo?", tools=[get_weather], thread=Thread())
    replayed = [m for m in seen[1] if m.role == "assistant"]
    assert [m.reasoning for m in replayed] == [state]
    assert [m.reasoning for m in r.messages if m.role == "assistant"] == [state, state]


def test_arun_keeps_reasoning_state_like_run():
    seen: list = []
    model, state = _reasoning_model(seen)
    r = asyncio.run(agentkit.arun(model, "Weather in Tokyo?", tools=[get_weather]))
    assert [m.reasoning for m in seen[1] if m.role == "assistant"] == [state]
    assert r.stop_reason is StopReason.FINAL_ANSWER


# -- a tool list that changes while the run goes on ---------------------------------------------------------

@pytest.mark.parametrize("driver", ["run", "arun"])
def test_a_tool_source_is_asked_before_every_model_call_and_the_model_sees_the_new_list(driver):
    @agentkit.tool
    def old_search(q: str) -> str:
        """Search (the first version)."""
        return "old"

    @agentkit.tool
    def new_search(q: str) -> str:
        """Search (the second version)."""
        return "new"

    current = [old_search]
    offered: list[list[str]] = []

    def model_fn(messages, tools, options):
        offered.append([t.name for t in tools])
        if len(offered) == 1:
            current[:] = [new_search]  # the server changes its tools while the first call runs
            return [agentkit.call("old_search", {"q": "x"})]
        if len(offered) == 2:
            return [agentkit.call("old_search", {"q": "x"}), agentkit.call("new_search", {"q": "x"})]
        return "done"

    model = agentkit.FunctionModel(model_fn)
    if driver == "run":
        result = agentkit.run(model, "go", tools=lambda: list(current))
    else:
        result = asyncio.run(agentkit.arun(model, "go", tools=lambda: list(current)))
    assert offered == [["old_search"], ["new_search"], ["new_search"]]
    first, gone, fresh = result.results
    assert first.result == "old"  # it was there when the model called it
    # offered at the first turn, withdrawn since: the model is behind the list, which the kind says
    assert gone.error_kind == "stale_tool" and "new_search" in gone.error["message"]
    assert fresh.result == "new"
    (changed,) = result.trace.of("tools_changed")
    assert changed.data == {"step": 2, "tools": ["new_search"]}


def test_a_single_tool_instead_of_a_list_is_refused_with_the_fix():
    @agentkit.tool
    def echo(text: str) -> str:
        """Echo."""
        return text

    with pytest.raises(TypeError, match=r"tools=\[my_tool\]"):
        agentkit.run(ScriptedModel(["hi"]), "go", tools=echo)
