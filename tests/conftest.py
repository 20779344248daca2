"""Shared test setup: the Hypothesis profile (see profiles.py) is chosen before any test module loads."""

import os
from collections import defaultdict
from pathlib import Path

import pytest
from hypothesis import settings

from profiles import PROFILE

settings.load_profile(PROFILE)


@pytest.fixture
def clean_env(monkeypatch):
    """No AGENTKIT_* configuration and no provider key in the environment: the state of a fresh shell."""
    from agentkit.providers import FORMATS, get_codec

    keys = {variable for fmt in FORMATS for variable in get_codec(fmt).API_KEY_ENVS}
    for name in ("AGENTKIT_PROVIDER", "AGENTKIT_BASE_URL", "AGENTKIT_MODEL", *sorted(keys)):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.fixture(scope="module")
def server():
    """A simulator of the module's own (an OS-chosen port, default models and faults), stopped after it.
    A module that needs other models or settings defines its own `server`, which wins over this one."""
    from agentkit import sim

    with sim.serve() as running:
        yield running


@pytest.fixture(scope="module")
def stand_in():
    """The stand-in for a learner's own model, on its own server (see learner_models.py): (server, respond)."""
    from learner_models import serve_stand_in

    server, respond = serve_stand_in()
    yield server, respond
    server.stop()


# -- `make test` on two cores: the longest files first, and which file is running --------------------------
# Under `-n 2 --dist loadfile` each file runs whole on one worker, in collection order. A long file that
# starts last keeps one core busy alone at the end, so the files listed in slowest_files.txt (measured
# seconds per file, longest first) are collected first; the rest keep their order. Refresh the list with
# `make test-durations` after a change makes a file much slower or faster.

SLOWEST_FILES = Path(__file__).with_name("slowest_files.txt")


def _file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _slowest_first() -> dict[str, int]:
    if not SLOWEST_FILES.is_file():
        return {}
    names = [line.split()[-1] for line in SLOWEST_FILES.read_text(encoding="utf-8").splitlines()
             if line.strip() and not line.startswith("#")]
    return {name: rank for rank, name in enumerate(names)}


def pytest_collection_modifyitems(config, items):
    rank = _slowest_first()
    if rank:
        items.sort(key=lambda item: rank.get(_file_of(item.nodeid), len(rank)))  # stable: the rest keep order


_started: set[str] = set()
_seconds: dict[str, float] = defaultdict(float)
_config: list = []


def pytest_configure(config):
    _config[:] = [config]


def pytest_runtest_logstart(nodeid, location):
    """AGENTKIT_FILE_PROGRESS=1 (make test): a line as each file starts, so a long tail names its files."""
    if not os.environ.get("AGENTKIT_FILE_PROGRESS") or _file_of(nodeid) in _started or not _config:
        return
    reporter = _config[0].pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        _started.add(_file_of(nodeid))
        reporter.write("\n" + f"[{len(_started)}] starts {_file_of(nodeid)}" + "\n", flush=True)


def pytest_runtest_logreport(report):
    if os.environ.get("AGENTKIT_TEST_DURATIONS"):
        _seconds[_file_of(report.nodeid)] += report.duration


def pytest_sessionfinish(session):
    """AGENTKIT_TEST_DURATIONS=FILE: write the seconds each file took, longest first (slowest_files.txt)."""
    out = os.environ.get("AGENTKIT_TEST_DURATIONS")
    if out and not hasattr(session.config, "workerinput") and _seconds:
        ranked = sorted(_seconds.items(), key=lambda kv: -kv[1])
        lines = [f"{seconds:8.1f} {name}" for name, seconds in ranked if seconds >= 2.0]
        Path(out).write_text("# seconds per file (setup + call + teardown), one worker; written by "
                             "`make test-durations`\n" + "\n".join(lines) + "\n", encoding="utf-8")
