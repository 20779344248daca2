"""The README's "use it in your own code" block runs as written, and each set of files it says to copy
makes a working `agentkit` package on its own in an empty folder."""

from __future__ import annotations

import os
import re
import shutil
import site
import subprocess
import sys
import textwrap
from pathlib import Path

import imports_graph
import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
KEY_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENROUTER_API_KEY",
                 "OLLAMA_API_KEY", "AGENTKIT_PROVIDER", "AGENTKIT_BASE_URL", "AGENTKIT_MODEL")


def readme_block(heading: str, language: str) -> str:
    """The first ```language block after `heading` in the README."""
    start = README.index(heading)
    return re.search(rf"```{language}\n(.*?)```", README[start:], re.S).group(1)


def own_code_snippet() -> str:
    return readme_block("#### Use it in your own code", "python")


def copy_sets() -> dict[str, list[str]]:
    """{"loop": ["core/", "models.py"], "http": [...]} from the README's list of what to copy."""
    sets: dict[str, list[str]] = {}
    for line in readme_block("#### Copying a part of the kit", "text").splitlines():
        name, _, entries = line.partition(":")
        sets[name.strip()] = entries.split()
    return sets


def copy_set(name: str, into: Path) -> Path:
    """The set copied into `into`/agentkit, with an empty __init__.py, as the README says to."""
    package = into / "agentkit"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    for entry in copy_sets()[name]:
        source = ROOT / "agentkit" / entry.rstrip("/")
        if source.is_dir():
            shutil.copytree(source, package / source.name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, package / source.name)
    return package


def without_the_kit(code: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    """Run `code` with this venv's interpreter and dependencies but not its agentkit: `-S` leaves out the
    site machinery, and with it the editable install's finder, which would supply any file a copy lacks
    from the checkout; the dependencies come from site-packages on PYTHONPATH, after `cwd`."""
    site_packages = os.pathsep.join(site.getsitepackages())
    return subprocess.run([sys.executable, "-S", "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env=env_without_provider(PYTHONPATH=os.pathsep.join([str(cwd), site_packages]), **env))


def env_without_provider(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in KEY_VARIABLES and k != "PYTHONPATH"}
    return {**env, **extra}


def test_the_own_code_snippet_runs_as_written_against_the_simulator(server, tmp_path):
    script = tmp_path / "my_agent.py"
    script.write_text(own_code_snippet(), encoding="utf-8")
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                            timeout=120, env=env_without_provider(AGENTKIT_BASE_URL=server.base_url("openai-chat")))
    assert result.returncode == 0, result.stderr
    answer, _, rest = result.stdout.partition("\nfinal_answer\n")  # output, stop reason, trace table, ...
    assert "Tokyo: sunny" in answer  # the final answer quotes the tool's result
    trace, _, streamed = rest.partition("[running get_weather]")  # the stream: the tool runs, then the text
    assert "get_weather" in trace  # the trace shows the tool call
    streamed_answer, _, scripted = streamed.partition("\nfinal_answer\n")
    assert "Paris: sunny" in streamed_answer  # the streamed answer, written piece by piece, quotes the result
    assert scripted.strip() == "Osaka: sunny, 22°C"  # the scripted call reached the tool with its arguments


def test_the_readme_names_two_sets_and_every_entry_exists():
    sets = copy_sets()
    assert set(sets) == {"loop", "http"}
    for entries in sets.values():
        assert all((ROOT / "agentkit" / entry.rstrip("/")).exists() for entry in entries), entries
        assert all(entry.endswith(("/", ".py")) for entry in entries), entries


@pytest.mark.parametrize("name", ["loop", "http"])
def test_each_copy_set_is_closed_under_its_own_imports(tmp_path, name):
    """Every import of every file in the set, module level or inside a function, finds its module in the set."""
    package = copy_set(name, tmp_path)
    known = imports_graph.modules(package)
    missing = {f"{imports_graph.module_name(path, package)} imports {target}"
               for path in known.values()
               for target in imports_graph.imports_of(path, package, known) if target not in known}
    assert not missing, sorted(missing)


def test_the_closure_check_finds_a_file_left_out(tmp_path):
    """The check above fails when a set lacks a file its modules import (here: the loop without budgets)."""
    package = copy_set("loop", tmp_path)
    (package / "core" / "budgets.py").unlink()
    known = imports_graph.modules(package)
    missing = {target for path in known.values() for target in imports_graph.imports_of(path, package, known)
               if target not in known}
    assert "core.budgets" in missing


def test_without_the_kit_cannot_import_the_installed_agentkit(tmp_path):
    """The copies below run where the kit itself is not importable, or a missing file would go unnoticed."""
    result = without_the_kit("import agentkit", tmp_path)
    assert "ModuleNotFoundError: No module named 'agentkit'" in result.stderr, result.stderr
    deps = without_the_kit("import httpx, jsonschema, pydantic, starlette, uvicorn; print('ok')", tmp_path)
    assert deps.stdout.strip() == "ok", deps.stderr


USE_THE_LOOP = textwrap.dedent("""\
    import agentkit
    from agentkit.core.drive import run
    from agentkit.models import ScriptedModel, call
    from agentkit.core.policies import Limits
    from agentkit.core.tools import tool

    @tool
    def add(a: int, b: int) -> int:
        "Add two numbers."
        return a + b

    model = ScriptedModel([[call("add", {"a": 2, "b": 3})], "5"])
    result = run(model, "2 + 3?", tools=[add], limits=Limits(max_steps=3))
    print(agentkit.__file__)
    print(result.stop_reason, result.results[0].result)
    """)

USE_HTTP = textwrap.dedent("""\
    import os
    from agentkit.http import HTTPModel
    from agentkit.core.drive import run

    model = HTTPModel("sim-reasoner", "anthropic", base_url=os.environ["SIM_URL"])
    print(run(model, "What is 2 + 3?").stop_reason)
    """)


@pytest.mark.parametrize("name", ["loop", "http"])
def test_each_copy_set_works_on_its_own_in_an_empty_folder(server, tmp_path, name):
    package = copy_set(name, tmp_path)
    code = USE_THE_LOOP + (USE_HTTP if name == "http" else "")
    result = without_the_kit(code, tmp_path, SIM_URL=server.base_url("anthropic"))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert Path(lines[0]).resolve() == (package / "__init__.py").resolve()  # the copy, not the installed kit
    assert lines[1] == "final_answer 5"
    if name == "http":
        assert lines[2] == "final_answer"


def test_a_copy_missing_a_file_fails_to_run(tmp_path):
    """The run above is a real test: without a file of the set, the same code fails."""
    package = copy_set("loop", tmp_path)
    (package / "core" / "budgets.py").unlink()
    result = without_the_kit(USE_THE_LOOP, tmp_path)
    assert "No module named 'agentkit.core.budgets'" in result.stderr, result.stderr
