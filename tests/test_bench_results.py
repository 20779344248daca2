"""The benchmark never reuses or loses a result by mistake.

- a results file records its run's configuration; a resumed run with another one refuses to append;
- a damaged or hand-edited results file gives warnings with line numbers (or one clear error), never a
  traceback, and a report never counts a case the suite did not run;
- provider errors are counted apart from the model's mistakes; the progress line shows retries live;
- no key reaches the results file, whatever the server echoes;
- a cut or edited cassette given to --replay ends in one line.
"""

from __future__ import annotations

import asyncio
import csv
import dataclasses
import io
import json
import secrets
import urllib.parse

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentkit.bench import scenarios
from agentkit.bench.__main__ import main
from agentkit.bench.report import Report
from agentkit.bench.results import ConfigMismatch, ResultsError, check_record, read_results
from agentkit.bench.runner import HTTPModels, read_records, run_benchmark
from agentkit.bench.suites import Case, load_cases
from agentkit.http import HTTPModel

SUITE = ["--suite", "agentkit:limits", "--limit", "2", "--provider", "sim", "--no-progress"]


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


# -- 1. the configuration is recorded and compared ----------------------------------------------------------

@pytest.mark.parametrize("change, named", [
    (["--seed", "1"], "seed: 0 in the file, 1 now"),
    (["--stream"], "stream: false in the file, true now"),
    (["--format", "anthropic"], 'format: "openai-chat" in the file, "anthropic" now'),
    (["--model", "sim-noisy-3"], 'model: "oracle" in the file, "sim-noisy-3" now'),
])
def test_a_resumed_run_with_another_configuration_refuses_to_append(capsys, tmp_path, change, named):
    out = str(tmp_path)
    assert run_cli(capsys, "run", *SUITE, "--model", "oracle", "--label", "mine", "--out", out)[0] == 0
    before = (tmp_path / "mine.jsonl").read_bytes()
    code, _, err = run_cli(capsys, "run", *SUITE, "--model", "oracle", "--label", "mine", "--out", out, *change)
    assert code == 2 and len(err.strip().splitlines()) == 1, err  # refused before anything starts
    assert err.startswith("agentkit.bench: error:") and named in err and "another --label or --out" in err
    assert (tmp_path / "mine.jsonl").read_bytes() == before  # nothing appended, nothing reprinted as new


def test_the_same_configuration_resumes_and_more_cases_may_be_added(capsys, tmp_path):
    out = str(tmp_path)
    assert run_cli(capsys, "run", *SUITE, "--model", "oracle", "--out", out)[0] == 0
    code, _, err = run_cli(capsys, "run", *SUITE, "--model", "oracle", "--out", out, "--timeout", "30")
    assert code == 0 and "0 run, 2 already done" in err  # a transport setting is not a new configuration
    code, _, err = run_cli(capsys, "run", *SUITE[:3], "3", *SUITE[4:], "--model", "oracle", "--out", out)
    assert code == 0 and "1 run, 2 already done" in err


def test_the_file_records_the_whole_configuration(capsys, tmp_path):
    run_cli(capsys, "run", *SUITE, "--model", "oracle", "--out", str(tmp_path), "--seed", "4", "--timeout", "9")
    runs = read_results(tmp_path / "oracle.jsonl").runs
    assert len(runs) == 1
    assert {k: runs[0][k] for k in ("label", "format", "model", "base_url", "stream", "seed", "timeout",
                                    "max_retries")} == {
        "label": "oracle", "format": "openai-chat", "model": "oracle", "base_url": "sim", "stream": False,
        "seed": 4, "timeout": 9.0, "max_retries": 2}
    assert runs[0]["scorer"] and runs[0]["categories"] == ["agentkit:limits"]
    assert runs[0]["options"] == {"lenient_scoring": False}
    assert all(r["case_version"] for r in read_records(tmp_path / "oracle.jsonl"))


class Oracle:
    def __init__(self, cases):
        from agentkit.bench.oracle import Oracle as Answers

        self.answers = Answers(cases)

    async def acomplete(self, messages, tools, options):
        from agentkit.sim.wire.common import ChatRequest

        return self.answers.respond(ChatRequest("oracle", tuple(messages), tuple(tools), options))


def test_a_case_edited_since_it_was_run_is_not_taken_as_done(tmp_path):
    cases = [Case(s.id, "agentkit", s.category, s) for s in scenarios.load("limits")[:2]]
    out = tmp_path / "m.jsonl"
    asyncio.run(run_benchmark(cases, Oracle(cases), out=out, label="m", progress=False))
    edited = dataclasses.replace(cases[0].source, prompt=cases[0].source.prompt + " Please.")
    again = [Case(cases[0].id, "agentkit", "limits", edited), cases[1]]
    with pytest.raises(ConfigMismatch, match=f"case agentkit:limits/{cases[0].id} changed"):
        asyncio.run(run_benchmark(again, Oracle(again), out=out, label="m", progress=False))


def test_a_base_url_holding_a_key_resumes_and_the_key_is_not_in_the_file(tmp_path):
    key = planted_key()
    cases = load_cases("agentkit:limits", limit=1)
    url = f"http://echo.test/v1?key={key}"

    def answer(request):
        return httpx.Response(200, json={"id": "c", "object": "chat.completion", "created": 1, "model": "m",
                                         "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                             "role": "assistant", "content": "Done."}}]})

    out = tmp_path / "m.jsonl"
    for _ in range(2):
        model = HTTPModel("m", base_url=url, api_key="", transport=httpx.MockTransport(answer))
        summary = asyncio.run(run_benchmark(cases, model, out=out, progress=False, secrets=[key]))
    assert summary.skipped == 1 and key not in out.read_text(encoding="utf-8")


def test_a_local_server_restarted_on_another_port_resumes_its_finished_cases(tmp_path):
    cases = load_cases("agentkit:limits", limit=2)

    def answer(request):
        return httpx.Response(200, json={"id": "c", "object": "chat.completion", "created": 1, "model": "m",
                                         "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                             "role": "assistant", "content": "Done."}}]})

    out = tmp_path / "m.jsonl"
    for url in ("http://127.0.0.1:8080/v1", "http://localhost:8081/v1/"):
        model = HTTPModel("m", base_url=url, api_key="", transport=httpx.MockTransport(answer))
        summary = asyncio.run(run_benchmark(cases, model, out=out, label="m", progress=False))
    assert summary.skipped == 2 and summary.done == 0
    # another host, or another path on this machine, is another server: refused
    for url in ("http://10.0.0.5:8081/v1", "http://127.0.0.1:8081/v2"):
        model = HTTPModel("m", base_url=url, api_key="", transport=httpx.MockTransport(answer))
        with pytest.raises(ConfigMismatch, match="base_url"):
            asyncio.run(run_benchmark(cases, model, out=out, label="m", progress=False))


def test_a_file_that_is_not_a_results_file_is_not_appended_to(capsys, tmp_path):
    theirs = tmp_path / "oracle.jsonl"
    theirs.write_text('{"prompt": "an unrelated data set", "id": 1}\n', encoding="utf-8")
    code, _, err = run_cli(capsys, "run", *SUITE, "--model", "oracle", "--out", str(tmp_path))
    assert code == 2 and "records no configuration" in err
    assert theirs.read_text(encoding="utf-8") == '{"prompt": "an unrelated data set", "id": 1}\n'


def test_a_file_without_a_configuration_is_not_resumed_into(tmp_path):
    out = tmp_path / "m.jsonl"
    case = load_cases("agentkit:limits", limit=1)
    record = {"model": "m", "suite": "agentkit", "category": "limits", "case": case[0].id, "trial": 0,
              "ok": True, "label": None}
    out.write_text(json.dumps(record) + "\n")
    with pytest.raises(ConfigMismatch, match="records no configuration"):
        asyncio.run(run_benchmark(case, Oracle(case), out=out, label="m", progress=False))


# -- 2. damaged and hand-edited files --------------------------------------------------------------------

def good_file(capsys, tmp_path):
    assert run_cli(capsys, "run", *SUITE, "--model", "oracle", "--out", str(tmp_path))[0] == 0
    return tmp_path / "oracle.jsonl"


def first_record(path) -> dict:
    return read_records(path)[0]


DAMAGE = {
    "missing field": lambda r: {k: v for k, v in r.items() if k != "ok"},
    "wrong type": lambda r: {**r, "trial": "0"},
    "boolean trial": lambda r: {**r, "trial": True},
    "null model": lambda r: {**r, "model": None},
    "list": lambda r: [r],
    "nan latency": lambda r: {**r, "latency_ms": float("nan")},
    "nested": None, "invalid utf-8": None, "unknown case": None, "not json": None,
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_line_is_a_warning_with_its_number_and_is_not_counted(capsys, tmp_path, damage):
    path = good_file(capsys, tmp_path)
    record = first_record(path)
    if damage == "nested":
        line = b'{"model": "m", "x": ' + b"[" * 50_000 + b"]" * 50_000 + b"}"
    elif damage == "invalid utf-8":
        line = json.dumps({**record, "case": "limits-X"}).encode().replace(b"limits-X", b"limits-\xff\xfe")
    elif damage == "unknown case":
        line = json.dumps({**record, "case": "a-case-the-suite-never-had", "trial": 0}).encode()
    elif damage == "not json":
        line = b'{"model": "oracle", "case": '
    else:
        line = json.dumps(DAMAGE[damage](record)).encode()
    with open(path, "ab") as f:
        f.write(line + b"\n")
    lines = path.read_bytes().count(b"\n")
    code, out, err = run_cli(capsys, "report", str(path))
    assert code == 0
    warnings = [w for w in err.splitlines() if w.startswith("agentkit.bench: warning:")]
    assert len(warnings) == 1 and f"line {lines}:" in warnings[0] and "skipped" in warnings[0]
    assert "| **all** | | 2 | 100.0 % |" in out  # the suite ran 2 cases: the report counts 2
    assert "1 line of the results files skipped" in out


def test_a_utf16_file_is_one_clear_error(capsys, tmp_path):
    path = good_file(capsys, tmp_path)
    path.write_bytes(path.read_text(encoding="utf-8").encode("utf-16"))
    code, _, err = run_cli(capsys, "report", str(path))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "UTF-16" in err
    code, _, err = run_cli(capsys, "run", *SUITE, "--model", "oracle", "--out", str(tmp_path))
    assert code == 2 and "UTF-16" in err  # and a resumed run does not append to it either


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=400))
def test_any_bytes_are_read_or_refused_in_one_error(tmp_path, data):
    path = tmp_path / "any.jsonl"
    path.write_bytes(data)
    try:
        results = read_results(path)
    except ResultsError as exc:
        assert "\n" not in str(exc)
        return
    for record in results.records:
        assert check_record(record) is None
    Report(results.records).to_markdown()  # whatever passed the reader, the report can show


JSONISH = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                       lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                    max_size=3), max_leaves=8)
FIELD_VALUES = st.one_of(JSONISH, st.sampled_from(["m", "agentkit", "limits", "c1", "bfcl", "provider_error"]),
                         st.integers(0, 3), st.booleans())
RECORDISH = st.dictionaries(st.sampled_from(["model", "suite", "category", "case", "trial", "ok", "label",
                                             "latency_ms", "steps", "input_tokens", "provider", "seed"]),
                            FIELD_VALUES, max_size=12)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(RECORDISH, JSONISH, st.fixed_dictionaries({"run": JSONISH})), max_size=8))
def test_any_lines_are_read_as_records_or_warnings(tmp_path, values):
    path = tmp_path / "lines.jsonl"
    path.write_text("".join(json.dumps(v) + "\n" for v in values), encoding="utf-8")
    results = read_results(path)
    assert len(results.records) + len(results.runs) + results.skipped == len(values)
    report = Report(results.records, warnings=results.warnings)
    report.to_markdown(), report.to_json(), report.to_csv()


# -- 3. what the report says --------------------------------------------------------------------------------

def rec(model, case, ok=True, label=None, trial=0):
    return {"model": model, "suite": "agentkit", "category": "limits", "case": case, "trial": trial, "ok": ok,
            "label": label if not ok else None, "latency_ms": 1.0}


def test_the_report_says_when_models_ran_different_case_sets_and_offers_csv():
    report = Report([rec("a", "c1"), rec("a", "c2"), rec("b", "c1", ok=False, label="wrong_value")])
    text = report.to_markdown()
    assert "different case sets" in text and "a ran 1 case the others did not" in text
    rows = list(csv.DictReader(io.StringIO(report.to_csv())))
    assert [(r["model"], r["suite"], r["cases"], r["pass@1"]) for r in rows] == [
        ("a", "agentkit", "2", "1"), ("a", "all", "2", "1"), ("b", "agentkit", "1", "0"), ("b", "all", "1", "0")]
    same = Report([rec("a", "c1"), rec("b", "c1")]).to_markdown()
    assert "different case sets" not in same


def test_provider_errors_are_not_counted_as_the_models_mistakes():
    records = [rec("a", "c1"), rec("a", "c2", ok=False, label="provider_error"),
               rec("a", "c3", ok=False, label="wrong_value")]
    summary = Report(records).summary()["models"]["a"]
    assert summary["overall"] == {"cases": 2, "pass@1": 0.5}  # c1 passed, c3 failed; c2 was never scored
    assert summary["provider_errors"] == 1 and summary["cases_not_scored"] == 1
    assert summary["labels"] == {"wrong_value": 1}
    text = Report(records).to_markdown()
    assert "over the scored trials only" in text and "a 1 trial" in text
    assert "| a | 2 × 1 | 50.0% |" in text  # the noise floor counts the scored trials too


def test_report_csv_from_the_command_line(capsys, tmp_path):
    path = good_file(capsys, tmp_path)
    code, out, _ = run_cli(capsys, "report", str(path), "--csv")
    assert code == 0 and out.splitlines()[0].startswith("model,suite,category,cases,pass@1")


def test_two_files_that_give_one_label_two_configurations_are_refused(capsys, tmp_path):
    run_cli(capsys, "run", *SUITE, "--model", "oracle", "--out", str(tmp_path / "a"))
    run_cli(capsys, "run", *SUITE, "--model", "oracle", "--out", str(tmp_path / "b"), "--seed", "2")
    code, _, err = run_cli(capsys, "report", str(tmp_path / "a"), str(tmp_path / "b"))
    assert code == 2 and "different run configurations" in err and "seed" in err


# -- 4. a slow server: retries and timeouts are visible while they happen -----------------------------------

def test_bench_run_timeout_bounds_each_attempt_from_the_command_line(capsys, tmp_path):
    """--timeout holds in `bench run` (its clients are the runner's own): a trickling server ends in trials
    not scored, not in a hang. The outer bound only guards against a hang; nothing here measures time."""
    import threading

    from hostile_server import HostileServer

    outcome: list = []
    with HostileServer("body") as server:
        argv = ["run", "--suite", "agentkit:limits", "--limit", "1", "--provider", "openai-chat", "--model", "m",
                "--base-url", server.url, "--timeout", "0.5", "--max-retries", "0", "--no-progress",
                "--out", str(tmp_path)]
        worker = threading.Thread(target=lambda: outcome.append(main(argv)), daemon=True)
        worker.start()
        worker.join(60)
    assert not worker.is_alive(), "bench run did not end: --timeout did not bound the attempt"
    assert outcome == [0]
    records = read_records(tmp_path / "m.jsonl")
    assert [r["label"] for r in records] == ["provider_error"] and "timeout=0.5" in records[0]["detail"]
    err = capsys.readouterr().err
    assert "1 not scored" in err
    # the line says what to change, and that the same command then resumes
    (advice,) = [line for line in err.splitlines() if "ran out of time" in line]
    assert "raise --timeout (now 0.5 s per attempt, from when its request is sent)" in advice
    assert "lower --concurrency (now 8; 1 for a server that answers one request at a time)" in advice
    assert "resumes" in advice


def test_the_progress_line_shows_failed_attempts_timeouts_and_lost_trials(tmp_path):
    from hostile_server import HostileServer

    cases = load_cases("agentkit:limits", limit=1)
    bar = io.StringIO()
    with HostileServer("body") as server:
        make_model = HTTPModels("m", base_url=server.url, api_key="k", timeout=0.5, max_retries=1, backoff=0)
        summary = asyncio.run(run_benchmark(cases, make_model=make_model, progress={"file": bar, "mininterval": 0},
                                            out=tmp_path / "m.jsonl"))
    assert summary.errors == 1
    shown = bar.getvalue()
    assert "failed attempts=2" in shown and "timeouts=2" in shown and "not scored=1" in shown


# -- 5. keys never reach the results file -------------------------------------------------------------------

def planted_key() -> str:
    return "sk-" + "plant" + secrets.token_hex(20)


def test_a_server_that_echoes_the_key_cannot_put_it_into_the_results(tmp_path):
    key = planted_key()
    cases = load_cases("agentkit:limits", limit=2)

    def echo(request: httpx.Request) -> httpx.Response:
        heard = request.headers.get("authorization", "")
        content = (f"I heard {heard}; escaped {json.dumps(key)}; quoted {urllib.parse.quote(key)}; "
                   f"bytes {key.encode()!r}")
        return httpx.Response(200, json={"id": "c", "object": "chat.completion", "created": 1, "model": "m",
                                         "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                             "role": "assistant", "content": content}}]})

    model = HTTPModel("m", base_url="http://echo.test/v1", api_key=key, transport=httpx.MockTransport(echo))
    out = tmp_path / "m.jsonl"
    asyncio.run(run_benchmark(cases, model, out=out, progress=False, secrets=[key]))
    text = out.read_text(encoding="utf-8")
    assert "I heard" in text and key not in text and key[3:20] not in text
    report = Report.load(out, check_cases=False)
    assert key not in report.to_json() and key not in report.to_csv()


def test_a_key_in_the_environment_is_scrubbed_without_being_passed(tmp_path, monkeypatch):
    key = planted_key()
    monkeypatch.setenv("OPENAI_API_KEY", key)
    cases = load_cases("agentkit:limits", limit=1)

    def echo(request):
        return httpx.Response(500, json={"error": {"message": f"bad request from {key}"}})

    model = HTTPModel("m", base_url="http://echo.test/v1", api_key="", max_retries=0,
                      transport=httpx.MockTransport(echo))
    out = tmp_path / "m.jsonl"
    asyncio.run(run_benchmark(cases, model, out=out, progress=False))
    text = out.read_text(encoding="utf-8")
    assert "provider_error" in text and key not in text


# -- 6. a cut or edited cassette ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def cassette(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tape")
    assert main(["run", *SUITE, "--model", "oracle", "--out", str(folder / "out"),
                 "--record", str(folder / "tape.yaml")]) == 0
    return (folder / "tape.yaml").read_text(encoding="utf-8")


EDITS = {
    "cut in half": lambda t: t[: len(t) // 2],
    "cut near the end": lambda t: t[: len(t) - 40],
    "no status code": lambda t: t.replace("code: 200", "code: two hundred", 1),
    "no interactions": lambda t: t.replace("interactions:", "exchanges:", 1),
    "not yaml": lambda t: "interactions: [\n" + t,
    "empty": lambda t: "",
    "binary": lambda t: "\udcff",
}


@pytest.mark.parametrize("edit", list(EDITS))
def test_a_cut_or_edited_cassette_ends_in_one_line(capsys, tmp_path, cassette, edit):
    tape = tmp_path / "tape.yaml"
    tape.write_bytes(EDITS[edit](cassette).encode("utf-8", "surrogateescape"))
    code, _, err = run_cli(capsys, "run", *SUITE, "--model", "oracle", "--out", str(tmp_path / "out"),
                           "--replay", str(tape))
    assert code in (1, 2), err
    last = err.strip().splitlines()[-1]
    assert str(tape) in last and ("record it again" in last or "recording has no answer" in last), err


def test_a_server_that_echoes_the_key_cannot_put_it_into_the_cassette_either(tmp_path):
    from agentkit.bench.record import recording

    key = planted_key()
    cases = load_cases("agentkit:limits", limit=1)

    def echo(request: httpx.Request) -> httpx.Response:
        heard = request.headers.get("authorization", "")
        return httpx.Response(200, headers={"x-echo": heard}, json={
            "id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": [
                {"index": 0, "finish_reason": "stop", "message": {
                    "role": "assistant", "content": f"I heard {heard}, {urllib.parse.quote(key)}"}}]})

    model = HTTPModel("m", base_url="http://echo.test/v1", api_key=key, transport=httpx.MockTransport(echo))
    tape, out = tmp_path / "tape.yaml", tmp_path / "m.jsonl"
    with recording(tape, secrets=[key]):
        asyncio.run(run_benchmark(cases, model, out=out, progress=False, secrets=[key]))
    import yaml

    stored = yaml.safe_load(tape.read_text(encoding="utf-8"))["interactions"]  # bodies may be stored as bytes
    bodies = [i["response"]["body"]["string"] for i in stored]
    tape_text = json.dumps(stored, default=str) + "".join(
        b.decode("utf-8") if isinstance(b, bytes) else b for b in bodies)
    for name, text in (("cassette", tape_text), ("results", out.read_text(encoding="utf-8"))):
        assert "I heard" in text and key not in text and urllib.parse.quote(key) not in text, name
