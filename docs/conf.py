"""Sphinx configuration for agentkit's static site: `make docs` builds it into docs/_build/html.

The site is made from the stored, executed notebooks and the README (see `_pages.py`): nothing is executed,
nothing is fetched, no key is needed. Warnings are errors (`make docs` passes -W).
"""

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS))

from _pages import write_pages  # noqa: E402

write_pages(DOCS, DOCS.parent)

project = "agentkit"
author = "the agentkit authors"
copyright = "agentkit authors, MIT licence"
extensions = ["myst_nb", "sphinx.ext.autodoc", "sphinx.ext.napoleon"]
exclude_patterns = ["_build", "_static", "Thumbs.db", ".DS_Store"]

# The notebooks are shown as stored: never executed while building.
nb_execution_mode = "off"
nb_merge_streams = True
# Cells print Markdown tables (lab.show, the benchmark report): render them as MyST, which has tables
# (myst-nb's default for Markdown outputs is plain CommonMark, which has none).
nb_render_markdown_format = "myst"
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3
# The pages quote the APIs' own words (the fidelity ledger, the tutorials' error messages): curly quotes and
# dashes would change them.
smartquotes = False

# The playgrounds are drawn from each notebook's saved widget state by the ipywidgets HTML manager, shipped in
# _static/widgets/ (not a CDN), so the site works offline from its folder.
nb_ipywidgets_js = {"widgets/embed.js": {}}

html_theme = "furo"
html_title = "agentkit"
html_static_path = ["_static"]
html_show_sourcelink = False

autodoc_member_order = "bysource"
autodoc_typehints = "description"
napoleon_google_docstring = True
napoleon_numpy_docstring = False

# The tutorials' headings follow JupyterLab's outline, where a "###" directly under the title is fine.
suppress_warnings = ["myst.header"]


def plain_text_blocks(app, what, name, obj, options, lines):
    """agentkit's docstrings are written to be read as plain text (`help()`), with indented examples that are
    not reStructuredText literal blocks: mark each such block literal, so it renders as the reader sees it."""
    out: list[str] = []
    indent_of = lambda line: len(line) - len(line.lstrip())  # noqa: E731
    block_indent = None
    for line in lines:
        if block_indent is not None and line.strip() and indent_of(line) < block_indent:
            if out and out[-1].strip():
                out.append("")
            block_indent = None
        previous = next((p for p in reversed(out) if p.strip()), None)
        if block_indent is None and line.strip() and previous is not None:
            deeper = indent_of(line) > indent_of(previous)
            if deeper and previous.rstrip().endswith("::"):
                block_indent = indent_of(line)          # already a literal block
            elif deeper and not previous.lstrip().startswith((":", "..", "*", "-", "|")):
                out += ([] if not out[-1].strip() else [""]) + ["::", ""]
                block_indent = indent_of(line)
        out.append(line)
    lines[:] = out


def setup(app):
    app.connect("autodoc-process-docstring", plain_text_blocks, priority=600)
