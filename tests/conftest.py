"""Shared test setup: the Hypothesis profile (see profiles.py) is chosen before any test module loads."""

import os
import time
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
_began: list[float] = []


def pytest_configure(config):
    _config[:] = [config]


def _say(line: str) -> None:
    """AGENTKIT_FILE_PROGRESS=1 (make test): one line on the terminal, at once (also through a pipe)."""
    if not os.environ.get("AGENTKIT_FILE_PROGRESS") or not _config or hasattr(_config[0], "workerinput"):
        return
    reporter = _config[0].pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write("\n" + line + "\n", flush=True)


def _since_start() -> str:
    return f"{time.monotonic() - _began[0]:.0f} s" if _began else "?"


def _what_is_collected(config) -> str:
    """"97 test files and 12 notebooks": what the command line names, counted as pytest will collect it."""
    files = notebooks = 0
    for arg in config.args:
        path = Path(arg.split("::", 1)[0])
        if path.is_dir():
            files += sum(1 for _ in path.rglob("test_*.py"))
            notebooks += sum(1 for _ in path.rglob("*.ipynb")) if config.getoption("nbval", False) else 0
        elif path.suffix == ".ipynb":
            notebooks += 1
        elif path.suffix == ".py":
            files += 1
    return f"{files} test files" + (f" and {notebooks} notebooks" if notebooks else "")


def pytest_sessionstart(session):
    """Before the first file starts there is start-up and collection (imports of every test module, the
    notebooks read by nbval): say so, and on how many workers."""
    _began[:] = [time.monotonic()]
    workers = getattr(session.config.option, "numprocesses", None)
    what = _what_is_collected(session.config)
    if workers:
        _say(f"starting {workers} workers; each imports and collects {what} before its first file runs")
    else:
        _say(f"collecting {what}")


@pytest.hookimpl(optionalhook=True)
def pytest_testnodeready(node):
    _say(f"worker {node.gateway.id} is up after {_since_start()}: collecting")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids):
    _say(f"worker {node.gateway.id} collected {len(ids)} tests after {_since_start()}"
         + ("; the files now run, the longest first (tests/slowest_files.txt)" if _collected(node) else ""))


_collections: set[str] = set()


def _collected(node) -> bool:
    """True once every worker has collected (the files start then)."""
    _collections.add(node.gateway.id)
    workers = getattr(_config[0].option, "numprocesses", None) or 0
    return len(_collections) >= workers


def pytest_collection_finish(session):
    if not hasattr(session.config, "workerinput") and not getattr(session.config.option, "numprocesses", None):
        _say(f"collected {len(session.items)} tests after {_since_start()}")


def pytest_runtest_logstart(nodeid, location):
    """AGENTKIT_FILE_PROGRESS=1 (make test): a line as each file starts, so a long tail names its files."""
    if _file_of(nodeid) in _started:
        return
    _started.add(_file_of(nodeid))
    _say(f"[{len(_started)}] starts {_file_of(nodeid)}")


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
