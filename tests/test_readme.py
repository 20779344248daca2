"""The README's promises that code can check: the first screen, every fault, every model preset, every tutorial.

The README is where a learner starts, so when the simulator gains a fault or a preset, or a tutorial is
added, this test fails until the README says so too.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from agentkit.sim.behaviours import PRESETS, QUIRK_MODELS
from agentkit.sim.faults import FAULTS

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def section(title: str) -> str:
    start = README.index(title)
    following = README.find("\n#", start + len(title))
    return README[start:following if following != -1 else None]


def test_the_first_screen_is_the_two_commands():
    first_block = re.search(r"```sh\n(.*?)```", README, re.S).group(1)
    commands = [line.split("#")[0].strip() for line in first_block.splitlines() if line.strip()]
    assert commands == ["make lab", "make test"]
    assert README.index(first_block) < 600  # on the first screen, before anything else


def test_every_fault_of_the_simulator_has_a_row():
    rows = section("### The simulator outside the notebooks")
    missing = [name for name in FAULTS if not re.search(rf"^\|[^|\n]*`{re.escape(name)}[`\[]", rows, re.M)]
    assert missing == []


def test_every_model_preset_and_quirk_model_is_named():
    names = section("### The simulator outside the notebooks")
    prefixes = [p.prefix + ("N" if p.prefix == "sim-parallel-" else "SEED" if p.prefix == "sim-noisy-" else "")
                for p in PRESETS]
    missing = [name for name in [*prefixes, *QUIRK_MODELS] if f"`{name}`" not in names]
    assert missing == []


def test_every_tutorial_is_in_the_tutorials_table():
    table = section("### Tutorials")
    missing = [nb.name for nb in sorted((ROOT / "notebooks").glob("*.ipynb")) if f"`{nb.name}`" not in table]
    assert missing == []


def test_every_tutorial_runs_on_a_stand_in_for_your_own_model():
    """The README says every tutorial also runs on your own model; a test file must run each one."""
    switch_tests = "".join(p.read_text(encoding="utf-8")
                           for p in (ROOT / "tests").glob("test_tutorial_*_on_another_model.py"))
    missing = [p.name for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")) if p.name not in switch_tests]
    assert not missing, f"no test_tutorial_*_on_another_model.py runs {missing} on a stand-in"


def test_every_claim_row_points_at_notebooks_that_show_it_and_files_that_exist():
    """The claims table is a promise: a notebook it names must name the claim, a file it names must exist."""
    notebooks = {p.name[:2]: p for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")}
    broken = []
    for claim, where in re.findall(r"^\| (C\d+) \|[^|]*\| (.*) \|$", section("### Seed claims"), re.M):
        in_notebooks = re.sub(r"\([^)]*\)", "", re.sub(r"`[^`]*`", "", where))  # numbers outside notes and paths
        for number in re.findall(r"\b\d\d\b", in_notebooks):
            cells = json.loads(notebooks[number].read_text(encoding="utf-8"))["cells"]
            if not re.search(rf"\b{claim}\b", "".join("".join(cell["source"]) for cell in cells)):
                broken.append(f"{claim}: notebook {number} never names it")
        paths = re.findall(r"`((?:tests|benchmarks|agentkit)/[^`]*)`", where)
        broken += [f"{claim}: {path} does not exist" for path in paths if not (ROOT / path).exists()]
    assert not broken
