"""The format x fault matrix and the fault proxy, on the simulator (agentkit.bench.matrix, .faultproxy)."""

from __future__ import annotations

import asyncio
import json

import pytest

from agentkit import sim
from agentkit.bench import matrix
from agentkit.bench.__main__ import main
from agentkit.bench.faultproxy import fault_proxy
from agentkit.bench.oracle import serve_with_oracle
from agentkit.bench.report import Report
from agentkit.bench.suites import load_cases
from agentkit.core.errors import ProviderError
from agentkit.core.types import Message
from agentkit.http import HTTPModel

FORMATS = ["openai-chat", "anthropic"]


@pytest.fixture(scope="module")
def cases():
    return load_cases("agentkit:error_recovery", limit=2)


def test_formats_and_faults_are_read_and_bad_ones_refused():
    assert matrix.parse_formats("chat, responses,claude,ollama,chat") == [
        "openai-chat", "openai-responses", "anthropic", "ollama"]
    assert matrix.parse_faults("none,429,503+flaky3,instream=503") == [
        ("none", None), ("429", "429, flaky=1"), ("503+flaky3", "503, flaky3"),
        ("instream=503", "instream=503, flaky=1")]
    for bad in ("chat,telnet", ""):
        with pytest.raises(ValueError, match="--formats"):
            matrix.parse_formats(bad)
    for bad in ("429,zap", "", "429,429", "instream=404"):
        with pytest.raises(ValueError, match="--faults"):
            matrix.parse_faults(bad)


def test_the_cli_refuses_a_bad_value_in_one_line(capsys):
    for flags in (["--formats", "chat,telnet"], ["--faults", "none,zap"], ["--faults", "429", "--shard", "1/2"]):
        assert main(["run", "--suite", "agentkit:error_recovery", "--provider", "sim", *flags]) == 2
        err = capsys.readouterr().err
        assert err.startswith("agentkit.bench: error: --") and err.count("\n") == 1


def run(cases, **options):
    return asyncio.run(matrix.run_matrix(cases, "oracle", formats=FORMATS, backoff=0.0, **options))


def test_a_recovered_fault_keeps_the_score_and_costs_one_retry_per_call(cases, tmp_path):
    faults = matrix.parse_faults("none,429,badjson,503+flaky3")
    records = run(cases, faults=faults, out=tmp_path / "m.jsonl")
    cells = {(c["format"], c["fault"]): c for c in matrix.summary(records)["cells"]}
    assert len(cells) == len(FORMATS) * len(faults)
    for fmt in FORMATS:
        clean, calls = cells[(fmt, "none")], cells[(fmt, "none")]["attempts"]
        assert clean["pass@1"] == 1.0 and clean["retries"] == clean["wasted"] == 0
        for fault in ("429", "badjson"):  # the first attempt of every call fails, the retry succeeds
            cell = cells[(fmt, fault)]
            assert cell["pass@1"] == 1.0 and cell["tokens"] == clean["tokens"]
            assert cell["retries"] == cell["wasted"] == calls and cell["attempts"] == 2 * calls
        lost = cells[(fmt, "503+flaky3")]  # three failing attempts, two retries: never recovers
        assert lost["pass@1"] == 0.0 and lost["provider_errors"] == lost["trials"]
        assert lost["retries_per_solved"] is None
    spread = matrix.summary(records)["spread"]
    assert spread["formats"] == 0.0 and spread["faults"] == {fmt: 1.0 for fmt in FORMATS}
    section = Report(records).to_markdown(latency=False)
    assert "## Formats × faults" in section and "| anthropic | 503+flaky3 | 0.0% |" in section


def test_an_interrupted_matrix_resumes_without_running_finished_cells_again(cases, tmp_path):
    out = tmp_path / "m.jsonl"
    faults = matrix.parse_faults("none,429")
    first = asyncio.run(matrix.run_matrix(cases, "oracle", formats=FORMATS[:1], faults=faults, out=out, backoff=0.0))
    lines = out.read_text().splitlines()
    out.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:20])  # the last record cut short, as by a crash
    again = asyncio.run(matrix.run_matrix(cases, "oracle", formats=FORMATS[:1], faults=faults, out=out, backoff=0.0))
    assert sorted(json.dumps(r, sort_keys=True) for r in again if r["fault"] == "none") == \
        sorted(json.dumps(r, sort_keys=True) for r in first if r["fault"] == "none")
    kept = [json.loads(line) for line in out.read_text().splitlines() if line.startswith("{") and line.endswith("}")]
    assert len(kept) == len(first)  # the lost record was run again, nothing else


@pytest.mark.parametrize("fmt", ["openai-chat", "anthropic", "gemini", "ollama", "openai-responses", "openrouter"])
def test_the_fault_proxy_breaks_a_real_server_as_the_simulator_breaks_itself(fmt):
    question = [Message("user", "What is the weather in Paris?")]

    def client_view(base_url, fault, stream):
        model = HTTPModel("sim-reasoner", fmt, base_url=base_url, api_key="k", max_retries=1, backoff=0.0,
                          headers={"x-sim-fault": fault})
        try:
            list(model.stream(question)) if stream else model.complete(question)
            outcome = "answered"
        except ProviderError as exc:
            outcome = f"{type(exc).__name__} {exc.status}"
        return outcome, [(a.status, a.error, a.error_type) for a in model.last_attempts]

    with sim.serve() as faulty, sim.serve(faults=False) as healthy, \
            fault_proxy(healthy.base_url(fmt), fmt) as proxy:
        for fault in ("429", "529", "drop", "truncate", "cut", "instream", "badjson", "503, flaky=1"):
            for stream in (False, True):
                direct = client_view(faulty.base_url(fmt), fault, stream)
                proxied = client_view(proxy.base_url, fault, stream)
                faulty.reset()
                proxy.reset()
                assert proxied == direct, (fault, stream)
        assert client_view(proxy.base_url, "", False)[0] == "answered"  # no fault asked: passed through


def test_a_real_url_gets_the_same_matrix_through_the_fault_proxy(cases):
    faults = matrix.parse_faults("none,429,cut")
    direct = matrix.summary(run(cases, faults=faults))["cells"]
    with serve_with_oracle(cases, faults=False) as healthy:  # a server that ignores x-sim-fault, like a real one
        proxied = matrix.summary(run(cases, faults=faults, base_url=healthy.url, api_key="k", simulator=False))["cells"]
    assert proxied == direct


def test_the_cli_runs_the_matrix_and_report_shows_it(tmp_path, capsys):
    argv = ["run", "--suite", "agentkit:error_recovery", "--limit", "1", "--provider", "sim", "--model", "oracle",
            "--formats", "chat,ollama", "--faults", "none,429=1", "--no-progress", "--out", str(tmp_path)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "| ollama | 429=1 | 100.0% | 1 / 1 |" in printed
    assert main(["report", str(tmp_path / "oracle.matrix.jsonl"), "--charts", str(tmp_path / "charts")]) == 0
    assert "## Formats × faults" in capsys.readouterr().out
    assert (tmp_path / "charts" / "formats_faults.png").stat().st_size > 0


def test_a_broken_stream_is_retried_inside_the_loop_but_not_once_a_caller_has_seen_it(cases):
    records = run(cases, faults=matrix.parse_faults("none,cut,instream,badjson"), stream=True)
    cells = {(c["format"], c["fault"]): c for c in matrix.summary(records)["cells"]}
    for (fmt, fault), cell in cells.items():
        calls = cells[(fmt, "none")]["attempts"]
        assert cell["pass@1"] == 1.0 and cell["retries"] == (0 if fault == "none" else calls)
    with sim.serve() as server:  # a caller that watches the events: the first one arrived, no retry is possible
        model = HTTPModel("sim-reasoner", "openai-chat", base_url=server.base_url("openai-chat"), api_key="k",
                          backoff=0.0, headers={"x-sim-fault": "cut, flaky=1"})
        with pytest.raises(ProviderError):
            list(model.stream([Message("user", "What is the weather in Paris?")]))
        assert len(model.last_attempts) == 1


def test_every_trial_meets_the_same_faults(cases):
    records = run(cases[:1], faults=matrix.parse_faults("429=1"), trials=3)
    for fmt in FORMATS:
        mine = sorted((r for r in records if r["format"] == fmt), key=lambda r: r["trial"])
        assert [r["trial"] for r in mine] == [0, 1, 2]
        assert len({(r["attempts"], r["retries"], r["failed_attempts"]) for r in mine}) == 1
        assert mine[0]["retries"] > 0 and all(r["ok"] for r in mine)
