"""Each optional feature works from the base install or stops with one line naming the extra to install.

A missing package is simulated by a `sitecustomize` that puts None into sys.modules for it (Python then
refuses `import tqdm` with ModuleNotFoundError, exactly as when it is not installed), so these tests run
in the full development venv.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from agentkit.core.errors import MissingExtra


def _run_without(tmp_path, missing: list[str], *argv: str) -> subprocess.CompletedProcess:
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(textwrap.dedent(f"""\
        import sys
        for name in {missing!r}:
            sys.modules[name] = None
        """))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, *argv], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)


def _one_line_naming(result: subprocess.CompletedProcess, extra: str) -> None:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"agentkit-lab[{extra}]" in lines[0]


def test_bench_run_without_tqdm_names_the_bench_extra(tmp_path):
    result = _run_without(tmp_path, ["tqdm"], "-m", "agentkit.bench", "run", "--suite", "agentkit:limits",
                          "--provider", "sim", "--model", "oracle", "--limit", "1", "--out", str(tmp_path / "out"))
    _one_line_naming(result, "bench")


def test_bench_record_without_vcrpy_names_the_bench_extra(tmp_path):
    result = _run_without(tmp_path, ["vcr"], "-m", "agentkit.bench", "run", "--suite", "agentkit:limits",
                          "--provider", "sim", "--model", "oracle", "--limit", "1", "--out", str(tmp_path / "out"),
                          "--record", str(tmp_path / "tape.yaml"))
    _one_line_naming(result, "bench")


def test_mcp_command_without_the_sdk_names_the_mcp_extra(tmp_path):
    result = _run_without(tmp_path, ["mcp", "mcp_types"], "-m", "agentkit.mcp", "tools", "http://127.0.0.1:9/mcp")
    _one_line_naming(result, "mcp")


def test_the_simulator_and_the_loop_need_no_extra(tmp_path):
    blocked = ["tqdm", "vcr", "mcp", "mcp_types", "matplotlib", "ipywidgets", "IPython"]
    result = _run_without(tmp_path, blocked, "-c", textwrap.dedent("""\
        import agentkit
        from agentkit import sim
        with sim.serve() as server:
            model = agentkit.HTTPModel("sim-reasoner", "openai-chat", base_url=server.base_url("openai-chat"),
                                       api_key="sim-key")
            print(agentkit.run(model, "What is 2 + 3?").stop_reason)
        """))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "final_answer"


@pytest.mark.parametrize("missing, extra, use", [
    ("matplotlib", "viz", lambda: __import__("agentkit.viz", fromlist=["pyplot"]).pyplot()),
    ("ipywidgets", "widgets", lambda: __import__("agentkit.widgets", fromlist=["x"]).playground(print, n=(0, 3))),
])
def test_charts_and_playgrounds_without_their_package_name_their_extra(monkeypatch, missing, extra, use):
    monkeypatch.setitem(sys.modules, missing, None)
    with pytest.raises(MissingExtra, match=rf"pip install 'agentkit-lab\[{extra}\]'") as caught:
        use()
    assert isinstance(caught.value, ImportError) and "\n" not in str(caught.value)
