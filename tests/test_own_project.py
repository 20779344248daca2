"""The README's "use it in your own code" block runs as written, and each set of files it says to copy
makes a working `agentkit` package on its own in an empty folder."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

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
    """{"loop": [files...], "http": [...]} from the README's list of what to copy."""
    sets: dict[str, list[str]] = {}
    for line in readme_block("#### Copying a part of the kit", "text").splitlines():
        name, _, files = line.partition(":")
        names = files.split()
        if names[:3] == ["the", "loop", "set"]:
            names = sets["loop"] + names[4:]  # "the loop set + ..."
        sets[name.strip()] = names
    return sets


def env_without_provider(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in KEY_VARIABLES and k != "PYTHONPATH"}
    return {**env, **extra}


def test_the_own_code_snippet_runs_as_written_against_the_simulator(server, tmp_path):
    script = tmp_path / "my_agent.py"
    script.write_text(own_code_snippet(), encoding="utf-8")
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                            timeout=120, env=env_without_provider(AGENTKIT_BASE_URL=server.base_url("openai-chat")))
    assert result.returncode == 0, result.stderr
    answer, _, trace = result.stdout.partition("\nfinal_answer\n")  # output, stop reason, trace table
    assert "Tokyo: sunny" in answer  # the final answer quotes the tool's result
    assert "get_weather" in trace  # the trace shows the tool call


def test_the_readme_names_two_sets_and_every_file_exists():
    sets = copy_sets()
    assert set(sets) == {"loop", "http"}
    for files in sets.values():
        assert all((ROOT / "agentkit" / name).exists() for name in files), files


USE_THE_LOOP = textwrap.dedent("""\
    import agentkit
    from agentkit.loop import run
    from agentkit.models import ScriptedModel, call
    from agentkit.policies import Limits
    from agentkit.tools import tool

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
    from agentkit.loop import run

    model = HTTPModel("sim-reasoner", "anthropic", base_url=os.environ["SIM_URL"])
    print(run(model, "What is 2 + 3?").stop_reason)
    """)


@pytest.mark.parametrize("name", ["loop", "http"])
def test_each_copy_set_works_on_its_own_in_an_empty_folder(server, tmp_path, name):
    package = tmp_path / "agentkit"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    for file in copy_sets()[name]:
        source = ROOT / "agentkit" / file
        if source.is_dir():
            shutil.copytree(source, package / file, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, package / file)
    code = USE_THE_LOOP + (USE_HTTP if name == "http" else "")
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                            env=env_without_provider(SIM_URL=server.base_url("anthropic")))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert Path(lines[0]).resolve() == (package / "__init__.py").resolve()  # the copy, not the installed kit
    assert lines[1] == "final_answer 5"
    if name == "http":
        assert lines[2] == "final_answer"
