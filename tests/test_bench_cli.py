"""python -m agentkit.bench: one-line errors with exit codes, and a run + report end to end on the simulator."""

from __future__ import annotations

import json
import subprocess
import sys


from agentkit.bench import bfcl
from agentkit.bench.__main__ import main


def fails(capsys, *argv, code=2):
    assert main(list(argv)) == code
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and err.splitlines()[-1].startswith(("agentkit.bench: ", "python -m agentkit.bench"))
    return err.splitlines()[-1]


def test_help_lists_the_commands():
    done = subprocess.run([sys.executable, "-m", "agentkit.bench", "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and "{run,fetch,report,suites}" in done.stdout and "{seed}" in done.stdout
    assert "ollama" in " ".join(done.stdout.split())  # every wire format --provider takes
    done = subprocess.run([sys.executable, "-m", "agentkit.bench", "run", "--help"], capture_output=True, text=True)
    assert "--record FILE" in done.stdout and "--replay FILE" in done.stdout and "--shard" in done.stdout


def test_an_unknown_suite_or_category_is_one_line(capsys):
    assert "unknown suite 'bfcll'" in fails(capsys, "run", "--suite", "bfcll", "--provider", "sim")
    assert "unknown agentkit category 'speed'" in fails(capsys, "run", "--suite", "agentkit:speed",
                                                        "--provider", "sim")


def test_data_not_fetched_says_the_command(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("AGENTKIT_CACHE", str(tmp_path))
    err = fails(capsys, "run", "--suite", "bfcl:simple_python", "--provider", "sim")
    assert "python -m agentkit.bench fetch bfcl" in err


def test_a_missing_key_names_the_variable(capsys, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    err = fails(capsys, "run", "--suite", "agentkit:limits", "--provider", "claude")
    assert "no API key for anthropic: set ANTHROPIC_API_KEY" in err


def test_an_unreachable_server_stops_the_run(capsys, tmp_path):
    err = fails(capsys, "run", "--suite", "agentkit:limits", "--provider", "openai-chat", "--base-url",
                "http://127.0.0.1:9/v1", "--model", "x", "--max-retries", "0", "--out", str(tmp_path),
                "--no-progress", code=1)
    assert "cannot reach the server" in err


def test_bad_options_are_one_line(capsys, tmp_path):
    assert "unknown provider 'nope'" in fails(capsys, "run", "--suite", "agentkit", "--provider", "nope")
    assert "--shard: '3/2'" in fails(capsys, "run", "--suite", "agentkit", "--provider", "sim", "--shard", "3/2")
    assert "no recording at" in fails(capsys, "run", "--suite", "agentkit", "--provider", "sim", "--replay",
                                      str(tmp_path / "none.yaml"))
    assert "no results at" in fails(capsys, "report", str(tmp_path / "nothing"))


def test_run_record_replay_and_report_end_to_end(capsys, tmp_path):
    bfcl.fetch()
    out, tape = tmp_path / "results", tmp_path / "tape.yaml"
    common = ["--suite", "bfcl:simple_python,agentkit:error_recovery", "--provider", "sim", "--limit", "3",
              "--no-progress"]
    assert main(["run", *common, "--model", "oracle", "--out", str(out)]) == 0
    assert "| **all** | | 6 | 100.0 % |" in capsys.readouterr().out
    assert main(["run", *common, "--model", "sim-noisy-{seed}", "--trials", "2", "--out", str(out),
                 "--record", str(tape)]) == 0
    recorded = capsys.readouterr().out
    assert main(["run", *common, "--model", "sim-noisy-{seed}", "--trials", "2", "--out", str(tmp_path / "again"),
                 "--replay", str(tape)]) == 0
    replayed = capsys.readouterr().out
    assert sorted(p.name for p in out.glob("*.jsonl")) == ["oracle.jsonl", "sim-noisy-seed.jsonl"]
    table = [line for line in recorded.splitlines() if line.startswith("| ")][:5]
    assert table == [line for line in replayed.splitlines() if line.startswith("| ")][:5]
    assert "Replayed from a recording" in replayed

    assert main(["run", *common, "--model", "oracle", "--out", str(out)]) == 0  # resumes: nothing left to run
    assert "0 run, 6 already done" in capsys.readouterr().err

    assert main(["report", str(out), "--json", "--charts", str(tmp_path / "charts")]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data["models"]) == {"oracle", "sim-noisy-{seed}"}
    assert data["models"]["oracle"]["overall"]["pass@1"] == 1.0
    assert data["models"]["sim-noisy-{seed}"]["trials"] == 2
    assert sorted(p.name for p in (tmp_path / "charts").iterdir()) == ["accuracy.png", "labels.png", "latency.png"]


def test_suites_lists_both_suites(capsys):
    assert main(["suites"]) == 0
    text = capsys.readouterr().out
    assert "bfcl:live_parallel_multiple" in text and "agentkit:strict_schema  (16 cases)" in text


def test_no_command_prints_help_and_a_bad_choice_is_one_line(capsys):
    assert main([]) == 2 and "usage:" in capsys.readouterr().out
    assert "invalid choice: 'nope'" in fails(capsys, "fetch", "nope")


def test_recording_onto_a_cassette_cut_short_is_one_line(capsys, tmp_path):
    cut = tmp_path / "cut.yaml"
    cut.write_text("interactions:\n- request:\n    body: null\n    headers: {}\n    method: POST\n    uri: http://x/v1\n"
                   "  respo")
    err = fails(capsys, "run", "--suite", "agentkit:limits", "--limit", "1", "--provider", "sim", "--model", "oracle",
                "--record", str(cut), "--no-progress", "--out", str(tmp_path))
    assert "is not valid YAML at line" in err and "move it away" in err


def test_report_on_a_file_that_is_not_results_is_one_line(capsys, tmp_path):
    other = tmp_path / "notes.txt"
    other.write_text("hello\nworld\nthree lines\n")
    assert main(["report", str(other)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no results in" in err[0] and "3 line(s)" in err[0]


def test_ctrl_c_at_any_moment_of_the_first_second_is_one_line_and_exit_130(tmp_path):
    """From the kit's first import on (the interpreter's own start, before any of the kit runs, is Python's):
    SIGINT gives the command's one line and 130, also while it is still loading."""
    import signal
    import time

    outcomes = []
    for delay in (0.15, 0.3, 0.45, 0.6, 0.8, 1.0):
        process = subprocess.Popen([sys.executable, "-m", "agentkit.bench", "run", "--suite", "agentkit:limits",
                                    "--provider", "sim", "--model", "sim-reasoner", "--no-progress", "--out",
                                    str(tmp_path / f"r{delay}")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True)
        time.sleep(delay)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
        outcomes.append((delay, process.returncode, err.strip().splitlines()))
    for delay, code, lines in outcomes:
        said = "\n".join(lines)
        if code == 0:  # it finished first (a fast machine): nothing to interrupt
            continue
        if code != 130 and "/agentkit/" not in said:  # a busy machine: still in Python's own start, before the kit
            continue
        assert code == 130 and "Traceback" not in said, (delay, code, lines)
        assert lines[-1].startswith("agentkit.bench: interrupted"), (delay, lines)
    assert any(code == 130 for _, code, _ in outcomes)


def test_the_temperature_is_bfcls_by_default_and_can_be_changed_or_left_out(capsys, tmp_path):
    from agentkit.bench.results import read_results

    for flag, expected in (((), {"temperature": 0.001}), (("--temperature", "0.5"), {"temperature": 0.5}),
                           (("--temperature", "none"), {})):
        out = tmp_path / "".join(flag).replace(".", "_") or "default"
        assert main(["run", "--suite", "agentkit:limits", "--limit", "1", "--provider", "sim", "--model", "oracle",
                     "--no-progress", "--out", str(out), *flag]) == 0
        capsys.readouterr()
        (results,) = out.iterdir()
        assert read_results(results).runs[0]["generation"] == expected
    assert "--temperature" in fails(capsys, "run", "--suite", "agentkit", "--provider", "sim", "--temperature", "hot")
