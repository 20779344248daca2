"""A module that fails while it is imported (a CLI test serves it)."""

raise RuntimeError("broken on purpose")
