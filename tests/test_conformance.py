"""The conformance check: a loop that breaks one provider rule is reported with exactly that rule and the
request it broke it in; the kit's own loop is clean in every format and scenario; a command that crashes,
hangs or sends nothing is reported as such, and the check goes on."""

from __future__ import annotations

import asyncio
import json
import sys
import threading

import httpx
import pytest

import agentkit
from agentkit import tool
from agentkit.conformance import Record, Report, Run, check, environment, run_command
from agentkit.conformance.__main__ import main
from agentkit.conformance.report import KEPT
from agentkit.conformance.scenarios import plan, rules_of
from agentkit.http import HTTPModel
from agentkit.providers import FORMATS


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@tool
def get_time(city: str) -> str:
    """The local time in a city."""
    return f"noon in {city}"


ASK = "Weather and time in Paris?"


class Rewriting(httpx.BaseTransport):
    """The wire between the kit's loop and the simulator, with one mistake a real client makes put into
    each request body (`edit`), and optionally a 429 sent again (a loop that retries what it must not)."""

    def __init__(self, edit, *, resend_429: bool = False):
        self.inner, self.edit, self.resend_429 = httpx.HTTPTransport(), edit, resend_429

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "POST" and request.content:
            headers = {k: v for k, v in request.headers.items() if k.lower() != "content-length"}
            body = json.dumps(self.edit(json.loads(request.content))).encode()
            request = httpx.Request(request.method, request.url, headers=headers, content=body)
        response = self.inner.handle_request(request)
        if self.resend_429 and response.status_code == 429:
            response.read()
            response.close()
            response = self.inner.handle_request(request)
        return response


def kit_loop(target, transport=None):
    model = HTTPModel(target.model, target.format, base_url=target.base_url, api_key="dummy", backoff=0.01,
                      transport=transport)
    agentkit.run(model, ASK, [get_weather, get_time])


def broken_loop(edit, **options):
    return lambda target: kit_loop(target, Rewriting(edit, **options))


# -- the mistakes, each as the wire shows it ----------------------------------------------------------------

def drops_a_result(body):
    results = [i for i, m in enumerate(body.get("messages", [])) if m.get("role") == "tool"]
    if results:
        del body["messages"][results[-1]]
    return body


def puts_text_before_the_results(body):
    for m in body.get("messages", []):
        content = m.get("content")
        if m["role"] == "user" and isinstance(content, list) and any(b.get("type") == "tool_result" for b in content):
            m["content"] = [{"type": "text", "text": "Here are the results."}, *content]
    return body


def drops_thinking(body):
    for m in body.get("messages", []):
        if m["role"] == "assistant" and isinstance(m["content"], list):
            m["content"] = [b for b in m["content"] if b.get("type") not in ("thinking", "redacted_thinking")]
    return body


def drops_reasoning_items(body):
    body["input"] = [item for item in body.get("input", []) if item.get("type") != "reasoning"]
    return body


def drops_phase(body):
    for item in body.get("input", []):
        item.pop("phase", None)
    return body


def sends_the_signed_call_second(body):
    """Gemini signs the first call of a parallel step only; this client sends that call second, so the
    signature is lost from where the API looks for it (the first functionCall part)."""
    for content in body.get("contents", []):
        calls = [p for p in content.get("parts", []) if "functionCall" in p]
        if content.get("role") == "model" and len(calls) > 1:
            content["parts"] = [p for p in content["parts"] if "functionCall" not in p] + [calls[1], calls[0],
                                                                                             *calls[2:]]
    return body


def unchanged(body):
    return body


BROKEN = [
    pytest.param(drops_a_result, {}, "openai-chat", "parallel", "openai-chat.tool_calls_unanswered",
                 id="drops-a-result"),
    pytest.param(puts_text_before_the_results, {}, "anthropic", "parallel", "anthropic.tool_results_first",
                 id="anthropic-results-after-text"),
    pytest.param(drops_thinking, {}, "anthropic", "reasoning", "anthropic.thinking_missing_in_open_cycle",
                 id="drops-thinking"),
    pytest.param(drops_reasoning_items, {}, "openai-responses", "reasoning", "openai-responses.call_without_reasoning",
                 id="drops-reasoning-items"),
    pytest.param(drops_phase, {}, "openai-responses", "sequential", "openai-responses.phase_dropped", id="drops-phase"),
    pytest.param(unchanged, {"resend_429": True}, "anthropic", "spend-limit", "anthropic.spend_limit",
                 id="retries-a-spend-limit"),
    pytest.param(sends_the_signed_call_second, {}, "gemini", "parallel", "gemini.missing_thought_signature",
                 id="loses-the-gemini-signature"),
]


@pytest.mark.parametrize(("edit", "options", "fmt", "scenario", "rule"), BROKEN)
def test_a_loop_that_breaks_one_rule_is_reported_with_that_rule_and_request(edit, options, fmt, scenario, rule):
    report = check(broken_loop(edit, **options), formats=[fmt], scenarios=[scenario])
    broken = {(r.rule, r.request) for r in report.broken}
    # the mistake shows in the first request that carries a history: the second (the third for the
    # retried spend limit, the second being the limit itself, met once as the scenario plans)
    assert broken == {(rule, 3 if "resend_429" in options else 2)}, report.table()
    assert report.exit_code == 1
    assert rule in report.table()
    (record, *_) = report.broken
    assert record.words and record.source and record.format == fmt and record.scenario == scenario


def test_a_model_that_refuses_tools_is_met_once_and_refused_when_sent_the_same_again():
    def sends(times):
        def loop(target):
            for _ in range(times):
                httpx.post(target.base_url + "/chat/completions", json={
                    "model": target.model, "messages": [{"role": "user", "content": ASK}],
                    "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]})
        return loop

    once = check(sends(1), formats=["openai-chat"], scenarios=["model-refuses-tools"])
    assert [(r.rule, r.request) for r in once.records if r.outcome == "answered"] == [
        ("openai-chat.responses_only_tools", 1)]
    assert once.exit_code == 0
    twice = check(sends(2), formats=["openai-chat"], scenarios=["model-refuses-tools"])
    assert [(r.rule, r.request) for r in twice.broken] == [("openai-chat.responses_only_tools", 2)]
    assert twice.broken[0].words.startswith("sent again after a final error: ")


def test_the_same_loop_without_the_mistake_is_clean_in_those_runs():
    report = check(broken_loop(unchanged), formats=["openai-chat", "anthropic", "openai-responses", "gemini"],
                   scenarios=["parallel", "reasoning", "sequential"])
    assert (report.broken, report.failed, report.exit_code) == ([], [], 0), report.table()


def test_the_kits_own_run_is_clean_in_every_format_and_scenario():
    report = check(kit_loop)
    assert {(run.format, run.scenario) for run in report.runs} == {(p.format, p.scenario) for p in plan()}
    assert report.broken == [], report.table()
    assert report.failed == [], report.table()
    assert all(run.ended in ("finished", "stopped") for run in report.runs)
    # every run reached the rules its scenario is about, and kept them (passed, or its error answered)
    for run in report.runs:
        outcomes = {r.rule: r.outcome for r in run.records}
        missed = {rule: outcomes.get(rule) for rule in rules_of(run.format, run.scenario)
                  if outcomes.get(rule) not in KEPT}
        assert missed == {}, (run.format, run.scenario)
    assert report.exit_code == 0


def test_the_kits_own_arun_is_clean_on_parallel_calls_and_reasoning_state():
    def async_loop(target):
        model = HTTPModel(target.model, target.format, base_url=target.base_url, api_key="dummy")
        asyncio.run(agentkit.arun(model, ASK, [get_weather, get_time]))

    report = check(async_loop, scenarios=["parallel", "reasoning"])
    assert len(report.runs) == 2 * len(FORMATS)
    assert (report.broken, report.failed) == ([], []), report.table()


def test_a_loop_that_raises_or_hangs_is_reported_and_the_check_goes_on():
    release = threading.Event()

    def loop(target):
        if target.format == "anthropic":
            raise RuntimeError("my loop has a bug")
        if target.format == "gemini":
            release.wait()  # hangs until the test ends
        kit_loop(target)

    try:
        report = check(loop, formats=["anthropic", "gemini", "ollama"], scenarios=["one-call"], timeout=3)
    finally:
        release.set()
    ended = {run.format: (run.ended, run.detail) for run in report.runs}
    assert ended["anthropic"] == ("crashed", "raised RuntimeError: my loop has a bug")
    assert ended["gemini"][0] == "hung"
    assert ended["ollama"] == ("finished", "")
    assert report.exit_code == 3


SENDS_ONE_REQUEST_THEN = (
    "import os, httpx; "
    "httpx.post(os.environ['AGENTKIT_BASE_URL'] + '/chat/completions', json={'model': os.environ['AGENTKIT_MODEL'], "
    "'messages': [{'role': 'user', 'content': 'hi'}], "
    "'tools': [{'type': 'function', 'function': {'name': 'f', 'parameters': {'type': 'object'}}}]}); ")


def test_a_command_that_crashes_hangs_or_sends_nothing_is_reported_not_fatal():
    commands = {
        "crashed": [sys.executable, "-c", SENDS_ONE_REQUEST_THEN + "raise SystemExit('boom')"],
        "hung": [sys.executable, "-c", SENDS_ONE_REQUEST_THEN + "import time; time.sleep(600)"],
        "silent": [sys.executable, "-c", "print('I never call the API')"],
    }
    for ended, command in commands.items():
        report = run_command(command, formats=["openai-chat"], scenarios=["one-call"], timeout=5)
        (run,) = report.runs
        assert run.ended == ended, run.detail
        assert report.exit_code == 3
    assert "boom" in run_command(commands["crashed"], ["openai-chat"], ["one-call"], timeout=5).runs[0].detail


def test_the_command_line_runs_the_kits_loop_and_writes_the_records(tmp_path, capsys):
    loop = tmp_path / "loop.py"
    loop.write_text("import agentkit\nfrom agentkit.http import HTTPModel\n"
                    "def get_weather(city: str) -> str:\n    '''The weather in a city.'''\n    return 'sunny'\n"
                    "tools = [agentkit.tool(get_weather)]\n"
                    "print(agentkit.run(HTTPModel.from_env(), 'Weather in Paris?', tools).output)\n")
    out = tmp_path / "report.json"
    code = main(["run", "--formats", "ollama,anthropic", "--scenarios", "parallel", "--json", str(out), "--",
                 sys.executable, str(loop)])
    table = capsys.readouterr().out
    assert code == 0, table
    assert table.splitlines()[0].split() == ["scenario", "ollama", "anthropic"]
    data = json.loads(out.read_text())
    assert data["exit_code"] == 0
    assert [(r["format"], r["ended"]) for r in data["runs"]] == [("ollama", "finished"), ("anthropic", "finished")]
    assert set(data["records"][0]) == {"format", "scenario", "rule", "outcome", "request", "message", "words",
                                       "source"}
    assert {r["outcome"] for r in data["records"]} == {"passed", "not exercised"}


def test_scenarios_and_rules_are_listed(capsys):
    assert main(["scenarios"]) == 0
    listed = capsys.readouterr().out
    assert "model-refuses-tools: " in listed
    assert "  ollama            llama2:13b-conform-model-refuses-tools: ollama.model_without_tools" in listed
    assert main(["rules", "--format", "anthropic"]) == 0
    rules = capsys.readouterr().out
    assert "anthropic.tool_results_first" in rules and "refuses" in rules and "degrades" in rules
    with pytest.raises(SystemExit) as usage:
        main(["run", "--formats", "nope", "--", "true"])
    assert usage.value.code == 2


def test_every_sdk_is_pointed_at_the_simulator_with_dummy_keys(monkeypatch):
    env = environment("http://127.0.0.1:9", "openrouter", "anthropic/claude-opus-5.5-conform-parallel")
    assert env["AGENTKIT_BASE_URL"] == env["OPENAI_BASE_URL"] == "http://127.0.0.1:9/api/v1"
    assert env["AGENTKIT_PROVIDER"] == "openrouter"
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    import anthropic
    import openai
    from google import genai

    assert str(openai.OpenAI().base_url).startswith("http://127.0.0.1:9/api/v1")
    assert str(anthropic.Anthropic().base_url).startswith("http://127.0.0.1:9")
    assert genai.Client()._api_client._http_options.base_url.startswith("http://127.0.0.1:9")
    assert all(env[key] == "sk-conformance-dummy" for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY",
                                                              "GEMINI_API_KEY", "OPENROUTER_API_KEY"))


def test_the_table_says_a_rule_broken_at_every_message_once_with_how_many_more():
    records = [Record("openrouter", "sequential", "openrouter.reasoning_details_dropped", "degraded", request, 1,
                      "the reasoning is lost") for request in (2, 3, 4)]
    table = Report([Run("openrouter", "sequential", "m", "finished", 4, "", records)]).table()
    assert table.count("reasoning_details_dropped") == 1
    assert "(request 2, message 1; 2 more, up to request 4): the reasoning is lost" in table
