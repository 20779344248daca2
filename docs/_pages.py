"""The site's generated pages: sections of the README and copies of the stored, executed notebooks.

Sphinx reads sources only under docs/, and the README and notebooks/ are the single source of what the site
says, so `conf.py` calls `write_pages()` before each build. It writes (all git-ignored):

- `index.md`, `setup.md`, `claims.md`, `simulator.md`, `benchmark.md`, `package.md`: sections of the README,
  their headings re-levelled so that each page has one title, notebook names turned into links;
  `simulator.md` also shows the fidelity ledger: each format's rules as of the date they were checked, and
  every entry with its wording (the simulator's own words marked "(wording ours)"), source and date;
- `tutorials/NN_name.ipynb`: each notebook as stored (never executed here), plus a note under its title saying
  how to open it locally, a note before each saved playground, and a label before each section that the claims
  table links to;
- `api.md`: one autodoc entry per public name in `agentkit.__all__`.

`glossary.md` is not generated: it is the one place each word of the tutorials is defined, written by hand.
The notebooks and the README link it where it sits in the repository (`../docs/glossary.md#step`, so the
link works in JupyterLab and on GitHub); the copies here point those links at the site's page.

Nothing here runs a notebook, reaches the network or needs a key.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")
NOTEBOOK_NAME = re.compile(r"`?(\d\d)_([A-Za-z0-9_]+)\.ipynb`?")
# A link to the glossary as the README (docs/glossary.md) or a notebook (../docs/glossary.md) writes it.
GLOSSARY_LINK = re.compile(r"\]\((?:\.\./)?docs/glossary\.md")

# Each generated page: its file, its title, and the README sections it is made of, in order.
PAGES = [
    ("setup.md", "Setting up and running", ["Running JupyterLab", "Using the kit in your own project",
                                              "Using a real provider", "Tests and benchmarks"]),
    ("simulator.md", "The simulator: models and faults", ["The simulator outside the notebooks"]),
    ("conformance.md", "Does your loop survive the real APIs?",
     ["Does your loop survive the real APIs? The conformance check"]),
    ("benchmark.md", "Benchmark a model", ["Benchmark a model"]),
    ("package.md", "The package, in learning order", ["The package, in learning order"]),
]


def readme_sections(readme: str) -> tuple[str, list[tuple[str, str]]]:
    """The README's text before its first sub-heading, and each (heading, body) after it, in order."""
    intro: list[str] = []
    sections: list[tuple[str, list[str]]] = []
    in_code = False
    for line in readme.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        match = None if in_code else HEADING.match(line)
        if match and len(match.group(1)) == 1:
            continue                        # the README's own title; each page has its own
        if match:
            sections.append((match.group(2), []))
        elif sections:
            sections[-1][1].append(line)
        else:
            intro.append(line)
    return "\n".join(intro).strip(), [(title, "\n".join(body).strip()) for title, body in sections]


def section(sections: list[tuple[str, str]], title: str) -> str:
    for name, body in sections:
        if name == title:
            return body
    raise SystemExit(f"docs: the README has no section titled {title!r}; update docs/_pages.py")


def link_notebooks(text: str, notebooks: dict[str, Path], prefix: str = "tutorials/") -> str:
    """`NN_name.ipynb` in README text becomes a link to that tutorial's page."""
    def link(match: re.Match) -> str:
        name = f"{match.group(1)}_{match.group(2)}.ipynb"
        if name not in {p.name for p in notebooks.values()}:
            return match.group(0)
        return f"[`{name}`]({prefix}{name})"
    return NOTEBOOK_NAME.sub(link, text)


def link_glossary(text: str, prefix: str) -> str:
    """A link to docs/glossary.md, as written in the repository, pointed at the site's glossary page."""
    return GLOSSARY_LINK.sub(f"]({prefix}glossary.md", text)


def notebook_numbers_outside_brackets(text: str) -> list[tuple[int, int, str]]:
    """(start, end, number) of each two-digit notebook number in a "shown in" cell, outside parentheses.

    "06 (`max_steps=13`: 13 model calls, 12 tool runs); 01" names notebooks 06 and 01, not 13 or 12."""
    found, depth = [], 0
    for match in re.finditer(r"[()]|\b\d\d\b", text):
        token = match.group(0)
        if token == "(":
            depth += 1
        elif token == ")":
            depth = max(0, depth - 1)
        elif depth == 0:
            found.append((match.start(), match.end(), token))
    return found


def claim_targets(notebooks: dict[str, Path]) -> dict[tuple[str, str], tuple[int, str]]:
    """(notebook number, claim id) → (cell index, label) of the first markdown cell that names the claim,
    preferring a heading that names it."""
    targets: dict[tuple[str, str], tuple[int, str]] = {}
    for number, path in notebooks.items():
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        for prefer_heading in (True, False):
            for index, cell in enumerate(cells):
                if cell["cell_type"] != "markdown":
                    continue
                text = "".join(cell["source"])
                lines = [ln for ln in text.splitlines() if HEADING.match(ln)] if prefer_heading else [text]
                for claim in sorted(set(re.findall(r"\bC(\d{1,2})\b", "\n".join(lines))), key=int):
                    key = (number, f"C{claim}")
                    targets.setdefault(key, (index, f"nb{number}-c{claim}"))
    return targets


def claims_page(intro: str, table: str, notebooks: dict[str, Path],
                targets: dict[tuple[str, str], tuple[int, str]]) -> str:
    """The README's claims table, each notebook named in "shown in" linked to the section that shows it."""
    rows = []
    for line in table.splitlines():
        cells = line.split("|")
        claim = cells[1].strip() if len(cells) > 3 else ""
        if not re.fullmatch(r"C\d{1,2}", claim):
            rows.append(line)
            continue
        shown = cells[3]
        pieces, last = [], 0
        for start, end, number in notebook_numbers_outside_brackets(shown):
            if number not in notebooks:
                continue
            page = f"tutorials/{notebooks[number].name}"
            target = targets.get((number, claim))
            link = (f"{{ref}}`{number} <{target[1]}>`" if target else f"[{number}]({page})")
            pieces += [shown[last:start], link]
            last = end
        cells[3] = "".join(pieces) + shown[last:]
        rows.append("|".join(cells))
    return ("# The seed claims, and where each is shown\n\n" + intro + "\n\n"
            "Each notebook number links to the section of that tutorial that shows the claim (or to the "
            "tutorial, where the claim runs through it).\n\n" + "\n".join(rows) + "\n")


def tutorial_copy(path: Path, docs: Path, labels: dict[int, list[str]]) -> dict:
    """The stored notebook with the site's notes added; its code cells and outputs are untouched."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    source_link = f"../../notebooks/{path.name}"
    opening = {
        "cell_type": "markdown", "metadata": {}, "id": "site-opening-note",
        "source": (
            ":::{note}\n"
            f"This page is `notebooks/{path.name}` as stored in the repository, with the outputs it printed "
            "when it last ran against the offline simulator; nothing was run to build this page. "
            f"{{download}}`Download the notebook <{source_link}>`, or open it locally: in a checkout of "
            "agentkit, `make lab` starts JupyterLab on the tutorials (the simulator is the default model, "
            f"no key needed); then open `{path.name}` and run its cells from the top.\n"
            ":::\n"),
    }
    playground = {
        "cell_type": "markdown", "metadata": {},
        "source": (
            ":::{tip}\n"
            "The playground below is drawn from its saved state: it shows the controls and the chart as they "
            "were when the notebook was stored. Moving a control needs a running kernel: open this notebook "
            "with `make lab` and run its cells.\n"
            ":::\n"),
    }
    cells = []
    for index, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] == "markdown":
            source = link_glossary("".join(cell["source"]), prefix="../")
            cell = dict(cell, source="".join(f"({label})=\n" for label in labels.get(index, [])) + source)
        has_widget = any(WIDGET_VIEW in output.get("data", {}) for output in cell.get("outputs", []))
        if has_widget:
            cells.append(dict(playground, id=f"site-playground-note-{index}"))
        cells.append(cell)
        if index == 0:
            cells.append(dict(opening))
    notebook["cells"] = cells
    return notebook


def ledger_section() -> str:
    """The fidelity ledger for the simulator's page: when each format's rules were checked, then its entries."""
    from agentkit.providers import FORMATS
    from agentkit.sim.fidelity import currency, ledger_table

    lines = ["## The fidelity ledger", "",
             "Every rule the simulator enforces on a provider's behalf, read from `agentkit/sim/fidelity.toml`. "
             "*Rules as of* is the date the newest rule of the format was checked against its source; words the "
             "simulator chose itself, where the provider's are neither documented nor reported, are marked "
             "\"(wording ours)\" and are never the API's words.", "",
             "| format | rules as of | rules | in the simulator's own words |", "|---|---|---|---|"]
    rows = currency(FORMATS)
    lines += [f"| {fmt} | {date or 'never checked'} | {count} | {ours} |" for fmt, date, count, ours in rows]
    for fmt, date, count, _ours in rows:
        if count:
            lines += ["", f"### {fmt}: rules as of {date}", "", ledger_table(fmt)]
    return "\n".join(lines) + "\n"


def api_page() -> str:
    import agentkit

    lines = ["# API reference", "",
             "The public names of `agentkit` (its `__all__`), from their docstrings, the simulator's "
             "`agentkit.sim.serve` and the conformance check's `agentkit.conformance.check`. The tutorials show "
             "each in use.", "", "```{eval-rst}"]
    for name in agentkit.__all__:
        obj = getattr(agentkit, name)
        kind = "autoclass" if isinstance(obj, type) else "autofunction"
        lines += [f".. {kind}:: agentkit.{name}", "   :no-index-entry:", ""]
    lines += [".. autofunction:: agentkit.sim.serve", "   :no-index-entry:", "",
              ".. autofunction:: agentkit.conformance.check", "   :no-index-entry:", "", "```", ""]
    return "\n".join(lines)


def write_pages(docs: Path, root: Path) -> None:
    readme = link_glossary((root / "README.md").read_text(encoding="utf-8"), prefix="")
    intro, sections = readme_sections(readme)
    notebooks = {p.name[:2]: p for p in sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb"))}

    inside = section(sections, "What is inside")
    tutorials_table = link_notebooks(section(sections, "Tutorials"), notebooks)
    index = "\n\n".join([
        "# agentkit", intro, inside, "## Tutorials", tutorials_table,
        "## Reading this site",
        "Every page here was built from the repository's stored files: the tutorials are the executed notebooks "
        "with their outputs, not run again. The pages in the menu follow the order of learning: setting up, "
        "the tutorials, the glossary of the words they use, the claims they test, the simulator, the conformance "
        "check, the benchmark, the package and its API.",
        "```{toctree}\n:maxdepth: 1\n:caption: Start\n\nsetup\n```",
        "```{toctree}\n:maxdepth: 1\n:caption: Tutorials\n\n"
        + "\n".join(f"tutorials/{p.stem}" for p in notebooks.values()) + "\n```",
        "```{toctree}\n:maxdepth: 1\n:caption: Reference\n\n"
        "glossary\nclaims\nsimulator\nconformance\nbenchmark\npackage\napi\n```",
    ]) + "\n"
    _write(docs / "index.md", index)

    for filename, title, titles in PAGES:
        parts = [f"# {title}"]
        for name in titles:
            parts += [f"## {name}" if len(titles) > 1 else "", link_notebooks(section(sections, name), notebooks,
                                                                               prefix="tutorials/")]
        if filename == "simulator.md":
            parts.append(ledger_section())
        _write(docs / filename, "\n\n".join(p for p in parts if p) + "\n")

    targets = claim_targets(notebooks)
    claims_section = section(sections, "Seed claims")
    table_start = claims_section.index("| id |")
    _write(docs / "claims.md", claims_page(claims_section[:table_start].strip(), claims_section[table_start:],
                                           notebooks, targets))

    labels: dict[str, dict[int, list[str]]] = {}
    for (number, _claim), (index, label) in targets.items():
        labels.setdefault(number, {}).setdefault(index, []).append(label)
    out = docs / "tutorials"
    out.mkdir(exist_ok=True)
    for stale in out.glob("*.ipynb"):
        if stale.name not in {p.name for p in notebooks.values()}:
            stale.unlink()
    for number, path in notebooks.items():
        _write(out / path.name, json.dumps(tutorial_copy(path, docs, labels.get(number, {})), ensure_ascii=False))

    _write(docs / "api.md", api_page())


def _write(path: Path, text: str) -> None:
    """Write only when the text changed, so Sphinx rebuilds only the pages whose source changed."""
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
