"""The runner: resume without re-running, N in flight, rate limit, trials and seeds, shards, errors; and the
seeded noisy model scoring lower, stably, with labels that match its noise."""

from __future__ import annotations

import asyncio
import json
from collections import Counter

import pytest

from agentkit.bench import bfcl, scenarios
from agentkit.bench.oracle import Oracle
from agentkit.bench.runner import BenchAborted, RateLimit, emitted_calls, read_records, run_benchmark
from agentkit.bench.suites import Case, UnknownSuite, load_cases, parse_suites
from agentkit.core.errors import AuthenticationError, ServerError
from agentkit.sim.wire.common import ChatRequest

CASES = [Case(s.id, "agentkit", s.category, s) for s in scenarios.load_all()[:12]]


class Interrupted(BaseException):
    """Stands in for Ctrl-C: not an Exception, so nothing on the way catches it."""


class OracleModel:
    """The oracle in-process; counts the cases it was asked about and can fail on purpose."""

    def __init__(self, cases=CASES, fail_after=None, fail_on=None, error=None):
        self.oracle = Oracle(cases)
        self.seen = Counter()
        self.fail_after, self.fail_on, self.error = fail_after, fail_on, error
        self.in_flight = self.max_in_flight = 0

    async def acomplete(self, messages, tools, options):
        first = next(m.content for m in messages if m.role == "user")
        if self.fail_after is not None and len(self.seen) >= self.fail_after and first not in self.seen:
            raise Interrupted()
        if self.fail_on is not None and self.fail_on in first:
            raise self.error
        self.seen[first] += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        for _ in range(5):  # let every other worker reach its model call before this one returns
            await asyncio.sleep(0)
        self.in_flight -= 1
        return self.oracle.respond(ChatRequest("oracle", tuple(messages), tuple(tools), options))


def run(model, out, **kw):
    kw.setdefault("progress", False)
    return asyncio.run(run_benchmark(kw.pop("cases", CASES), model, out=out, label="m", **kw))


def test_an_interrupted_run_resumes_without_re_running_finished_cases(tmp_path):
    out = tmp_path / "m.jsonl"
    with pytest.raises(Interrupted):
        run(OracleModel(fail_after=5), out, concurrency=1)
    finished = {r["case"] for r in read_records(out)}
    assert len(finished) == 5

    second = OracleModel()
    summary = run(second, out, concurrency=4)
    assert summary.skipped == 5 and summary.done == len(CASES) - 5
    asked = set(second.seen)
    assert not any(case.source.prompt in asked for case in CASES if case.id in finished)
    records = read_records(out)
    assert sorted(r["case"] for r in records) == sorted(c.id for c in CASES) and all(r["ok"] for r in records)


def test_a_line_cut_short_by_a_crash_is_cut_off_and_the_next_record_starts_on_a_new_line(tmp_path):
    out = tmp_path / "m.jsonl"
    run(OracleModel(), out, cases=CASES[:2])
    with open(out, "a", encoding="utf-8") as f:
        f.write('{"model": "m", "case": "limits/half')
    assert len(read_records(out)) == 2  # the half line is not read, and not warned about either
    run(OracleModel(), out, cases=CASES[:4])
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(read_records(out)) == 4 and len(lines) == 2 + 4  # a run line per session, a line per record
    assert all(json.loads(line) for line in lines)


def test_exactly_n_conversations_are_in_flight(tmp_path):
    model = OracleModel()
    run(model, tmp_path / "m.jsonl", concurrency=4)
    assert model.max_in_flight == 4


def test_a_failed_model_call_is_recorded_and_tried_again_on_resume(tmp_path):
    out = tmp_path / "m.jsonl"
    target = CASES[3].source.prompt
    summary = run(OracleModel(fail_on=target, error=ServerError("boom", status=500)), out)
    assert summary.errors == 1
    failed = [r for r in read_records(out) if not r["ok"]]
    assert [r["label"] for r in failed] == ["provider_error"] and "ServerError" in failed[0]["detail"]

    retry = OracleModel()
    summary = run(retry, out)
    assert summary.done == 1 and list(retry.seen) == [target]


def test_a_refused_key_stops_the_run_with_one_reason(tmp_path):
    model = OracleModel(fail_on=CASES[0].source.prompt, error=AuthenticationError("bad key", status=401))
    with pytest.raises(BenchAborted, match="refused the API key"):
        run(model, tmp_path / "m.jsonl", concurrency=1)
    assert read_records(tmp_path / "m.jsonl") == []


def test_trials_get_consecutive_seeds_and_their_own_model(tmp_path):
    seeds = []

    def make_model(seed):
        seeds.append(seed)
        return OracleModel()

    asyncio.run(run_benchmark(CASES[:3], make_model=make_model, out=tmp_path / "m.jsonl", label="m",
                              trials=3, seed=40, progress=False))
    records = read_records(tmp_path / "m.jsonl")
    # a model per trial and worker that ran one of its cases: never shared across trials, never two for a
    # worker in one trial (how many workers took a trial's cases depends on scheduling: 1 to 3 here)
    assert set(seeds) == {40, 41, 42} and all(1 <= n <= 3 for n in Counter(seeds).values())
    assert Counter((r["trial"], r["seed"]) for r in records) == {(0, 40): 3, (1, 41): 3, (2, 42): 3}


def test_the_rate_limit_spaces_model_calls_evenly_after_a_burst():
    now, waits = [100.0], []

    async def sleep(seconds):
        waits.append(round(seconds, 6))

    limit = RateLimit(per_second=10, burst=2, clock=lambda: now[0], sleep=sleep)

    async def five():
        for _ in range(5):
            await limit.acquire()

    asyncio.run(five())
    assert waits == [0.1, 0.2, 0.3]  # two at once, then one every 0.1 s (the clock never moved)


def test_every_model_call_of_a_run_waits_for_the_rate_limit(tmp_path):
    waits = []

    async def sleep(seconds):
        waits.append(seconds)

    limit = RateLimit(per_minute=600, clock=lambda: 0.0, sleep=sleep)
    run(OracleModel(), tmp_path / "m.jsonl", cases=CASES[:3], rate=limit)
    steps = sum(r["steps"] for r in read_records(tmp_path / "m.jsonl"))
    assert len(waits) == steps - 1 and waits == pytest.approx([0.1 * i for i in range(1, steps)])


def test_shards_split_the_cases_without_overlap():
    everything = [c.id for c in load_cases("agentkit")]
    shards = [[c.id for c in load_cases("agentkit", shard=(i, 3))] for i in (1, 2, 3)]
    assert sorted(sum(shards, [])) == sorted(everything)
    assert all({c.split("/")[0] for c in shard} == set(scenarios.CATEGORIES) for shard in shards)


def test_suite_names_are_checked():
    assert parse_suites("bfcl:parallel,agentkit") == [("bfcl", "parallel")] + [
        ("agentkit", c) for c in scenarios.CATEGORIES]
    with pytest.raises(UnknownSuite, match="unknown suite 'bfcll'"):
        parse_suites("bfcll")
    with pytest.raises(UnknownSuite, match="unknown agentkit category 'speed'"):
        parse_suites("agentkit:speed")


def test_tool_calls_are_counted_from_the_conversation_including_refused_ones():
    import agentkit
    from agentkit.models import ScriptedModel, call

    case = scenarios.load("limits")[1]
    world = case.new_world()
    result = agentkit.run(ScriptedModel([[call("get_weather", {}), call("get_weather", {"city": "London"})],
                                         "cloudy"]), case.messages(), tools=world.tools(list(case.tools)))
    assert emitted_calls(result) == 2


# -- the seeded noisy model -----------------------------------------------------------------------------------------

#: Which labels each of sim-noisy's mistakes can cause in a BFCL category.
NOISE_LABELS = {"wrong_tool": {"wrong_function"}, "missing_field": {"missing_argument"},
                "string_numbers": {"type_error", "wrong_value"}, "bad_json": {"bad_json"},
                "extra_call": {"wrong_count"}}


def test_a_seeded_noisy_model_scores_lower_stably_and_fails_the_way_it_was_made_to(tmp_path):
    from agentkit import sim
    from agentkit.http import HTTPModel
    from agentkit.sim import behaviours as sim_models

    bfcl.fetch()
    cases = load_cases("bfcl:simple_python,bfcl:multiple,bfcl:live_simple", limit=30)
    noise: dict[str, tuple[str, ...]] = {}

    def respond(request):
        turn = sim_models.respond(request)
        if request.model.startswith("sim-noisy-"):
            decision = sim_models.noisy(request, request.model.rsplit("-", 1)[1])
            assert sim_models.to_turn(decision, request) == turn  # the instrument changes nothing
            first = next(m.content for m in request.messages if m.role == "user")
            noise[first] = tuple(n.split()[1] for n in decision.notes if n.startswith("noisy:"))
        return turn

    def results(name, out):
        with sim.serve(respond=respond) as server:
            model = HTTPModel(name, base_url=server.base_url("openai-chat"), api_key="sim")
            asyncio.run(run_benchmark(cases, model, out=out, label=name, concurrency=8, progress=False))
        return {r["case"]: (r["ok"], r["label"]) for r in read_records(out)}

    clean = results("sim-reasoner", tmp_path / "clean.jsonl")
    noisy = results("sim-noisy-7", tmp_path / "noisy.jsonl")
    again = results("sim-noisy-7", tmp_path / "again.jsonl")

    assert noisy == again  # stable: a seed is a reproducible model
    passed = sum(ok for ok, _ in clean.values()), sum(ok for ok, _ in noisy.values())
    assert passed[1] < passed[0]
    prompts = {c.id: next(m.content for m in c.source.messages if m.role == "user") for c in cases}
    broken = [case for case in clean if clean[case][0] and not noisy[case][0]]
    assert broken, (passed, len(cases))
    for case in broken:
        kinds = noise[prompts[case]]
        allowed = set().union(*(NOISE_LABELS[k] for k in kinds)) if kinds else set()
        assert noisy[case][1] in allowed, (case, kinds, noisy[case])


def test_bfcls_generation_settings_are_sent_by_default_recorded_and_can_be_changed(tmp_path):
    """BFCL sends temperature 0.001 (its --temperature default); so does the runner, on every request of every
    case (multi-turn too), and the run line says so; generation={} sends none."""
    import asyncio

    from agentkit.bench.results import read_results
    from agentkit.bench.runner import run_benchmark
    from agentkit.bench.suites import load_cases
    from agentkit.models import FunctionModel

    seen = []

    def recording(messages, tools, options):
        seen.append(options.temperature)
        return "I will not call a tool."
    cases = load_cases("bfcl:simple_python,bfcl:multi_turn_base", limit=2)
    out = tmp_path / "default.jsonl"
    asyncio.run(run_benchmark(cases, FunctionModel(recording), out=out, progress=False))
    assert seen and set(seen) == {0.001}
    assert read_results(out).runs[0]["generation"] == {"temperature": 0.001}
    seen.clear()
    out = tmp_path / "none.jsonl"
    asyncio.run(run_benchmark(cases, FunctionModel(recording), out=out, progress=False, generation={}))
    assert seen and set(seen) == {None} and read_results(out).runs[0]["generation"] == {}
    seen.clear()
    asyncio.run(run_benchmark(cases, FunctionModel(recording), out=tmp_path / "warm.jsonl", progress=False,
                              generation={"temperature": 0.7}))
    assert set(seen) == {0.7}
