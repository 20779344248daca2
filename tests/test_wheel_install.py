"""The kit as someone installs it into their own project: a wheel built from this source, installed into a
fresh virtual environment outside the checkout, carries everything its features read at run time.

uv (installed in the development venv with the kit) builds the wheel from a copy of the source and makes
the venv; the dependencies come from uv's cache (or the package index, the first time).
"""

from __future__ import annotations

import json
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
def wheel(tmp_path_factory) -> Path:
    """The wheel, built from a copy of the source, so the build writes nothing into the checkout."""
    base = tmp_path_factory.mktemp("wheel")
    source = base / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "agentkit", source / "agentkit",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    _uv("build", "--wheel", "--quiet", "--out-dir", str(base / "dist"), str(source), cwd=base)
    return next((base / "dist").glob("agentkit_lab-*.whl"))


def _fresh_venv(tmp_path_factory, requirement: str) -> tuple[Path, Path]:
    """(python, an empty project folder): a new venv outside the checkout with `requirement` installed."""
    base = tmp_path_factory.mktemp("venv")
    _uv("venv", "--quiet", "--python", sys.executable, str(base / "venv"), cwd=base)
    python = base / "venv" / "bin" / "python"
    _uv("pip", "install", "--quiet", "--python", str(python), requirement, cwd=base)
    (base / "project").mkdir()
    return python, base / "project"


@pytest.fixture(scope="module")
def installed(tmp_path_factory, wheel):
    """The base install: `pip install agentkit-lab` with no extra."""
    return _fresh_venv(tmp_path_factory, f"agentkit-lab @ {wheel.as_uri()}")


@pytest.fixture(scope="module")
def with_bench(tmp_path_factory, wheel):
    """The install with the bench extra (progress bars, record / replay)."""
    return _fresh_venv(tmp_path_factory, f"agentkit-lab[bench] @ {wheel.as_uri()}")


def _run(installed, *argv: str, check: bool = True, **env: str) -> subprocess.CompletedProcess:
    python, work = installed
    result = subprocess.run([str(python), *argv], cwd=work, capture_output=True, text=True, timeout=300,
                            env=env_without_provider(**env))
    if check:
        assert result.returncode == 0, result.stderr[-3000:]
    return result


def test_every_file_of_the_package_ships_in_the_wheel(wheel):
    """Data beside the code (agentkit/data/, any .toml / .json / .jsonl) is package data, not left behind."""
    shipped = set(zipfile.ZipFile(wheel).namelist())
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


def test_a_bench_run_on_the_simulator_from_the_wheel(with_bench):
    _, work = with_bench
    _run(with_bench, "-m", "agentkit.bench", "run", "--suite", "agentkit:limits", "--provider", "sim",
         "--model", "oracle", "--limit", "2", "--out", "results")
    lines = (work / "results" / "oracle.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1 + 2  # the run's configuration, then one record per case
    assert sorted(json.loads(line).get("ok") for line in lines[1:]) == [True, True]


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
    _, work = installed
    (work / "my_agent.py").write_text(own_code_snippet(), encoding="utf-8")
    out = _run(installed, "my_agent.py", AGENTKIT_BASE_URL=server.base_url("openai-chat")).stdout
    assert "Tokyo: sunny" in out and "\nfinal_answer\n" in out and "[running get_weather]" in out
    assert "Paris: sunny" in out and out.rstrip().endswith("Osaka: sunny, 22°C")


@pytest.mark.parametrize("argv, extra", [
    (["-m", "agentkit.bench", "run", "--suite", "agentkit:limits", "--provider", "sim", "--model", "oracle"], "bench"),
    (["-m", "agentkit.mcp", "tools", "http://127.0.0.1:9/mcp"], "mcp"),
    (["-c", "from agentkit import viz; viz.pyplot()"], "viz"),
])
def test_the_base_install_names_the_extra_a_feature_needs_in_one_line(installed, argv, extra):
    result = _run(installed, *argv, check=False)
    assert result.returncode != 0 and f"pip install 'agentkit-lab[{extra}]'" in result.stderr
    if argv[0] == "-m":  # a command line: one line, no traceback
        assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
