"""The static site (`make docs`): every local link and image resolves, every tutorial has a page, and a page
needs nothing from the network to be read.

`make test` builds the site first (its `docs` prerequisite). A plain `pytest tests` on a checkout where the site
was never built skips these, saying how to build it; under CI a missing site is a failure.
"""

from __future__ import annotations

import html as html_lib
import json
import os
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "docs" / "_build" / "html"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))

if not (SITE / "index.html").exists():
    if os.environ.get("CI"):
        raise RuntimeError("docs/_build/html is missing: `make test` builds it (`make docs`) before the tests")
    pytest.skip("the site is not built: run `make docs`", allow_module_level=True)


class Page(HTMLParser):
    """The ids a page defines and the URLs it points at (href and src), with the tag that points."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.refs: list[tuple[str, str, str]] = []     # (tag, attribute, url)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        for name in ("href", "src"):
            if attrs.get(name):
                self.refs.append((tag, name, attrs[name]))


def parse(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


PAGES = {path: parse(path) for path in sorted(SITE.rglob("*.html"))}


def test_every_tutorial_has_a_page_that_links_its_notebook_file():
    for notebook in NOTEBOOKS:
        page = SITE / "tutorials" / f"{notebook.stem}.html"
        assert page in PAGES, f"no page for {notebook.name}"
        downloads = [url for _tag, _attr, url in PAGES[page].refs if url.endswith(notebook.name)]
        assert downloads, f"{page.name} does not link {notebook.name}"
        target = (page.parent / unquote(urlsplit(downloads[0]).path)).resolve()
        assert target.read_bytes() == notebook.read_bytes(), "the linked file is the stored notebook, unchanged"
        text = re.sub(r"<[^>]+>", "", page.read_text(encoding="utf-8"))
        assert "make lab" in text, "the page says how to open it locally"


def test_every_local_link_and_image_resolves():
    broken = []
    for path, page in PAGES.items():
        for tag, attr, url in page.refs:
            parts = urlsplit(url)
            if parts.scheme or url.startswith("//") or url.startswith("mailto:"):
                continue
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            if not target.exists():
                broken.append(f"{path.relative_to(SITE)}: <{tag} {attr}={url!r}> → missing file")
            elif parts.fragment and target.suffix == ".html":
                if parts.fragment not in PAGES[target].ids:
                    broken.append(f"{path.relative_to(SITE)}: {url!r} → no id {parts.fragment!r}")
    assert not broken, "\n".join(broken[:30])


def test_nothing_needed_to_read_a_page_comes_from_the_network():
    remote = []
    for path, page in PAGES.items():
        for tag, attr, url in page.refs:
            loads = tag in {"script", "img"} or (tag == "link" and attr == "href")
            if loads and urlsplit(url).scheme in {"http", "https"} or url.startswith("//"):
                remote.append(f"{path.relative_to(SITE)}: <{tag} {attr}={url}>")
    assert not remote, "\n".join(remote)


def test_each_saved_playground_is_on_its_page_with_the_script_that_draws_it():
    with_widgets = [nb for nb in NOTEBOOKS
                    if json.loads(nb.read_text(encoding="utf-8"))["metadata"].get("widgets")]
    assert with_widgets, "the tutorials have saved playgrounds (04–07 at least)"
    for notebook in with_widgets:
        html = (SITE / "tutorials" / f"{notebook.stem}.html").read_text(encoding="utf-8")
        assert "application/vnd.jupyter.widget-state+json" in html
        assert "application/vnd.jupyter.widget-view+json" in html
        assert re.search(r'<script src="\.\./_static/widgets/embed\.js', html)
        assert "needs a running kernel" in re.sub(r"<[^>]+>", "", html)
    assert (SITE / "_static" / "widgets" / "embed.js").stat().st_size > 100_000


def test_the_claims_page_links_each_notebook_it_names_to_that_tutorial():
    page = PAGES[SITE / "claims.html"]
    linked = {urlsplit(url).path for _tag, _attr, url in page.refs if url.startswith("tutorials/")}
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("| id | claim")
    table = readme[start:readme.index("\n\n", start)]        # the claims table only, not the tables after it
    named = {f"tutorials/{nb.stem}.html" for nb in NOTEBOOKS if re.search(rf"\| [^|]*\b{nb.name[:2]}\b", table)}
    assert named and named <= linked


def test_markdown_tables_that_cells_printed_are_tables_on_the_page():
    """A cell's Markdown output (lab.show, the benchmark report) is drawn as a table, not as a run of pipes."""
    for notebook in NOTEBOOKS:
        html = (SITE / "tutorials" / f"{notebook.stem}.html").read_text(encoding="utf-8")
        text = re.sub(r"<pre.*?</pre>", "", html, flags=re.S)     # code cells may show pipes on purpose
        assert not re.search(r"\|\s*(---|—)", re.sub(r"<[^>]+>", "", text)), f"{notebook.name}: a table left as text"


def test_the_simulator_page_says_when_each_formats_rules_were_checked_and_quotes_them_exactly():
    from agentkit.providers import FORMATS
    from agentkit.sim.fidelity import ledger, rules_as_of

    text = html_lib.unescape(re.sub(r"<[^>]+>", "", (SITE / "simulator.html").read_text(encoding="utf-8")))
    for fmt in FORMATS:
        assert f"{fmt}: rules as of {rules_as_of(fmt)}" in text, fmt
    # The providers' words as the ledger has them: no curly quotes or dashes put in by the site's typography.
    for entry in ledger().values():
        shown = entry.wording + (" (wording ours)" if entry.wording_is == "ours" else "")
        assert shown in text, entry.id


GLOSSARY_LINK = re.compile(r"\]\(\.\./docs/glossary\.md#([a-z0-9-]+)\)")


def test_the_glossary_page_defines_the_loops_units_and_every_stop_reason():
    from agentkit import StopReason

    page = PAGES[SITE / "glossary.html"]
    for term in ("step", "round", "tool-cycle", "turn", "run", "thread", "stop-reason"):
        assert term in page.ids, f"the glossary has no entry {term!r}"
    html = (SITE / "glossary.html").read_text(encoding="utf-8")
    listed = re.findall(r'<td><p><code class="[^"]*"><span class="pre">([a-z_]+)</span>', html)  # a row's first cell
    assert sorted(listed) == sorted(reason.value for reason in StopReason), "the stop reasons' table is not all twelve"
    index = PAGES[SITE / "index.html"]
    assert any(urlsplit(url).path == "glossary.html" for _tag, _attr, url in index.refs), "not in the menu"


def test_every_tutorial_links_the_glossary_and_its_page_links_the_sites_glossary():
    """Each notebook links docs/glossary.md where it first uses a word (a link that works in JupyterLab and on
    GitHub); on its page on the site the same links lead to glossary.html, to an entry that exists."""
    glossary_ids = PAGES[SITE / "glossary.html"].ids
    for notebook in NOTEBOOKS:
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        markdown = ["".join(c["source"]) for c in cells if c["cell_type"] == "markdown"]
        anchors = [anchor for text in markdown for anchor in GLOSSARY_LINK.findall(text)]
        assert anchors, f"{notebook.name} never links the glossary"
        missing = sorted(set(anchors) - glossary_ids)
        assert not missing, f"{notebook.name} links glossary entries that do not exist: {missing}"
        page = SITE / "tutorials" / f"{notebook.stem}.html"
        entries = [urlsplit(url) for _tag, _attr, url in PAGES[page].refs]
        on_page = [url.fragment for url in entries if url.path == "../glossary.html" and url.fragment]
        assert on_page == anchors, f"{page.name}: its glossary links do not all reach the site's page"
