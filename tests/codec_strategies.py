"""Hypothesis strategies shared by the codec tests: the building blocks of conversations, random JSON,
and valid bodies mutated in place.

A mutated body is a valid request with one to three of its values replaced or removed: most of it still
looks right, so the decoder's checks deep inside the body get exercised, not only the first one.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence

from hypothesis import strategies as st

from agentkit.core.types import ToolSpec

# -- building blocks of valid conversations ------------------------------------------------------------

names = st.from_regex(r"[a-z_][a-z0-9_]{0,11}", fullmatch=True)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
arguments = st.dictionaries(st.text(min_size=1, max_size=6), json_values, max_size=3)
texts = st.text(min_size=1, max_size=40).filter(str.strip)
tool_specs = st.builds(
    ToolSpec,
    names,
    st.text(max_size=20),
    st.builds(
        lambda props: {"type": "object", "properties": props},
        st.dictionaries(names, st.just({"type": "string"}), max_size=2),
    ),
    st.booleans(),
)


# -- malformed input -----------------------------------------------------------------------------------


def any_json(keys: Sequence[str]) -> st.SearchStrategy:
    """Random JSON whose strings and object keys often are the format's own words (`keys`)."""
    return st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=6)
        | st.sampled_from(list(keys)),
        lambda inner: (st.lists(inner, max_size=4)
                       | st.dictionaries(st.sampled_from(list(keys)) | st.text(max_size=4), inner, max_size=5)),
        max_leaves=25,
    )


def paths(value: object, prefix: tuple = ()) -> Iterator[tuple]:
    """Every path into a JSON value, the root's empty path first."""
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from paths(v, (*prefix, i))


def mutated_bodies(valid: dict, replacements: st.SearchStrategy) -> st.SearchStrategy:
    """Copies of `valid` with one to three values replaced by `replacements` or removed."""
    valid_paths = [p for p in paths(valid) if p]

    @st.composite
    def mutate(draw) -> dict:
        body = copy.deepcopy(valid)
        for _ in range(draw(st.integers(1, 3))):
            path = draw(st.sampled_from(valid_paths))
            target = body
            try:
                for key in path[:-1]:
                    target = target[key]
                if draw(st.booleans()) and isinstance(target, dict):
                    target.pop(path[-1], None)
                else:
                    target[path[-1]] = draw(replacements)
            except (KeyError, IndexError, TypeError):
                pass  # an earlier mutation changed the shape under this path
        return body

    return mutate()
