"""The kit as someone installs it into their own project: a wheel built from this source, installed into a
fresh virtual environment outside the checkout, carries everything its features read at run time.

uv (installed in the development venv with the kit) builds the wheel from a copy of the source and makes
the venv; the dependencies come from uv's cache (or the package index, the first time).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from test_own_project import env_without_provider, own_code_snippet

ROOT = Path(__file__).resolve().parent.parent
UV = Path(sys.executable).parent / "uv"

pytestmark = pytest.mark.skipif(not UV.exists(), reason="uv is installed in the venv by `make venv`")


def _uv(*args: str, cwd: Path) -> None:
    result = subprocess.run([str(UV), *args], cwd=cwd, capture_output=True, text=True, timeout=600,
                            env={**os.environ, "UV_PYTHON_DOWNLOADS": "never"})
    assert result.returncode == 0, result.stderr[-3000:]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(python, work dir): a fresh venv outside the checkout with the built wheel and its bench extra."""
    base = tmp_path_factory.mktemp("wheel")
    source = base / "source"  # a copy, so the build writes nothing into the checkout
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "agentkit", source / "agentkit",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    _uv("build", "--wheel", "--quiet", "--out-dir", str(base / "dist"), str(source), cwd=base)
    wheel = next((base / "dist").glob("agentkit_lab-*.whl"))
    _uv("venv", "--quiet", "--python", sys.executable, str(base / "venv"), cwd=base)
    python = base / "venv" / "bin" / "python"
    _uv("pip", "install", "--quiet", "--python", str(python), f"agentkit-lab[bench] @ {wheel.as_uri()}", cwd=base)
    work = base / "project"
    work.mkdir()
    return python, work, wheel


def _run(installed, *argv: str, **env: str) -> subprocess.CompletedProcess:
    python, work, _ = installed
    result = subprocess.run([str(python), *argv], cwd=work, capture_output=True, text=True, timeout=300,
                            env=env_without_provider(**env))
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def test_every_file_of_the_package_ships_in_the_wheel(installed):
    """Data beside the code (agentkit/data/, any .toml / .json / .jsonl) is package data, not left behind."""
    shipped = set(zipfile.ZipFile(installed[2]).namelist())
    package = [path.relative_to(ROOT).as_posix() for path in (ROOT / "agentkit").rglob("*")
               if path.is_file() and "__pycache__" not in path.parts and not path.name.startswith(".")]
    assert [name for name in package if name not in shipped] == []


def test_the_installed_kit_is_the_wheel_not_the_checkout(installed):
    location = _run(installed, "-c", "import agentkit; print(agentkit.__file__)").stdout.strip()
    assert "site-packages" in location and not Path(location).is_relative_to(ROOT)


def test_bench_suites_lists_the_kits_own_suite_from_the_wheel(installed):
    out = _run(installed, "-m", "agentkit.bench", "suites").stdout
    for category in ("multi_step", "error_recovery", "strict_schema", "limits"):
        assert f"agentkit:{category}  (" in out


def test_a_bench_run_on_the_simulator_from_the_wheel(installed):
    _, work, _ = installed
    _run(installed, "-m", "agentkit.bench", "run", "--suite", "agentkit:limits", "--provider", "sim",
         "--model", "oracle", "--limit", "2", "--out", "results")
    lines = (work / "results" / "oracle.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2


def test_agentkit_run_and_the_fixtures_from_the_wheel(installed):
    out = _run(installed, "-c", textwrap.dedent("""\
        import agentkit
        from agentkit import sim
        from agentkit.fixtures import load_fixtures

        print(len(load_fixtures().cases) > 0)
        with sim.serve() as server:
            model = agentkit.HTTPModel("sim-reasoner", "gemini", base_url=server.base_url("gemini"))
            print(agentkit.run(model, "What is 2 + 3?").stop_reason)
        """)).stdout
    assert out.split() == ["True", "final_answer"]


def test_the_readmes_own_code_snippet_from_the_wheel(installed, server):
    _, work, _ = installed
    (work / "my_agent.py").write_text(own_code_snippet(), encoding="utf-8")
    out = _run(installed, "my_agent.py", AGENTKIT_BASE_URL=server.base_url("openai-chat")).stdout
    assert "Tokyo: sunny" in out and "\nfinal_answer\n" in out
