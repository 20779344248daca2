"""Every command-line flag with a bad value exits 2 with one line on stderr, never a traceback.

Checked for all three commands: `python -m agentkit.bench`, `python -m agentkit.sim` and `python -m agentkit.mcp`.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from agentkit.bench.__main__ import main as bench_main
from agentkit.sim.__main__ import main as sim_main

RUN = ["run", "--suite", "agentkit:limits", "--limit", "1", "--provider", "sim", "--no-progress"]


def one_line_exit_2(capsys, call, argv) -> str:
    try:
        code = call(argv)
    except SystemExit as exit_:
        code = exit_.code
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err.strip()


@pytest.mark.parametrize("flag, value, words", [
    ("--timeout", "0", "--timeout"), ("--timeout", "-5", "--timeout"), ("--timeout", "nan", "--timeout"),
    ("--timeout", "inf", "--timeout"), ("--timeout", "soon", "--timeout"),
    ("--max-retries", "-1", "--max-retries"), ("--max-retries", "1.5", "--max-retries"),
    ("--rpm", "0", "--rpm"), ("--rpm", "-5", "--rpm"), ("--rpm", "nan", "--rpm"),
    ("--sim-latency-ms", "-1", "--sim-latency-ms"), ("--sim-latency-ms", "99999999999", "60000"),
    ("--trials", "0", "--trials"), ("--trials", "x", "--trials"), ("--concurrency", "0", "--concurrency"),
    ("--limit", "-3", "--limit"), ("--price-in", "-1", "--price-in"), ("--price-out", "nan", "--price-out"),
    ("--seed", "1.5", "--seed"), ("--shard", "3/2", "--shard"), ("--shard", "0/0", "--shard"),
    ("--base-url", "notaurl", "--base-url"), ("--base-url", "ftp://x/v1", "--base-url"),
    ("--base-url", "http://:80/v1", "--base-url"), ("--base-url", "http://h:port/v1", "--base-url"),
])
def test_bench_run_refuses_a_bad_value_in_one_line(capsys, tmp_path, flag, value, words):
    err = one_line_exit_2(capsys, bench_main, [*RUN, "--out", str(tmp_path), flag, value])
    assert err.startswith("python -m agentkit.bench") or err.startswith("agentkit.bench")
    assert words in err


def test_out_naming_a_file_is_refused(capsys, tmp_path):
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine")
    err = one_line_exit_2(capsys, bench_main, [*RUN, "--out", str(a_file)])
    assert "--out" in err and "not a folder" in err
    assert a_file.read_text() == "mine"


def test_a_results_path_that_is_a_directory_is_refused(capsys, tmp_path):
    (tmp_path / "sim-reasoner.jsonl").mkdir()
    err = one_line_exit_2(capsys, bench_main, [*RUN, "--out", str(tmp_path)])
    assert "sim-reasoner.jsonl" in err and "folder" in err


@pytest.mark.parametrize("flag", ["--record", "--replay"])
def test_a_cassette_path_that_is_a_directory_is_refused(capsys, tmp_path, flag):
    err = one_line_exit_2(capsys, bench_main, [*RUN, "--out", str(tmp_path), flag, str(tmp_path)])
    assert flag in err and "folder" in err


def test_report_flags(capsys, tmp_path):
    a_file = tmp_path / "x.png"
    a_file.write_text("")
    assert "--price-in" in one_line_exit_2(capsys, bench_main, ["report", str(tmp_path), "--price-in", "-2"])
    assert "--charts" in one_line_exit_2(capsys, bench_main, ["report", str(tmp_path), "--charts", str(a_file)])


def test_an_unknown_flag_or_choice_is_one_line_too(capsys):
    assert "--nope" in one_line_exit_2(capsys, bench_main, [*RUN, "--nope"])
    assert "nope" in one_line_exit_2(capsys, bench_main, ["fetch", "nope"])


@pytest.mark.parametrize("argv, words", [
    (["--port", "-1"], "--port"), (["--port", "70000"], "--port"), (["--port", "x"], "--port"),
    (["--max-body-bytes", "-5"], "--max-body-bytes"), (["--max-body-bytes", "0"], "--max-body-bytes"),
    (["--faults", "garbage"], "unknown fault 'garbage'"), (["--faults", "slow=99999999"], "cap"),
])
def test_sim_refuses_a_bad_value_in_one_line(capsys, argv, words):
    assert words in one_line_exit_2(capsys, sim_main, argv)


@pytest.mark.parametrize("argv, words", [
    (["tools", "--timeout", "nan", "x"], "--timeout"), (["tools", "--timeout", "-1", "x"], "--timeout"),
    (["serve", "--http", "-1", "a:b"], "--http"), (["serve", "--http", "port", "a:b"], "--http"),
])
def test_mcp_refuses_a_bad_value_in_one_line(argv, words):
    done = subprocess.run([sys.executable, "-m", "agentkit.mcp", *argv], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and words in done.stderr
