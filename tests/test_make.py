"""`make lab` / `make test` from nothing: each install phase says what it does before it runs, the
installer shows its own progress, and `make test` schedules its longest files first and names each file as
it starts. Checked from `make -n` (what make would run) and the conftest's ordering, without running them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

import conftest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def dry_run(*targets: str) -> list[str]:
    """The commands `make -B -n` would run for a build from nothing (every target remade)."""
    out = subprocess.run(["make", "-B", "-n", *targets], cwd=ROOT, capture_output=True, text=True, check=True)
    return out.stdout.splitlines()


def test_every_install_step_of_a_first_run_is_announced_and_uv_shows_its_progress():
    lines = dry_run("lab")
    installs = [i for i, line in enumerate(lines) if "-m venv" in line or "pip install" in line]
    assert len(installs) == 3
    for i in installs:  # each install step comes right after its phase line (and the lines that go on with it)
        start = i - 1
        while lines[start].startswith('echo "    '):
            start -= 1
        assert lines[start].startswith('echo "==>'), lines[start]
    compile_step = installs[-1]  # uv is silent while it compiles bytecode: said before it starts
    assert any("compiles" in line for line in lines[compile_step - 3:compile_step])
    assert all("--quiet" not in lines[i] and " -q " not in lines[i] for i in installs)
    url_hint = next(i for i, line in enumerate(lines) if "URL" in line and line.startswith("echo"))
    assert url_hint < next(i for i, line in enumerate(lines) if "jupyter lab" in line)


def test_make_test_names_each_file_as_it_starts_on_two_workers_by_file():
    command = next(line for line in dry_run("test") if "pytest" in line and "AGENTKIT_FILE_PROGRESS=1" in line)
    assert "-n 2" in command and "--dist loadfile" in command
    assert "--no-loadscope-reorder" in command  # else xdist reorders files by their number of tests


def test_the_slowest_files_list_names_files_that_exist_longest_first():
    listed = [line.split() for line in conftest.SLOWEST_FILES.read_text(encoding="utf-8").splitlines()
              if line.strip() and not line.startswith("#")]
    assert listed, "tests/slowest_files.txt is empty: run `make test-durations`"
    assert [name for _, name in listed if not (ROOT / name).exists()] == []
    seconds = [float(s) for s, _ in listed]
    assert seconds == sorted(seconds, reverse=True)


def test_collection_puts_the_listed_files_first_in_the_lists_order_and_keeps_the_rest():
    rank = conftest._slowest_first()
    slow, slower = sorted(rank, key=rank.get)[1], sorted(rank, key=rank.get)[0]
    names = ["tests/test_a.py::x", f"{slow}::one", "tests/test_b.py::y", f"{slower}::two", f"{slow}::three"]
    items = [SimpleNamespace(nodeid=name) for name in names]
    conftest.pytest_collection_modifyitems(None, items)
    assert [item.nodeid for item in items] == [f"{slower}::two", f"{slow}::one", f"{slow}::three",
                                               "tests/test_a.py::x", "tests/test_b.py::y"]
