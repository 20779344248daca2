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
    table = readme[readme.index("| id | claim"):]
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
